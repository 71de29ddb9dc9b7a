//! Concluding a report: what a scored run's verified records add up to. The harness writes
//! exactly this report, and [`super::verify_run_dir`] rebuilds it to check one.

use ale_records::layout::AGENT_LOG_FILE;
use ale_records::signing_keys::encode_public_key;
use ale_records::trajectory::{HARNESS_LOG_FILE, TRAJECTORY_FILE};

use super::records::{RecordKeys, VerifiedHarnessLog, VerifiedTrajectory};
use crate::report::{
    AgentSummary, REPORT_VERSION, RecordKeysSummary, RecordSummary, Report, RunStatistics, Timings,
    Versions,
};

/// What a run's signed records lack for a report to be made of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecordsIncomplete {
    #[error("the trajectory's session has not finished")]
    Unfinished,
    #[error("the harness log has no result_read event")]
    NotRead,
    #[error("the harness log has no run_scored event")]
    NotScored,
}

impl Report {
    /// The report the two signed records of a scored run add up to: the harness writes exactly
    /// this, and `verify` rebuilds it to check a report. Only `timings` comes from elsewhere;
    /// no record signs it.
    pub fn from_records(
        trajectory: &VerifiedTrajectory,
        log: &VerifiedHarnessLog,
        keys: &RecordKeys,
        timings: Timings,
    ) -> Result<Report, RecordsIncomplete> {
        let result = trajectory
            .result
            .as_ref()
            .ok_or(RecordsIncomplete::Unfinished)?;
        let read = log.read.as_ref().ok_or(RecordsIncomplete::NotRead)?;
        let score = log.score.clone().ok_or(RecordsIncomplete::NotScored)?;
        let started = &log.started;
        Ok(Report {
            report_version: REPORT_VERSION,
            run_id: trajectory.run.run_id.clone(),
            name: started.name.clone(),
            tags: started.tags.clone(),
            seed_set: trajectory.run.seed_set.clone(),
            task: started.task.clone(),
            status: result.status,
            status_message: read.status_message.clone(),
            agent: AgentSummary {
                command: started.agent_command.clone(),
                exit: read.agent_exit.clone(),
                left_early: read.left_early,
                log: AGENT_LOG_FILE.into(),
            },
            sandbox: started.sandbox.clone(),
            value: result.value,
            statistics: Some(RunStatistics::of(
                &trajectory.run.run_id,
                &result.episodes,
                &score,
            )),
            score,
            episodes: result.episodes.clone(),
            seed_commitments: result.seed_commitments.clone(),
            safety: result.safety.clone(),
            total_steps: result.total_steps,
            trajectory: RecordSummary {
                file: TRAJECTORY_FILE.into(),
                head: trajectory.head.clone(),
                events: trajectory.events,
                verified: true,
            },
            harness_log: RecordSummary {
                file: HARNESS_LOG_FILE.into(),
                head: log.head.clone(),
                events: log.events,
                verified: true,
            },
            keys: RecordKeysSummary {
                evaluator: encode_public_key(&keys.evaluator),
                harness: encode_public_key(&keys.harness),
            },
            timings,
            versions: Versions {
                harness: started.harness_version.clone(),
                evaluator: trajectory.run.evaluator_version.clone(),
            },
        })
    }
}
