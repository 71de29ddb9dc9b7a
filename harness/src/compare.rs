//! Two runs of one task side by side: for each, what it measured per rollout, how it was
//! scored, how its agent was confined and whether its records verify. The console's
//! comparison screen and `ale plot --compare` both read a [`Comparison`].
//!
//! ```no_run
//! use ale_harness::compare::Comparison;
//! use ale_harness::verify::RecordKeys;
//! use std::path::Path;
//! let state = Path::new("/root/.local/state/ale");
//! let keys = RecordKeys::from_state_dir(state);
//! let both = Comparison::load(
//!     &state.join("runs/run-3f2a…"),
//!     &state.join("runs/run-9c41…"),
//!     keys.as_ref(),
//! )?;
//! println!("{}: {} vs {}", both.task_id(), both.left.run_id(), both.right.run_id());
//! # Ok::<(), ale_harness::compare::CompareError>(())
//! ```

use std::path::{Path, PathBuf};

use ale_proto::RunId;
use ale_proto::eval::{Direction, EvalStatus};
use ale_records::event_data::SeedSetRecord;
use ale_records::signing_keys::KeyError;
use ale_records::trajectory::TRAJECTORY_FILE;

use crate::plot::data::PlotData;
use crate::plot::error::PlotError;
use crate::report::Report;
use crate::scoring::Breakdown;
use crate::stats::{Difference, seed_for};
use crate::verify::{
    RecordKeys, RunVerdict, verify_run_dir, verify_trajectory, verify_trajectory_file,
};
use ale_sandbox::SandboxRecord;

/// Two runs of different tasks: their metrics, targets and scores do not compare.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "only runs of one task compare: {left_run} is a run of {left_task} and {right_run} a run \
     of {right_task}; pick two runs of the same task (`ale harness runs` lists each run's task)"
)]
pub struct DifferentTasks {
    pub left_run: RunId,
    pub left_task: String,
    pub right_run: RunId,
    pub right_task: String,
}

impl DifferentTasks {
    /// Refuses two runs of different tasks: the one place this rule is decided.
    pub fn between(
        left_run: &RunId,
        left_task: &str,
        right_run: &RunId,
        right_task: &str,
    ) -> Result<(), DifferentTasks> {
        if left_task == right_task {
            return Ok(());
        }
        Err(DifferentTasks {
            left_run: left_run.clone(),
            left_task: left_task.to_string(),
            right_run: right_run.clone(),
            right_task: right_task.to_string(),
        })
    }

    /// [`DifferentTasks::between`] the runs two plots show.
    pub fn check(left: &PlotData, right: &PlotData) -> Result<(), DifferentTasks> {
        Self::between(&left.run_id, &left.task_id, &right.run_id, &right.task_id)
    }
}

