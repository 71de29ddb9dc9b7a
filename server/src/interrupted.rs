//! Runs an earlier evaluator left unfinished: found when an evaluator starts on the state dir,
//! and marked so that `ale harness runs` and `verify` can say the run was interrupted.
//!
//! A session's hidden seeds live only in the memory of the evaluator that drew them, so a run
//! whose evaluator died (SIGKILL, a crash, a power cut) can never be resumed: a restarted
//! evaluator knows none of its handles or session ids. What it can do honestly is say so. It
//! appends nothing to the trajectory and changes nothing in it; it writes
//! `interrupted.json` ([`InterruptedRun`]) beside it, naming the last whole event it found.

use std::collections::HashSet;
use std::path::Path;

use ale_records::event_data::InterruptedRun;
use ale_records::layout::{INTERRUPTED_FILE, REPORT_FILE};
use ale_records::private_files::create_private_file;
use ale_records::trajectory::{EventKind, TRAJECTORY_FILE};

/// One run found unfinished and marked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkedRun {
    pub run_id: String,
    pub found: InterruptedRun,
}

/// Marks every run in `runs_dir` whose trajectory has no `session_finished`, except the runs
/// named in `live` (this evaluator's own). Runs with a report (the harness only writes one for
/// a finished session) or already marked are not read. A trajectory whose whole lines do not
/// form a valid chain is left unmarked and logged: `verify` reports what is wrong with it.
pub fn mark_interrupted_runs(runs_dir: &Path, live: &HashSet<String>) -> Vec<MarkedRun> {
    let entries = match std::fs::read_dir(runs_dir) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!(runs = %runs_dir.display(), error = %e, "cannot look for interrupted runs");
            return Vec::new();
        }
    };
    let mut marked = Vec::new();
    for entry in entries.flatten() {
        let run_id = entry.file_name().to_string_lossy().into_owned();
        let dir = entry.path();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir
            || live.contains(&run_id)
            || dir.join(REPORT_FILE).exists()
            || std::fs::symlink_metadata(dir.join(INTERRUPTED_FILE)).is_ok()
        {
            continue;
        }
        match mark_if_unfinished(&dir) {
            Ok(Some(found)) => {
                tracing::warn!(
                    run = %run_id,
                    events = found.events,
                    torn_bytes = found.torn_bytes,
                    "a run an earlier evaluator left unfinished is marked interrupted; it cannot be resumed"
                );
                marked.push(MarkedRun { run_id, found });
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(run = %run_id, error = %e, "not marked interrupted"),
        }
    }
    marked
}

/// What is found in one run folder: `None` if its session finished (or it has no trajectory).
fn mark_if_unfinished(dir: &Path) -> Result<Option<InterruptedRun>, String> {
    let bytes = match std::fs::read(dir.join(TRAJECTORY_FILE)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read its trajectory: {e}")),
    };
    let Some(found) = unfinished(&bytes)? else {
        return Ok(None);
    };
    let text = serde_json::to_vec(&found).map_err(|e| e.to_string())?;
    let mut file = create_private_file(&dir.join(INTERRUPTED_FILE), 0o600)
        .map_err(|e| format!("cannot write {INTERRUPTED_FILE}: {e}"))?;
    std::io::Write::write_all(&mut file, &text)
        .and_then(|()| file.sync_data())
        .map_err(|e| format!("cannot write {INTERRUPTED_FILE}: {e}"))?;
    Ok(Some(found))
}

/// Whether a trajectory's whole lines end before `session_finished`, and if so where.
fn unfinished(bytes: &[u8]) -> Result<Option<InterruptedRun>, String> {
    let whole = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |last_newline| last_newline + 1);
    let text = std::str::from_utf8(&bytes[..whole]).map_err(|e| format!("not UTF-8: {e}"))?;
    let chain = ale_records::trajectory::verify(text)
        .map_err(|e| format!("its trajectory does not verify: {e}"))?;
    if chain
        .events
        .last()
        .is_some_and(|e| e.event.kind == EventKind::SessionFinished)
    {
        return Ok(None);
    }
    Ok(Some(InterruptedRun {
        found_unix_ms: ale_records::now_unix_ms(),
        events: chain.events.len() as u64,
        head: chain.head,
        torn_bytes: (bytes.len() - whole) as u64,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ale_records::trajectory::{Chain, Level};

    fn chain_of(kinds: &[EventKind]) -> String {
        let mut chain = Chain::new();
        kinds
            .iter()
            .map(|kind| {
                let (line, _) =
                    chain.seal(Level::TrustedEvaluator, *kind, 1, serde_json::json!({}));
                line + "\n"
            })
            .collect()
    }

    #[test]
    fn only_unfinished_sessions_are_interrupted_and_a_torn_tail_is_counted() {
        let finished = chain_of(&[EventKind::RunStarted, EventKind::SessionFinished]);
        assert_eq!(unfinished(finished.as_bytes()), Ok(None));
        let open = chain_of(&[EventKind::RunStarted, EventKind::SessionStarted]);
        let found = unfinished(open.as_bytes()).unwrap().unwrap();
        assert_eq!((found.events, found.torn_bytes), (2, 0));
        let torn = format!("{open}{{\"data\":{{");
        let found_torn = unfinished(torn.as_bytes()).unwrap().unwrap();
        assert_eq!((found_torn.events, found_torn.torn_bytes), (2, 9));
        assert_eq!(found_torn.head, found.head);
        let empty = unfinished(b"").unwrap().unwrap();
        assert_eq!(empty.events, 0);
        assert!(unfinished(open.replacen("run_started", "run_stopped", 1).as_bytes()).is_err());
    }

    #[test]
    fn marking_skips_live_runs_and_never_touches_the_trajectory() {
        let tmp = tempfile::tempdir().unwrap();
        let open = chain_of(&[EventKind::RunStarted]);
        for run in ["run-a", "run-live", "run-done"] {
            std::fs::create_dir(tmp.path().join(run)).unwrap();
        }
        std::fs::write(tmp.path().join("run-a").join(TRAJECTORY_FILE), &open).unwrap();
        std::fs::write(tmp.path().join("run-live").join(TRAJECTORY_FILE), &open).unwrap();
        let done = chain_of(&[EventKind::RunStarted, EventKind::SessionFinished]);
        std::fs::write(tmp.path().join("run-done").join(TRAJECTORY_FILE), done).unwrap();
        let live = HashSet::from(["run-live".to_string()]);
        let marked = mark_interrupted_runs(tmp.path(), &live);
        assert_eq!(
            marked.iter().map(|m| m.run_id.as_str()).collect::<Vec<_>>(),
            ["run-a"]
        );
        let written: InterruptedRun = serde_json::from_slice(
            &std::fs::read(tmp.path().join("run-a").join(INTERRUPTED_FILE)).unwrap(),
        )
        .unwrap();
        assert_eq!(written, marked[0].found);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("run-a").join(TRAJECTORY_FILE)).unwrap(),
            open
        );
        // Marked once: a second start finds it marked already.
        assert!(mark_interrupted_runs(tmp.path(), &live).is_empty());
        assert!(!tmp.path().join("run-live").join(INTERRUPTED_FILE).exists());
        assert!(!tmp.path().join("run-done").join(INTERRUPTED_FILE).exists());
    }
}
