//! Hosted sims against real host processes (`ale-rust-host`): a sim that steps through its
//! host, and every way a host can fail, each a clear error naming the sim, the cause and the
//! host's stderr, after which the env starts a fresh host.

use std::sync::Arc;
use std::time::Duration;

use ale_sim::{Sim, SimError, Tensor};
use ale_sims_remote::{HostLimits, HostPolicy, HostSlots, PlainLauncher, hosted_entry};
use serde_json::{Map, Value, json};

const HOST: &str = env!("CARGO_BIN_EXE_ale-rust-host");

fn policy(max_hosts: usize, idle: Duration) -> HostPolicy {
    HostPolicy {
        launcher: Arc::new(PlainLauncher),
        slots: HostSlots::new(HostLimits::all(max_hosts)),
        idle_limit: idle,
    }
}

fn table(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

fn sim_with(policy: &HostPolicy, extra: Value) -> Box<dyn Sim> {
    let mut t = table(json!({"kind": "process", "command": [HOST], "timeout_seconds": 1.0}));
    t.extend(table(extra));
    let entry = hosted_entry(policy, "test-task", &t).unwrap();
    entry.build_plain(200).unwrap()
}

fn push() -> Tensor {
    Tensor::vector_f32(vec![0.5])
}

#[test]
fn a_hosted_sim_steps_through_its_host_deterministically() {
    let policy = policy(4, Duration::from_secs(60));
    let mut a = sim_with(&policy, json!({}));
    let mut b = sim_with(&policy, json!({}));
    assert_eq!(a.id(), "process:ale-rust-host");
    assert_eq!(a.counters()[0].name, "near_origin");
    a.reset(7).unwrap();
    b.reset(7).unwrap();
    assert_eq!(policy.slots.live(), 2);
    for _ in 0..200 {
        let ta = a.step(&push()).unwrap();
        let tb = b.step(&push()).unwrap();
        assert_eq!(ta, tb);
        assert_eq!(a.observation(), b.observation());
        if ta.is_done() {
            assert!(ta.truncated || ta.terminated);
            break;
        }
    }
    // A bad action is refused before it reaches the host, which keeps serving.
    assert!(matches!(
        a.step(&Tensor::vector_f32(vec![2.0])),
        Err(SimError::Action(_)) | Err(SimError::EpisodeOver)
    ));
    drop(a);
    drop(b);
    assert_eq!(policy.slots.live(), 0);
}

/// Steps until the host's fault shows, and checks the error, then that the env recovers.
fn fault_case(kind: &str, extra: Value, expected: &[&str]) {
    let policy = policy(2, Duration::from_secs(60));
    let mut args = json!({"command": [HOST, "--fault", kind, "--at-step", "3"]});
    args.as_object_mut().unwrap().extend(table(extra));
    let mut sim = sim_with(&policy, args);
    sim.reset(1).unwrap();
    sim.step(&push()).unwrap();
    sim.step(&push()).unwrap();
    let err = sim.step(&push()).unwrap_err();
    let SimError::Fault(message) = &err else {
        panic!("{kind}: expected a fault, got {err:?}");
    };
    assert!(
        message.contains("process:ale-rust-host"),
        "{kind}: {message}"
    );
    for word in expected {
        assert!(message.contains(word), "{kind}: {message:?} lacks {word:?}");
    }
    assert_eq!(policy.slots.live(), 0, "{kind}: the failed host is gone");
    // The episode is lost; the next reset starts a fresh host.
    assert!(
        matches!(sim.step(&push()), Err(SimError::NotReset)),
        "{kind}"
    );
    sim.reset(1).unwrap();
    sim.step(&push()).unwrap();
    assert_eq!(policy.slots.live(), 1);
}

#[test]
fn a_host_that_crashes_is_named_with_its_signal_and_stderr() {
    fault_case("crash", json!({}), &["SIGABRT", "misbehaving now"]);
}

#[test]
fn a_host_that_exits_is_named_with_its_status() {
    fault_case("exit", json!({}), &["status 3", "misbehaving now"]);
}

#[test]
fn a_host_that_hangs_times_out() {
    fault_case(
        "hang",
        json!({"timeout_seconds": 0.3}),
        &["did not answer within 0.3 s"],
    );
}

#[test]
fn a_host_that_writes_garbage_is_refused() {
    fault_case("garbage", json!({}), &["not a Reply"]);
}

#[test]
fn an_observation_of_the_wrong_shape_is_refused() {
    fault_case("wrong-shape", json!({}), &["outside the observation space"]);
}

#[test]
fn a_nan_observation_is_refused() {
    fault_case("nan", json!({}), &["outside the observation space", "NaN"]);
}

#[test]
fn a_host_past_its_memory_limit_fails() {
    fault_case("memory", json!({"memory_mb": 256}), &["misbehaving now"]);
}

#[test]
fn a_host_that_answers_failure_fails_its_env() {
    fault_case("fail", json!({}), &["asked to fail"]);
}

#[test]
fn hosts_are_bounded_per_evaluator() {
    let policy = policy(1, Duration::from_secs(60));
    let mut a = sim_with(&policy, json!({}));
    let mut b = sim_with(&policy, json!({}));
    a.reset(0).unwrap();
    let err = b.reset(0).unwrap_err();
    assert!(
        matches!(&err, SimError::Exhausted(m) if m.contains("--max-sim-hosts")),
        "{err:?}"
    );
    drop(a);
    b.reset(0).unwrap();
}

#[test]
fn idle_hosts_are_reaped_and_restarted_at_the_next_reset() {
    let policy = policy(3, Duration::from_secs(1));
    let t = table(json!({"kind": "process", "command": [HOST], "timeout_seconds": 1.0}));
    let entry = hosted_entry(&policy, "test-task", &t).unwrap();
    let build = |holder| {
        entry
            .build(&ale_sim::SimConfig {
                max_steps: 200,
                options: &Map::new(),
                holder,
            })
            .unwrap()
    };
    // A practice env idle mid-episode loses its host; an official one does not (its
    // session's time budget bounds it).
    let mut practice = build(ale_sim::Holder::Practice { scope: Some(1) });
    let mut official = build(ale_sim::Holder::Official);
    practice.reset(0).unwrap();
    practice.step(&push()).unwrap();
    official.reset(0).unwrap();
    official.step(&push()).unwrap();
    std::thread::sleep(Duration::from_millis(3500));
    let err = practice.step(&push()).unwrap_err();
    assert!(
        matches!(&err, SimError::Fault(m) if m.contains("idle")),
        "{err:?}"
    );
    assert_eq!(
        policy.slots.live(),
        1,
        "the reaped host's slot is given back at once"
    );
    official.step(&push()).unwrap();
    practice.reset(0).unwrap();
    practice.step(&push()).unwrap();
}

#[test]
fn a_host_that_cannot_start_is_a_clear_config_error() {
    let policy = policy(2, Duration::from_secs(60));
    let t = table(json!({"kind": "process", "command": ["/nonexistent/host"]}));
    let err = hosted_entry(&policy, "t", &t).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("/nonexistent/host") && text.contains("could not be started"),
        "{text}"
    );
    assert_eq!(policy.slots.live(), 0);
}

