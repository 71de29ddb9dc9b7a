//! A run folder as a whole: its trajectory and harness log, each verified and signed, that
//! they are one run's, its `interrupted.json`, and that its report is the one its signed
//! records conclude.

use std::path::{Path, PathBuf};

use ale_records::event_data::InterruptedRun;
use ale_records::layout::{INTERRUPTED_FILE, REPORT_FILE};
use ale_records::trajectory::{HARNESS_LOG_FILE, TRAJECTORY_FILE};
use ed25519_dalek::VerifyingKey;
use serde::Serialize;

use super::records::{
    RecordKeys, VerifiedHarnessLog, VerifiedTrajectory, verify_harness_log,
    verify_harness_log_so_far, verify_trajectory,
};
use crate::report::Report;
use ale_sandbox::SandboxRecord;

/// A run folder (or a lone trajectory) that verified. As JSON (`ale harness verify --json`,
/// see docs/harness.md) it is `{"trajectory": …, "interrupted": … | null,
/// "harness_log": … | null, "report": … | null}`.
#[derive(Debug, Clone, Serialize)]
pub struct RunVerification {
    pub trajectory: VerifiedTrajectory,
    /// The evaluator found the session unfinished when it started again: the run was
    /// interrupted and has no result (see [`InterruptedRun`]).
    pub interrupted: Option<InterruptedRun>,
    /// Absent while the harness has not read the result.
    pub harness_log: Option<VerifiedHarnessLog>,
    /// Absent while the harness has not reported.
    pub report: Option<Report>,
}

impl RunVerification {
    /// How the agent was confined, as the harness log says, if the log is signed (an unsigned
    /// log's claims prove nothing).
    pub fn sandbox(&self) -> Option<&SandboxRecord> {
        self.harness_log
            .as_ref()
            .filter(|l| l.is_signed())
            .map(|l| &l.started.sandbox)
    }
}

/// Why a run folder does not verify; the message names the file and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{}: {reason}", .path.display())]
pub struct RunVerifyError {
    pub path: PathBuf,
    pub reason: String,
}

/// What verifying a run folder or trajectory concluded: the shape of
/// `ale harness verify --json`. Tagged by `verdict`:
/// `{"verdict": "verified", "trajectory": …, "harness_log": …, "report": …}` or
/// `{"verdict": "broken", "path": …, "reason": …}`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum RunVerdict {
    Verified(Box<RunVerification>),
    Broken(RunVerifyError),
}

impl From<Result<RunVerification, RunVerifyError>> for RunVerdict {
    fn from(result: Result<RunVerification, RunVerifyError>) -> RunVerdict {
        match result {
            Ok(v) => RunVerdict::Verified(Box::new(v)),
            Err(e) => RunVerdict::Broken(e),
        }
    }
}

/// Verifies a lone trajectory file and the evaluator's signature on it with `evaluator_key`;
/// what it verifies to has no harness log and no report.
pub fn verify_trajectory_file(
    path: &Path,
    evaluator_key: &VerifyingKey,
) -> Result<RunVerification, RunVerifyError> {
    let broken = |reason: String| RunVerifyError {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| broken(format!("cannot read it: {e}")))?;
    let trajectory = verify_trajectory(&text).map_err(|e| broken(e.to_string()))?;
    trajectory
        .check_signature(evaluator_key)
        .map_err(|e| broken(e.to_string()))?;
    let folder = path.parent().unwrap_or(Path::new("."));
    let interrupted = check_interrupted(folder, &trajectory)?;
    Ok(RunVerification {
        trajectory,
        interrupted,
        harness_log: None,
        report: None,
    })
}

/// Reads the `interrupted.json` beside a verified trajectory, if there is one, and checks that
/// it names the trajectory as it is: unfinished, with the same last event. A trajectory
/// changed since the evaluator found it, or a finished one marked interrupted, is broken.
pub fn check_interrupted(
    dir: &Path,
    trajectory: &VerifiedTrajectory,
) -> Result<Option<InterruptedRun>, RunVerifyError> {
    let path = dir.join(INTERRUPTED_FILE);
    let broken = |reason: String| RunVerifyError {
        path: path.clone(),
        reason,
    };
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(broken(format!("cannot read it: {e}"))),
    };
    let found: InterruptedRun =
        serde_json::from_slice(&text).map_err(|e| broken(format!("malformed: {e}")))?;
    if trajectory.result.is_some() {
        return Err(broken(
            "it says the run was interrupted, but its trajectory records a finished session".into(),
        ));
    }
    if found.events != trajectory.events as u64
        || found.head != trajectory.head
        || found.torn_bytes != 0
    {
        return Err(broken(format!(
            "the trajectory changed after the evaluator found the run interrupted: it then \
             held {} whole events (head {}) and {} bytes of a torn line, it now holds {} \
             (head {})",
            found.events, found.head, found.torn_bytes, trajectory.events, trajectory.head
        )));
    }
    Ok(Some(found))
}

