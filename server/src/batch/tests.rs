//! The pipeline end to end inside one evaluator, with test policies (the cartpole heuristic as
//! a block policy, and policies that fail or dawdle), against interactive sessions on the same
//! hidden seeds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ale_client::policy::{CartPoleHeuristic, Policy as _};
use ale_proto::eval::{EvalResultRecord, EvalStatus, Outcome};
use ale_records::trajectory::TRAJECTORY_FILE;
use ale_sim::{Space, Tensor};

use super::policy::Policy;
use super::*;
use crate::channel::Channel;
use crate::evaluator::Evaluator;
use crate::seeds::{HiddenSeed, SeedSource};
use crate::task::TaskRegistry;
use crate::{Error, Limits};

const ENTRYPOINT: &str = "policy.safetensors";

/// Seeds from a fixed sequence, so two evaluators play the same scenes.
struct Sequence(AtomicU64);

impl SeedSource for Sequence {
    fn draw(&self) -> HiddenSeed {
        HiddenSeed::new(ale_sim::Rng::new(self.0.fetch_add(1, Ordering::SeqCst)).next_u64())
    }
}

/// What a test policy file says it is.
#[derive(Clone, Copy)]
enum Behaviour {
    Heuristic,
    /// Always pushes left: the pole falls within a few dozen steps.
    Left,
    /// Fails on its first call.
    Failing,
    /// Sleeps at each call.
    Slow,
    /// Panics inside a step: the evaluator's own failure (a broken pipeline), not the policy's.
    Panicking,
}

struct TestPolicy(Behaviour);

impl Policy for TestPolicy {
    fn obs_dim(&self) -> usize {
        4
    }
    fn encode(&self, obs: &Tensor, row: &mut [f32]) -> Result<(), String> {
        row.copy_from_slice(obs.as_f32().ok_or("not float32")?);
        Ok(())
    }
    fn blank_actions(&self, n: usize) -> Vec<Tensor> {
        vec![Tensor::scalar_i64(0); n]
    }
    fn act(&mut self, obs: &[f32], n: usize, actions: &mut [Tensor]) -> Result<(), String> {
        if let Behaviour::Failing = self.0 {
            return Err("the output for row 0 has NaN at position 1".into());
        }
        if let Behaviour::Slow = self.0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Behaviour::Panicking = self.0 {
            panic!("a bug in the evaluator's pipeline");
        }
        for (row, action) in obs.chunks(4).take(n).zip(actions) {
            *action = match self.0 {
                Behaviour::Left => Tensor::scalar_i64(0),
                _ => CartPoleHeuristic::default().act(&Tensor::vector_f32(row.to_vec())),
            };
        }
        Ok(())
    }
}

fn test_loader(
    format: &str,
    bytes: &[u8],
    _obs: &Space,
    _act: &Space,
) -> Result<Box<dyn Policy>, String> {
    assert_eq!(format, "mlp-safetensors");
    let behaviour = match bytes {
        b"heuristic" => Behaviour::Heuristic,
        b"left" => Behaviour::Left,
        b"failing" => Behaviour::Failing,
        b"slow" => Behaviour::Slow,
        b"panicking" => Behaviour::Panicking,
        other => return Err(format!("not a test policy: {} bytes", other.len())),
    };
    Ok(Box::new(TestPolicy(behaviour)))
}

/// The cartpole task in batch mode, with some lines replaced.
fn batch_cartpole(replacements: &[(&str, &str)]) -> String {
    let mut text = include_str!("../../tasks/cartpole-balance.toml")
        .replace("id = \"cartpole-balance\"", "id = \"cartpole-batch\"")
        .replace("mode = \"interactive\"", "mode = \"batch\"");
    for (from, to) in replacements {
        assert!(text.contains(from), "{from}");
        text = text.replace(from, to);
    }
    text.push_str(
        "\n[submission]\nsubmission_path = \"/submission\"\nentrypoint = \"policy.safetensors\"\nformat = \"mlp-safetensors\"\n",
    );
    text
}