#[test]
fn a_block_steps_every_env_in_one_message_as_single_envs_would() {
    let policy = policy(8, Duration::from_secs(60));
    let t = table(json!({"kind": "process", "command": [HOST], "timeout_seconds": 1.0}));
    let entry = hosted_entry(&policy, "test-task", &t).unwrap();
    let config = ale_sim::SimConfig {
        max_steps: 200,
        options: &Map::new(),
        holder: ale_sim::Holder::Official,
    };
    let mut block = entry.build_block(&config, 4).unwrap();
    assert_eq!(block.len(), 4);
    let mut singles: Vec<Box<dyn Sim>> = (0..4).map(|_| entry.build_plain(200).unwrap()).collect();
    for (env, single) in singles.iter_mut().enumerate() {
        block.reset(env, env as u64 + 10).unwrap();
        single.reset(env as u64 + 10).unwrap();
    }
    assert_eq!(
        policy.slots.live(),
        5,
        "one host for the block, one per single env"
    );
    let which = [0, 1, 2, 3];
    let actions: Vec<Tensor> = (0..4)
        .map(|i| Tensor::vector_f32(vec![i as f32 / 4.0]))
        .collect();
    let mut results = Vec::new();
    for _ in 0..20 {
        block.step(&which, &actions, &mut results);
        for (env, single) in singles.iter_mut().enumerate() {
            let stepped = single.step(&actions[env]).unwrap();
            assert_eq!(results[env].as_ref().unwrap(), &stepped);
            assert_eq!(block.observation(env), single.observation());
            assert_eq!(block.counters(env), single.counters());
        }
    }
    // Only some envs: the others stay where they are.
    let before = block.observation(3).clone();
    block.step(&[1], &actions[1..2], &mut results);
    assert_eq!(results.len(), 1);
    assert_eq!(block.observation(3), &before);
}

