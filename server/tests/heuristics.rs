//! Every bundled heuristic policy solves its task: it plays the task's official evaluation
//! through the server (over real gRPC) and reaches the task's target.

mod common;

use ale_client::{Client, TaskMode, play_episode, policy};
use ale_proto::EnvHandle;
use ale_proto::eval::{Direction, EvalResultRecord, EvalStatus};
use common::{TestServer, result};

fn meets(value: f64, target: f64, direction: Direction) -> bool {
    match direction {
        Direction::HigherIsBetter => value >= target,
        Direction::LowerIsBetter => value <= target,
    }
}

/// Plays `task`'s official session with its sim's heuristic; returns the result.
async fn official_run(t: &TestServer, task: &str) -> EvalResultRecord {
    let (handle, session, _) = t.official_env(task).await;
    let client = Client::connect(&t.endpoint()).await.unwrap();
    let mut env = client.attach(EnvHandle::from_wire(handle)).await.unwrap();
    let mut agent = policy::heuristic(&env.spec().task.sim).expect("a heuristic for every sim");
    let planned = env.start_eval_session().await.unwrap().episodes;
    for _ in 0..planned {
        play_episode(&mut env, agent.as_mut(), None).await.unwrap();
    }
    EvalResultRecord::try_from(result(&mut t.harness().await, &session, false).await).unwrap()
}

#[tokio::test]
async fn each_interactive_heuristic_meets_its_target_in_an_official_session() {
    let t = TestServer::start_deterministic(1).await;
    let client = Client::connect(&t.endpoint()).await.unwrap();
    let tasks = client.list_tasks().await.unwrap();
    let mut checked = Vec::new();
    for task in tasks.iter().filter(|t| t.mode == TaskMode::Interactive) {
        let r = official_run(&t, &task.id).await;
        let metric = &task.metric;
        assert_eq!(r.status, EvalStatus::Completed, "{}", task.id);
        assert!(
            meets(r.value, metric.target, r.direction),
            "{}: {} = {} misses the target {}",
            task.id,
            r.metric_name,
            r.value,
            metric.target
        );
        assert!(
            r.safety.values().all(|v| *v == 0.0),
            "{}: safety {:?}",
            task.id,
            r.safety
        );
        assert_eq!(r.safety.len(), task.safety_metrics.len(), "{}", task.id);
        checked.push(format!("{} {}={:.1}", task.id, r.metric_name, r.value));
    }
    assert!(checked.len() >= 6, "{checked:?}");
    eprintln!("{}", checked.join("\n"));
}

/// Batch tasks are rolled out by the evaluator itself once batch mode exists; until then the
/// heuristic is checked over as many practice episodes as the evaluation plans, each measured
/// with the task's own per-episode metric, and must leave every safety counter at zero.
#[tokio::test]
async fn each_batch_heuristic_meets_its_target_over_practice_episodes() {
    let t = TestServer::start_deterministic(2).await;
    let client = Client::connect(&t.endpoint()).await.unwrap();
    let registry = ale_server::TaskRegistry::builtin(&ale_sims::catalog()).unwrap();
    let batch: Vec<_> = registry
        .iter()
        .filter(|t| t.spec().unwrap().is_batch())
        .collect();
    assert!(batch.len() >= 2);
    for task in batch {
        let spec = task.spec().unwrap();
        let mut env = client.create(&spec.id).await.unwrap();
        let mut agent = policy::heuristic(&spec.sim).unwrap();
        let mut total = 0.0;
        let mut safety = vec![0.0; spec.safety_metrics.len()];
        for seed in 0..u64::from(spec.episodes_per_eval) {
            let s = play_episode(&mut env, agent.as_mut(), Some(seed))
                .await
                .unwrap();
            let counters: Vec<ale_sim::Counter> = ale_sims::catalog()
                .find(&spec.sim)
                .unwrap()
                .counter_names()
                .iter()
                .map(|name| ale_sim::Counter {
                    name,
                    value: match s.info.get(*name) {
                        Some(ale_client::InfoValue::Number(v)) => *v,
                        other => panic!("{}: counter {name} is {other:?}", spec.id),
                    },
                })
                .collect();
            total += task
                .episode_metric
                .measure(s.episode_return, s.steps, &counters);
            for (sum, counter) in safety.iter_mut().zip(&task.safety_counters) {
                *sum += ale_server::task::counter(&counters, counter);
            }
        }
        let mean = total / f64::from(spec.episodes_per_eval);
        assert!(
            meets(mean, spec.metric.target, spec.metric.direction),
            "{}: {mean} vs {}",
            spec.id,
            spec.metric.target
        );
        assert!(
            safety.iter().all(|v| *v == 0.0),
            "{}: safety {safety:?}",
            spec.id
        );
        eprintln!(
            "{} {}={mean:.3} safety {safety:?}",
            spec.id, spec.metric.name
        );
    }
}