struct Setup {
    evaluator: Evaluator,
    _dir: tempfile::TempDir,
}

fn evaluator(task: &str, options: BatchOptions, seed_start: u64) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks");
    std::fs::create_dir(&tasks).unwrap();
    std::fs::write(tasks.join("cartpole-batch.toml"), task).unwrap();
    let evaluator = Evaluator::with_policy_loader(
        TaskRegistry::with_dir(&tasks, &ale_sims::catalog()).unwrap(),
        &dir.path().join("state"),
        Box::new(Sequence(AtomicU64::new(seed_start))),
        Limits::default(),
        &options,
        test_loader,
    )
    .unwrap();
    Setup {
        evaluator,
        _dir: dir,
    }
}

fn options() -> BatchOptions {
    BatchOptions {
        block_size: 4,
        threads: 2,
        ..BatchOptions::default()
    }
}

impl Setup {
    fn submit(&self, policy: &[u8]) -> (BatchId, EvalResultRecordSource) {
        let e = &self.evaluator;
        let created = e
            .create_env(Channel::Harness, None, "cartpole-batch", true)
            .unwrap();
        let (session, run_id) = created.official.unwrap();
        std::fs::write(e.run_submission_dir(&run_id).join(ENTRYPOINT), policy).unwrap();
        let batch = e
            .submit_batch_eval(Channel::Harness, &created.handle)
            .unwrap();
        (batch, EvalResultRecordSource { session, run_id })
    }