#[test]
fn a_failed_block_host_fails_every_env_of_the_block_and_a_reset_starts_another() {
    let policy = policy(2, Duration::from_secs(60));
    let t = table(
        json!({"kind": "process", "command": [HOST, "--fault", "crash", "--at-step", "5"], "timeout_seconds": 1.0}),
    );
    let entry = hosted_entry(&policy, "test-task", &t).unwrap();
    let config = ale_sim::SimConfig {
        max_steps: 200,
        options: &Map::new(),
        holder: ale_sim::Holder::Official,
    };
    let mut block = entry.build_block(&config, 3).unwrap();
    for env in 0..3 {
        block.reset(env, 1).unwrap();
    }
    let actions: Vec<Tensor> = (0..3).map(|_| push()).collect();
    let mut results = Vec::new();
    // Steps 1-3, then 4-6 with the 5th crashing the host.
    block.step(&[0, 1, 2], &actions, &mut results);
    assert!(results.iter().all(Result::is_ok));
    block.step(&[0, 1, 2], &actions, &mut results);
    assert_eq!(results.len(), 3);
    for r in &results {
        assert!(
            matches!(r, Err(SimError::Fault(m)) if m.contains("SIGABRT")),
            "{r:?}"
        );
    }
    assert_eq!(policy.slots.live(), 0);
    block.step(&[0], &actions[..1], &mut results);
    assert!(matches!(results[0], Err(SimError::NotReset)));
    block.reset(0, 1).unwrap();
    block.step(&[0], &actions[..1], &mut results);
    assert!(results[0].is_ok());
}

#[test]
fn practice_hosts_are_bounded_per_run_and_never_take_official_ones() {
    use ale_sim::Holder;
    let policy = HostPolicy {
        launcher: Arc::new(PlainLauncher),
        slots: HostSlots::new(HostLimits {
            official: 1,
            practice: 3,
            practice_per_run: 2,
        }),
        idle_limit: Duration::from_secs(60),
    };
    let t = table(json!({"kind": "process", "command": [HOST], "timeout_seconds": 1.0}));
    let entry = hosted_entry(&policy, "test-task", &t).unwrap();
    let build = |holder| {
        entry
            .build(&ale_sim::SimConfig {
                max_steps: 50,
                options: &Map::new(),
                holder,
            })
            .unwrap()
    };
    let run = |scope| Holder::Practice { scope: Some(scope) };
    // Run 1 takes its two practice hosts; a third is refused, naming the per-run limit.
    let mut a: Vec<Box<dyn Sim>> = (0..3).map(|_| build(run(1))).collect();
    a[0].reset(0).unwrap();
    a[1].reset(0).unwrap();
    let err = a[2].reset(0).unwrap_err();
    assert!(
        matches!(&err, SimError::Exhausted(m) if m.contains("--max-run-practice-sim-hosts")),
        "{err:?}"
    );
    // Run 2 still practises, until the practice total is reached.
    let mut b: Vec<Box<dyn Sim>> = (0..2).map(|_| build(run(2))).collect();
    b[0].reset(0).unwrap();
    let err = b[1].reset(0).unwrap_err();
    assert!(
        matches!(&err, SimError::Exhausted(m) if m.contains("--max-practice-sim-hosts")),
        "{err:?}"
    );
    // The official rollout has its own host all the same.
    let mut official = build(Holder::Official);
    official.reset(0).unwrap();
    official.step(&push()).unwrap();
    assert_eq!(policy.slots.live(), 4);
    drop(a);
    b[1].reset(0).unwrap();
}

