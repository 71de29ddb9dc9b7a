//! Verifying a run's records: the evaluator's trajectory (hash chain, well-formed trusted
//! events, a final result that agrees with the per-rollout events, the evaluator's signature
//! on its head), the harness's own log (its chain, that it names the trajectory's head, the
//! harness's signature) and the report (that it says what the signed records say).
//!
//! The chain rule is public, so a chain proves only that a record is whole. That it is the
//! evaluator's and the harness's record, unedited, rests on the signatures, checked with
//! public keys that the verifier must hold: [`RecordKeys`].
//!
//! In layers, each using only those before it:
//! - `records.rs`: each signed record on its own: the trajectory ([`verify_trajectory`]), the
//!   harness log ([`verify_harness_log`]), their signatures ([`RecordKeys`]);
//! - `conclude.rs`: the report a scored run's verified records add up to
//!   ([`Report::from_records`]), which the harness writes;
//! - `run_dir.rs`: a run folder as a whole ([`verify_run_dir`]): its records, that they are one
//!   run's, and that its report is the one they conclude.
//!
//! Below them all lies the data they check: [`crate::harness_log`], [`crate::report`],
//! [`crate::scoring`].
//!
//! [`Report::from_records`]: crate::report::Report::from_records

mod conclude;
mod records;
mod run_dir;

pub use conclude::RecordsIncomplete;
pub use records::{
    RecordKeys, SignatureCheckError, VerifiedHarnessLog, VerifiedTrajectory, VerifyError,
    verify_harness_log, verify_trajectory,
};
pub use run_dir::{
    RunVerdict, RunVerification, RunVerifyError, check_interrupted, verify_run_dir,
    verify_trajectory_file,
};