    fn wait(&self, batch: &BatchId) -> BatchStatus {
        for _ in 0..3000 {
            let status = self
                .evaluator
                .batch_status(Channel::Harness, batch)
                .unwrap();
            if status.state.is_finished() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the batch run did not finish in 30 s");
    }

    fn trajectory(&self, run: &EvalResultRecordSource) -> String {
        let path = ale_records::layout::run_dir(self.evaluator.state_dir(), &run.run_id)
            .join(TRAJECTORY_FILE);
        std::fs::read_to_string(path).unwrap()
    }
}

struct EvalResultRecordSource {
    session: ale_proto::SessionId,
    run_id: ale_proto::RunId,
}

/// The cartpole heuristic played interactively through an official session.
fn interactive_heuristic(seed_start: u64) -> EvalResultRecord {
    let setup = evaluator(&batch_cartpole(&[]), options(), seed_start);
    let e = &setup.evaluator;
    let created = e
        .create_env(Channel::Harness, None, "cartpole-balance", true)
        .unwrap();
    let (session, _) = created.official.unwrap();
    e.start_eval_session(Channel::Harness, &created.handle)
        .unwrap();
    let mut heuristic = CartPoleHeuristic::default();
    // A Reset after the last rollout is refused: the session is complete.
    while let Ok((mut obs, _)) = e.reset(Channel::Harness, &created.handle, None) {
        loop {
            let (next, t, _) = e
                .step(Channel::Harness, &created.handle, &heuristic.act(&obs))
                .unwrap();
            obs = next;
            if t.is_done() {
                break;
            }
        }
    }
    let record = e.eval_result(Channel::Harness, &session, false).unwrap();
    assert_eq!(record.status, EvalStatus::Completed);
    record
}

#[test]
fn a_batch_run_scores_what_an_interactive_session_does_on_the_same_seeds() {
    let setup = evaluator(&batch_cartpole(&[]), options(), 1000);
    let (batch, run) = setup.submit(b"heuristic");
    let status = setup.wait(&batch);
    assert_eq!(status.state, BatchState::Succeeded, "{}", status.message);
    assert_eq!(status.progress, 1.0);
    let result = status.result.unwrap();
    assert_eq!(result.status, EvalStatus::Completed);
    let interactive = interactive_heuristic(1000);
    let metrics = |r: &EvalResultRecord| r.episodes.iter().map(|e| e.metric).collect::<Vec<_>>();
    assert_eq!(metrics(&result), metrics(&interactive));
    assert_eq!(result.total_steps, interactive.total_steps);
    assert_eq!(result.value, interactive.value);
    assert_eq!(result.seed_commitments.len(), 20);

    // The session's result is the batch run's, and the record on disk verifies.
    let by_session = setup
        .evaluator
        .eval_result(Channel::Harness, &run.session, false)
        .unwrap();
    assert_eq!(by_session.trajectory_head, result.trajectory_head);
    let text = setup.trajectory(&run);
    let verified = ale_harness::verify::verify_trajectory(&text).unwrap();
    assert_eq!(verified.result.as_ref(), Some(&result));
    assert_eq!(verified.head, result.trajectory_head);
    // The agent channel sees no result.
    let agent = setup
        .evaluator
        .batch_status(Channel::Agent, &batch)
        .unwrap();
    assert!(agent.result.is_none());
    assert_eq!(agent.state, BatchState::Succeeded);
}

#[test]
fn a_worse_policy_scores_lower_and_a_failing_one_fails_the_run() {
    let setup = evaluator(&batch_cartpole(&[]), options(), 7);
    let (batch, _) = setup.submit(b"left");
    let left = setup.wait(&batch).result.unwrap();
    assert!(left.value < 50.0, "{}", left.value);

    let (batch, run) = setup.submit(b"failing");
    let status = setup.wait(&batch);
    assert_eq!(
        status.state,
        BatchState::Failed("the policy failed: the output for row 0 has NaN at position 1".into())
    );
    let result = status.result.unwrap();
    assert_eq!(result.status, EvalStatus::EndedEarly);
    assert!(result.episodes.iter().all(|e| e.outcome.is_failure()));
    ale_harness::verify::verify_trajectory(&setup.trajectory(&run)).unwrap();

    let (batch, _) = setup.submit(b"no such policy");
    let status = setup.wait(&batch);
    assert_eq!(
        status.message,
        "the submitted policy cannot be used: not a test policy: 14 bytes"
    );
    // Both are the submission's doing: the session ended early, not by the evaluator.
    assert_eq!(status.result.unwrap().status, EvalStatus::EndedEarly);
}

/// A run the evaluator's own pipeline broke says so: its session ends `EvaluatorEnded`, not
/// `EndedEarly` (which would put it on the agent), and its record still verifies.
#[test]
fn a_broken_pipeline_is_the_evaluators_failure_on_record() {
    let setup = evaluator(&batch_cartpole(&[]), options(), 11);
    let (batch, run) = setup.submit(b"panicking");
    let status = setup.wait(&batch);
    assert!(
        matches!(&status.state, BatchState::Failed(why) if why.contains("the evaluator failed")),
        "{status:?}"
    );
    let result = status.result.unwrap();
    assert_eq!(result.status, EvalStatus::EvaluatorEnded, "{result:?}");
    assert!(result.episodes.iter().all(|e| e.outcome.is_failure()));
    ale_harness::verify::verify_trajectory(&setup.trajectory(&run)).unwrap();
    // The evaluator goes on: the next run plays.
    let (batch, _) = setup.submit(b"heuristic");
    assert_eq!(setup.wait(&batch).state, BatchState::Succeeded);
}

#[test]
fn budgets_end_a_batch_run_as_they_end_a_session() {
    let task = batch_cartpole(&[("max_total_steps = 10000", "max_total_steps = 50")]);
    let setup = evaluator(&task, options(), 3);
    let (batch, run) = setup.submit(b"heuristic");
    let status = setup.wait(&batch);
    assert_eq!(status.state, BatchState::Succeeded);
    let result = status.result.unwrap();
    assert_eq!(result.status, EvalStatus::BudgetExceeded);
    assert_eq!(result.total_steps, 50);
    assert!(
        result
            .episodes
            .iter()
            .any(|e| e.outcome == Outcome::BudgetExceeded)
    );
    ale_harness::verify::verify_trajectory(&setup.trajectory(&run)).unwrap();

    let task = batch_cartpole(&[("time_budget_seconds = 600", "time_budget_seconds = 1")]);
    let setup = evaluator(&task, options(), 3);
    let (batch, run) = setup.submit(b"slow");
    let status = setup.wait(&batch);
    let result = status.result.unwrap();
    assert_eq!(
        result.status,
        EvalStatus::BudgetExceeded,
        "{}",
        result.status_message
    );
    assert_eq!(result.status_message, "the time budget of 1 s ran out");
    ale_harness::verify::verify_trajectory(&setup.trajectory(&run)).unwrap();
}

#[test]
fn runs_past_the_cap_wait_in_line_with_their_budget_whole_and_misuse_changes_nothing() {
    // One run plays at a time; each has a time budget of 2 s.
    let setup = evaluator(
        &batch_cartpole(&[("time_budget_seconds = 600", "time_budget_seconds = 2")]),
        BatchOptions {
            max_runs: 1,
            ..options()
        },
        3,
    );
    let e = &setup.evaluator;
    let (slow, slow_run) = setup.submit(b"slow");
    // Submitted beyond the cap: not refused, but waiting in line.
    let (second, second_run) = setup.submit(b"heuristic");
    let (third, third_run) = setup.submit(b"heuristic");
    for batch in [&second, &third] {
        let status = e.batch_status(Channel::Harness, batch).unwrap();
        assert_eq!(status.state, BatchState::Queued, "{status:?}");
        assert!(status.message.contains("--max-batch-runs"), "{status:?}");
    }
    // A run ended by its harness while it waits ends at once, its folder gone with it.
    let ended = e
        .eval_result(Channel::Harness, &third_run.session, true)
        .unwrap();
    assert_eq!(ended.status, EvalStatus::EndedEarly, "{ended:?}");
    let status = e.batch_status(Channel::Harness, &third).unwrap();
    assert!(
        matches!(&status.state, BatchState::Failed(why) if why.contains("the harness ended")),
        "{status:?}"
    );
    assert!(!e.run_submission_dir(&third_run.run_id).exists());
    // It left the line with its snapshot: only the second waits.
    assert_eq!(e.batch_runs_waiting(), 1);
    ale_harness::verify::verify_trajectory(&setup.trajectory(&third_run)).unwrap();
    // The slow run spends its whole budget; only then does the second play, and its own
    // budget counts from then, not from its submission (more than 2 s ago by then).
    let slow_status = setup.wait(&slow).result.unwrap();
    assert_eq!(slow_status.status, EvalStatus::BudgetExceeded);
    let result = setup.wait(&second).result.unwrap();
    assert_eq!(result.status, EvalStatus::Completed, "{result:?}");
    for run in [&slow_run, &second_run] {
        ale_harness::verify::verify_trajectory(&setup.trajectory(run)).unwrap();
    }
    // Misuse changes nothing.
    let created = e
        .create_env(Channel::Harness, None, "cartpole-batch", true)
        .unwrap();
    let (_, waiting_run) = created.official.clone().unwrap();
    std::fs::write(
        e.run_submission_dir(&waiting_run).join(ENTRYPOINT),
        b"heuristic",
    )
    .unwrap();
    let again = e
        .submit_batch_eval(Channel::Harness, &created.handle)
        .unwrap();
    let err = e
        .submit_batch_eval(Channel::Harness, &created.handle)
        .unwrap_err();
    assert!(matches!(err, Error::AlreadySubmitted(_)), "{err}");
    setup.wait(&again);

    let practice = e
        .create_env(Channel::Agent, None, "cartpole-batch", false)
        .unwrap();
    let err = e
        .submit_batch_eval(Channel::Harness, &practice.handle)
        .unwrap_err();
    assert!(matches!(err, Error::PracticeEnvInBatch(_)), "{err}");
    let interactive = e
        .create_env(Channel::Harness, None, "cartpole-balance", true)
        .unwrap();
    let err = e
        .submit_batch_eval(Channel::Harness, &interactive.handle)
        .unwrap_err();
    assert!(matches!(err, Error::NotABatchTask(_)), "{err}");
}