/// Regression: a block whose host failed while one env was stepped (or reset) answered its
/// other envs "step before reset", which failed the whole batch run; each lost episode now
/// answers the fault, so it is recorded as the sim's.
#[test]
fn the_other_envs_of_a_failed_block_answer_the_fault_not_step_before_reset() {
    let policy = policy(2, Duration::from_secs(60));
    let t = table(
        json!({"kind": "process", "command": [HOST, "--fault", "crash", "--at-step", "3"], "timeout_seconds": 1.0}),
    );
    let entry = hosted_entry(&policy, "test-task", &t).unwrap();
    let config = ale_sim::SimConfig {
        max_steps: 200,
        options: &Map::new(),
        holder: ale_sim::Holder::Official,
    };
    let mut block = entry.build_block(&config, 2).unwrap();
    block.reset(0, 1).unwrap();
    block.reset(1, 2).unwrap();
    let actions = [push(), push()];
    let mut results = Vec::new();
    block.step(&[0, 1], &actions, &mut results);
    assert!(results.iter().all(Result::is_ok));
    block.step(&[0], &actions[..1], &mut results);
    assert!(
        matches!(&results[0], Err(SimError::Fault(_))),
        "{results:?}"
    );
    // Env 1's episode went with the host: its step says so, once.
    block.reset(0, 1).unwrap();
    block.step(&[0, 1], &actions, &mut results);
    assert!(results[0].is_ok(), "{results:?}");
    assert!(
        matches!(&results[1], Err(SimError::Fault(m)) if m.contains("SIGABRT")),
        "{results:?}"
    );
    block.step(&[1], &actions[..1], &mut results);
    assert!(matches!(results[0], Err(SimError::NotReset)), "{results:?}");
}

/// A practice vector env's block takes a practice host slot (counted per run), never one of
/// the official rollouts' slots.
#[test]
fn a_practice_block_takes_a_practice_host_slot_never_an_official_one() {
    let policy = HostPolicy {
        launcher: Arc::new(PlainLauncher),
        slots: HostSlots::new(HostLimits {
            official: 1,
            practice: 1,
            practice_per_run: 1,
        }),
        idle_limit: Duration::from_secs(60),
    };
    let t = table(json!({"kind": "process", "command": [HOST], "timeout_seconds": 1.0}));
    let entry = hosted_entry(&policy, "test-task", &t).unwrap();
    let options = Map::new();
    let practice = ale_sim::SimConfig {
        max_steps: 200,
        options: &options,
        holder: ale_sim::Holder::Practice { scope: Some(7) },
    };
    let mut block = entry.build_block(&practice, 4).unwrap();
    block.reset(0, 1).unwrap();
    // The practice slot is taken: a second practice block cannot start a host…
    let mut second = entry.build_block(&practice, 4).unwrap();
    assert!(
        matches!(second.reset(0, 1), Err(ale_sim::SimError::Exhausted(_))),
        "the practice slot is the block's"
    );
    // …and the official rollouts' slot is still free.
    let official = ale_sim::SimConfig {
        max_steps: 200,
        options: &options,
        holder: ale_sim::Holder::Official,
    };
    let mut batch = entry.build_block(&official, 4).unwrap();
    batch.reset(0, 1).unwrap();
    assert_eq!(policy.slots.live(), 2);
}