/// Why two runs cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A run's records cannot be read (the message names the file).
    #[error(transparent)]
    Unreadable(#[from] PlotError),
    #[error(transparent)]
    DifferentTasks(#[from] DifferentTasks),
    /// Both sides are one run (by id), perhaps named two ways.
    #[error("{0} was given twice: pick two different runs of one task")]
    SameRun(RunId),
}

/// What the harness concluded of a run, or why there is nothing to read.
#[derive(Debug, Clone)]
pub enum RunReport {
    /// `report.json`, as the harness wrote it.
    Written(Box<Report>),
    /// No usable report: what is missing, and why, in words.
    Missing(String),
}

/// Whether a run's records were checked, and what the check concluded.
#[derive(Debug, Clone)]
pub enum Checked {
    /// What `verify_run_dir` (or, for a lone trajectory, `verify_trajectory_file`) concluded.
    Verdict(RunVerdict),
    /// No public keys to check the signatures with: why.
    NoKeys(String),
}

/// One side of a comparison.
#[derive(Debug, Clone)]
pub struct ComparedRun {
    /// The run folder, or the trajectory file, it was read from.
    pub path: PathBuf,
    /// Per-rollout metrics and outcomes, the target, and the run's id, task and status.
    pub plot: PlotData,
    pub report: RunReport,
    pub checked: Checked,
    /// The evaluation seed set it was played on, as its records say; `None`: fresh seeds.
    pub seed_set: Option<SeedSetRecord>,
}

impl ComparedRun {
    /// Reads a run folder or a trajectory file, and verifies its records with `keys` (the
    /// public keys of the state dir, as the runs view and `ale harness verify` use). A run
    /// without `report.json` still compares on its trajectory; [`RunReport::Missing`] says
    /// what is missing.
    pub fn load(
        path: &Path,
        keys: Result<&RecordKeys, &KeyError>,
    ) -> Result<ComparedRun, PlotError> {
        // A run deleted since it was listed: say so, not "a trajectory file alone".
        if let Err(cause) = std::fs::symlink_metadata(path) {
            return Err(PlotError::Read {
                path: path.to_path_buf(),
                cause,
            });
        }
        let report = if path.is_dir() {
            match Report::read(path) {
                Ok(report) => RunReport::Written(Box::new(report)),
                Err(e) if e.is_missing() => RunReport::Missing(
                    "no report.json: the harness did not finish this run, so there is no score, \
                     no breakdown and no signed account of its agent"
                        .into(),
                ),
                Err(e) => RunReport::Missing(format!("{e}; compared on its trajectory")),
            }
        } else {
            RunReport::Missing(
                "a trajectory file alone: no report, so no score, no breakdown and no signed \
                 account of its agent"
                    .into(),
            )
        };
        let plot = match &report {
            RunReport::Written(report) => PlotData::from_report(report),
            RunReport::Missing(_) => PlotData::load(path)?,
        };
        let seed_set = match &report {
            RunReport::Written(report) => report.seed_set.clone(),
            RunReport::Missing(_) => {
                let trajectory = if path.is_dir() {
                    path.join(TRAJECTORY_FILE)
                } else {
                    path.to_path_buf()
                };
                std::fs::read_to_string(trajectory)
                    .ok()
                    .and_then(|text| verify_trajectory(&text).ok())
                    .and_then(|v| v.run.seed_set)
            }
        };
        let checked = match keys {
            Err(e) => Checked::NoKeys(format!("signatures not checked: {e}")),
            Ok(keys) if path.is_dir() => Checked::Verdict(verify_run_dir(path, keys).into()),
            Ok(keys) => Checked::Verdict(verify_trajectory_file(path, &keys.evaluator).into()),
        };
        Ok(ComparedRun {
            path: path.to_path_buf(),
            plot,
            report,
            checked,
            seed_set,
        })
    }

    pub fn run_id(&self) -> &RunId {
        &self.plot.run_id
    }

    pub fn task_id(&self) -> &str {
        &self.plot.task_id
    }

    /// How the session ended; `None` while it has not.
    pub fn status(&self) -> Option<EvalStatus> {
        self.plot.status
    }

    pub fn report(&self) -> Option<&Report> {
        match &self.report {
            RunReport::Written(report) => Some(report),
            RunReport::Missing(_) => None,
        }
    }

    /// The score and how it came about, from the report.
    pub fn breakdown(&self) -> Option<&Breakdown> {
        self.report().map(|r| &r.score)
    }

    /// How the agent was confined, as the signed harness log says; `None` unless the run's
    /// records verified and hold a signed log. See [`ComparedRun::claimed_sandbox`].
    pub fn sandbox(&self) -> Option<&SandboxRecord> {
        match &self.checked {
            Checked::Verdict(RunVerdict::Verified(v)) => v.sandbox(),
            _ => None,
        }
    }

    /// How the report says the agent was confined: a claim nothing signs, worth showing
    /// only, marked as such, when [`ComparedRun::sandbox`] has nothing.
    pub fn claimed_sandbox(&self) -> Option<&SandboxRecord> {
        self.report().map(|r| &r.sandbox)
    }

    /// Whether its records verified with the keys.
    pub fn is_verified(&self) -> bool {
        matches!(self.checked, Checked::Verdict(RunVerdict::Verified(_)))
    }

    /// What to say beside the run wherever its numbers are shown, unless its records verified.
    pub fn records_warning(&self) -> Option<&'static str> {
        match &self.checked {
            Checked::Verdict(RunVerdict::Verified(_)) => None,
            Checked::Verdict(RunVerdict::Broken(_)) => Some("NOT VERIFIED"),
            Checked::NoKeys(_) => Some("not checked"),
        }
    }
}