/// Verifies a run folder: the trajectory and its signature, the harness log and its
/// signature, and that the report (if any) says what the signed records say.
pub fn verify_run_dir(dir: &Path, keys: &RecordKeys) -> Result<RunVerification, RunVerifyError> {
    let broken = |file: &str| {
        let path = dir.join(file);
        move |reason: String| RunVerifyError { path, reason }
    };
    let read = |file: &str| -> Result<Option<String>, RunVerifyError> {
        match std::fs::read_to_string(dir.join(file)) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(broken(file)(format!("cannot read it: {e}"))),
        }
    };
    let text = read(TRAJECTORY_FILE)?
        .ok_or_else(|| broken(TRAJECTORY_FILE)("missing: this is not a run folder".into()))?;
    let trajectory =
        verify_trajectory(&text).map_err(|e| broken(TRAJECTORY_FILE)(e.to_string()))?;
    trajectory
        .check_signature(&keys.evaluator)
        .map_err(|e| broken(TRAJECTORY_FILE)(e.to_string()))?;
    let run_id = trajectory.run.run_id.as_str();
    if dir.file_name().and_then(|n| n.to_str()) != Some(run_id) {
        return Err(broken(TRAJECTORY_FILE)(format!(
            "it records run {run_id}, but it is in the folder of another run"
        )));
    }
    let interrupted = check_interrupted(dir, &trajectory)?;
    let harness_log = match read(HARNESS_LOG_FILE)? {
        None => None,
        Some(text) => {
            let log = if interrupted.is_some() {
                verify_harness_log_so_far(&text, &trajectory.head)
            } else {
                verify_harness_log(&text, &trajectory.head)
            }
            .map_err(|e| broken(HARNESS_LOG_FILE)(e.to_string()))?;
            if log.started.run_id != trajectory.run.run_id {
                return Err(broken(HARNESS_LOG_FILE)(format!(
                    "it is the log of run {}, not of {run_id}",
                    log.started.run_id
                )));
            }
            log.check_signature(&keys.harness)
                .map_err(|e| broken(HARNESS_LOG_FILE)(e.to_string()))?;
            Some(log)
        }
    };
    let report_path = dir.join(REPORT_FILE);
    let report = match std::fs::read_to_string(&report_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(broken(REPORT_FILE)(e.to_string())),
        Ok(text) => {
            // Read once: the typed report and, to catch added fields, the JSON as it is.
            let report = Report::parse(&report_path, &text)
                .map_err(|e| broken(REPORT_FILE)(e.to_string()))?;
            let file =
                serde_json::from_str(&text).map_err(|e| broken(REPORT_FILE)(e.to_string()))?;
            check_report(&report, &file, &trajectory, harness_log.as_ref(), keys)
                .map_err(broken(REPORT_FILE))?;
            Some(report)
        }
    };
    Ok(RunVerification {
        trajectory,
        interrupted,
        harness_log,
        report,
    })
}

/// The report must be exactly what the signed records add up to (its `timings` aside, which
/// nothing signs), field for field as the file has it, so a field added to the file fails as
/// a changed one does; the message names the fields that differ.
fn check_report(
    report: &Report,
    file: &serde_json::Value,
    trajectory: &VerifiedTrajectory,
    log: Option<&VerifiedHarnessLog>,
    keys: &RecordKeys,
) -> Result<(), String> {
    let log = log.ok_or("a report without the harness log it is derived from")?;
    let mut expected = Report::from_records(trajectory, log, keys, report.timings.clone())
        .map_err(|e| e.to_string())?;
    if report.report_version == 2 {
        // Written before reports carried statistics: checked as that version wrote it.
        expected.report_version = 2;
        expected.statistics = None;
    }
    let want = serde_json::to_value(&expected).map_err(|e| e.to_string())?;
    if &expected == report && file == &want {
        return Ok(());
    }
    let no_fields = serde_json::Map::new();
    let (got, wanted) = (
        file.as_object().unwrap_or(&no_fields),
        want.as_object().unwrap_or(&no_fields),
    );
    let mut differing: Vec<&str> = wanted
        .keys()
        .chain(got.keys().filter(|key| !wanted.contains_key(key.as_str())))
        .filter(|key| got.get(key.as_str()) != wanted.get(key.as_str()))
        .map(String::as_str)
        .collect();
    if differing.is_empty() {
        differing.push("its form");
    }
    Err(format!(
        "it differs from what the signed records say in: {}",
        differing.join(", ")
    ))
}