/// Two runs of one task.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub left: ComparedRun,
    pub right: ComparedRun,
}

impl Comparison {
    /// Pairs two runs; runs of different tasks, and a run with itself, are refused.
    pub fn new(left: ComparedRun, right: ComparedRun) -> Result<Comparison, CompareError> {
        if left.run_id() == right.run_id() {
            return Err(CompareError::SameRun(left.run_id().clone()));
        }
        DifferentTasks::check(&left.plot, &right.plot)?;
        Ok(Comparison { left, right })
    }

    /// Reads and verifies both runs (see [`ComparedRun::load`]) and pairs them.
    pub fn load(
        left: &Path,
        right: &Path,
        keys: Result<&RecordKeys, &KeyError>,
    ) -> Result<Comparison, CompareError> {
        let left = ComparedRun::load(left, keys)?;
        let right = ComparedRun::load(right, keys)?;
        Comparison::new(left, right)
    }

    pub fn task_id(&self) -> &str {
        self.left.task_id()
    }

    /// Both sides, left first.
    pub fn sides(&self) -> [&ComparedRun; 2] {
        [&self.left, &self.right]
    }

    /// Whether rollout i of one run was played on the same hidden seed as rollout i of the
    /// other: both runs verified, were played on one evaluation seed set (equal commitments)
    /// and plan as many rollouts. A run whose records do not verify pairs with nothing.
    pub fn paired(&self) -> bool {
        if !(self.left.is_verified() && self.right.is_verified())
            || self.left.plot.episodes.len() != self.right.plot.episodes.len()
        {
            return false;
        }
        match (&self.left.seed_set, &self.right.seed_set) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    /// Left minus right, per-rollout metric: the difference of the means with its 95%
    /// interval and the probability of improvement. Runs on one seed set are paired rollout
    /// for rollout; otherwise each run drew seeds of its own, rollout i of one has nothing to
    /// do with rollout i of the other, and each run is resampled on its own.
    pub fn difference(&self) -> Difference {
        let metrics = |side: &ComparedRun| -> Vec<f64> {
            side.plot.episodes.iter().map(|e| e.metric).collect()
        };
        Difference::of(
            &metrics(&self.left),
            &metrics(&self.right),
            self.paired(),
            self.left.plot.direction == Direction::HigherIsBetter,
            seed_for(&[self.left.run_id().as_str(), self.right.run_id().as_str()]),
        )
    }
}

impl Comparison {
    /// A file name for the comparison's plot, without extension: `<a>-vs-<b>`, each as
    /// [`PlotData::file_stem`] names it.
    pub fn file_stem(&self) -> String {
        format!(
            "{}-vs-{}",
            self.left.plot.file_stem(),
            self.right.plot.file_stem()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ale_records::signing_keys::{KeyRole, read_public_key};

    /// A run folder holding only `report`'s report.json.
    fn reported(root: &Path, report: &Report) -> PathBuf {
        let dir = root.join(report.run_id.as_str());
        std::fs::create_dir(&dir).unwrap();
        report.write(&dir).unwrap();
        dir
    }

    fn no_keys(dir: &Path) -> KeyError {
        let file = dir.join(KeyRole::Evaluator.public_key_file());
        read_public_key(&file).unwrap_err()
    }

    #[test]
    fn runs_of_two_tasks_are_refused_naming_both() {
        let tmp = tempfile::tempdir().unwrap();
        let cartpole = crate::report::tests::sample();
        let mut acrobot = crate::report::tests::sample();
        acrobot.run_id = RunId::from_wire("run-other");
        acrobot.task.id = "acrobot-swingup".into();
        let (a, b) = (
            reported(tmp.path(), &cartpole),
            reported(tmp.path(), &acrobot),
        );
        let keys = no_keys(tmp.path());
        let e = Comparison::load(&a, &b, Err(&keys)).unwrap_err();
        assert!(matches!(e, CompareError::DifferentTasks(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "only runs of one task compare: run-test is a run of cartpole-balance and run-other \
             a run of acrobot-swingup; pick two runs of the same task (`ale harness runs` lists \
             each run's task)"
        );
    }

    #[test]
    fn each_side_says_what_it_lacks_and_why_it_is_unchecked() {
        let tmp = tempfile::tempdir().unwrap();
        let mut first = crate::report::tests::sample();
        first.run_id = RunId::from_wire("run-first");
        let second = crate::report::tests::sample();
        let (a, b) = (reported(tmp.path(), &first), reported(tmp.path(), &second));
        let keys = no_keys(tmp.path());
        let both = Comparison::load(&a, &b, Err(&keys)).unwrap();
        assert_eq!(both.task_id(), "cartpole-balance");
        assert_eq!(both.left.run_id().as_str(), "run-first");
        assert_eq!(both.right.status(), Some(EvalStatus::Completed));
        assert_eq!(both.left.breakdown(), Some(&first.score));
        // The report's sandbox is a claim: nothing signed backs it here.
        assert!(both.left.sandbox().is_none());
        assert_eq!(
            both.left.claimed_sandbox().unwrap().describe(),
            "sandboxed (offline, uid 65534)"
        );
        assert_eq!(both.left.records_warning(), Some("not checked"));
        match &both.left.checked {
            Checked::NoKeys(why) => assert!(why.starts_with("signatures not checked"), "{why}"),
            other => panic!("{other:?}"),
        }

        // With keys, a report with no trajectory beside it does not verify, and says which
        // file is missing.
        let keys = RecordKeys {
            evaluator: ed25519_dalek::SigningKey::from_bytes(&[1; 32]).verifying_key(),
            harness: ed25519_dalek::SigningKey::from_bytes(&[2; 32]).verifying_key(),
        };
        let both = Comparison::load(&a, &b, Ok(&keys)).unwrap();
        match &both.left.checked {
            Checked::Verdict(RunVerdict::Broken(e)) => {
                assert!(e.path.ends_with("trajectory.jsonl"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        assert!(!both.left.is_verified());
        assert_eq!(both.left.records_warning(), Some("NOT VERIFIED"));
        assert!(
            both.left.sandbox().is_none(),
            "a broken run's sandbox claim is not taken"
        );

        // Unpaired: the two runs drew seeds of their own. The sample reports hold no
        // rollouts: no difference, an even chance.
        let d = both.difference();
        assert!(!d.paired);
        assert_eq!(d.mean_difference, 0.0);
        assert_eq!(d.probability_of_improvement, 0.5);
        // These records do not verify: even claiming one seed set, they pair with nothing
        // (two verified runs on one set pair: tui/tests/harness.rs plays them).
        let set = |name: &str| SeedSetRecord {
            commitment: format!("c-{name}"),
            name: name.into(),
        };
        let mut claimed = both.clone();
        claimed.left.seed_set = Some(set("benchmark"));
        claimed.right.seed_set = Some(set("benchmark"));
        assert!(!claimed.paired() && !claimed.difference().paired);

        // One run given twice (here by the same folder) is refused.
        let e = Comparison::load(&a, &a, Ok(&keys)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "run-first was given twice: pick two different runs of one task"
        );

        // A folder with neither report nor trajectory cannot be compared, and says why.
        let empty = tmp.path().join("run-empty");
        std::fs::create_dir(&empty).unwrap();
        let e = Comparison::load(&a, &empty, Ok(&keys)).unwrap_err();
        assert!(e.to_string().contains("trajectory.jsonl"), "{e}");
    }
}
