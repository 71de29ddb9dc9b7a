//! The evaluator on a catalog of its binary's choosing: tasks load against it, a sim whose
//! backend is missing is listed and refused with its own message, a sim whose reset fails
//! answers with the failure, and a task file's `[sim_config]` and batch mode are checked by the
//! sim's entry.

use ale_server::{Channel, Evaluator, TaskRegistry};
use ale_sim::{Sim, SimCatalog, SimEntry, SimError, Space, Tensor, Transition};
use tonic::Code;

/// CartPole whose reset fails for seed 13, as a backend that cannot set up an episode would;
/// with `tell_seed`, for every seed, naming it.
struct FailsOnThirteen(Box<dyn Sim>, bool);

impl Sim for FailsOnThirteen {
    fn id(&self) -> &'static str {
        "FailsOnThirteen-v0"
    }
    fn observation_space(&self) -> &Space {
        self.0.observation_space()
    }
    fn action_space(&self) -> &Space {
        self.0.action_space()
    }
    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        if self.1 {
            return Err(SimError::Backend(format!(
                "cannot place the model for seed {seed}"
            )));
        }
        if seed == 13 {
            return Err(SimError::Backend(
                "the model could not be placed at its initial state".into(),
            ));
        }
        self.0.reset(seed)
    }
    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        self.0.step(action)
    }
    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError> {
        self.0.reset_to_state(state)
    }
    fn observation(&self) -> &Tensor {
        self.0.observation()
    }
    fn episode_steps(&self) -> u32 {
        self.0.episode_steps()
    }
}

fn catalog() -> SimCatalog {
    let mut catalog = ale_sims::catalog();
    catalog
        .add(SimEntry::new("Missing-v0", 100, |_| {
            Err(SimError::Backend(
                "libmissing is not in this build: run scripts/fetch-missing".into(),
            ))
        }))
        .unwrap();
    let cartpole = ale_sims::catalog().find("CartPole-v1").unwrap().clone();
    let cartpole = cartpole.build_plain(10).unwrap();
    catalog
        .add(
            SimEntry::new("Declared-v0", 100, |_| {
                Err(SimError::Backend(
                    "libdeclared is not in this build: run scripts/fetch-declared".into(),
                ))
            })
            .spaces(
                cartpole.observation_space().clone(),
                cartpole.action_space().clone(),
            ),
        )
        .unwrap();
    catalog
        .add(SimEntry::new("FailsOnThirteen-v0", 500, |config| {
            let cartpole = ale_sims::catalog().find("CartPole-v1").unwrap().clone();
            Ok(Box::new(FailsOnThirteen(cartpole.build(config)?, false)) as Box<dyn Sim>)
        }))
        .unwrap();
    catalog
        .add(SimEntry::new("TellsSeed-v0", 500, |config| {
            let cartpole = ale_sims::catalog().find("CartPole-v1").unwrap().clone();
            Ok(Box::new(FailsOnThirteen(cartpole.build(config)?, true)) as Box<dyn Sim>)
        }))
        .unwrap();
    catalog
}

/// The cartpole task file with its id and sim replaced, plus `extra` lines.
fn task(id: &str, sim: &str, extra: &str) -> String {
    let text = include_str!("../tasks/cartpole-balance.toml")
        .replace("id = \"cartpole-balance\"", &format!("id = \"{id}\""))
        .replace("sim = \"CartPole-v1\"", &format!("sim = \"{sim}\""));
    format!("{text}\n{extra}\n")
}

fn registry(files: &[(&str, String)]) -> Result<TaskRegistry, ale_server::TaskError> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    TaskRegistry::with_dir(dir.path(), &catalog())
}

#[test]
fn a_sim_whose_backend_is_missing_is_listed_and_refused_with_its_own_message() {
    let tasks = registry(&[
        ("missing.toml", task("missing", "Missing-v0", "")),
        ("flaky.toml", task("flaky", "FailsOnThirteen-v0", "")),
    ])
    .unwrap();
    let missing = tasks.get("missing").unwrap();
    // Listed, without spaces (none can be known without the backend).
    let metadata = ale_server::service::task_metadata(missing);
    assert!(metadata.observation_space.is_none() && metadata.action_space.is_none());
    // An entry that declares its spaces is listed with them, whole as a client decodes it.
    let declared = registry(&[("declared.toml", task("declared", "Declared-v0", ""))]).unwrap();
    let spec = declared.get("declared").unwrap().spec().unwrap();
    assert_eq!(spec.observation_space.shape(), vec![4]);
    assert!(matches!(spec.action_space, Space::Discrete(_)));

    let state = tempfile::tempdir().unwrap();
    let evaluator = Evaluator::new(tasks, &state.path().join("state")).unwrap();
    let err = evaluator
        .create_env(Channel::Agent, None, "missing", false)
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    assert!(
        err.to_string().contains("run scripts/fetch-missing"),
        "{err}"
    );
    assert_eq!(evaluator.env_counts().practice, 0, "nothing was made");

    // A reset that fails says so and leaves the env usable with another seed.
    let flaky = evaluator
        .create_env(Channel::Agent, None, "flaky", false)
        .unwrap();
    let err = evaluator
        .reset(Channel::Agent, &flaky.handle, Some(13))
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    assert!(
        err.to_string()
            .contains("could not be placed at its initial state"),
        "{err}"
    );
    let (obs, _) = evaluator
        .reset(Channel::Agent, &flaky.handle, Some(14))
        .unwrap();
    assert_eq!(obs.len(), 4);
}

#[test]
fn an_official_rollouts_failed_reset_keeps_the_sims_words_and_the_hidden_seed_from_the_agent() {
    let tasks = registry(&[("tells.toml", task("tells", "TellsSeed-v0", ""))]).unwrap();
    let state = tempfile::tempdir().unwrap();
    let evaluator = Evaluator::new(tasks, &state.path().join("state")).unwrap();
    // Practice: the sim's own message, its seed being the agent's.
    let practice = evaluator
        .create_env(Channel::Agent, None, "tells", false)
        .unwrap();
    let err = evaluator
        .reset(Channel::Agent, &practice.handle, Some(5))
        .unwrap_err();
    assert!(err.to_string().contains("for seed 5"), "{err}");
    // Official: a fixed message, whatever the sim said of its hidden seed.
    let official = evaluator
        .create_env(Channel::Harness, None, "tells", true)
        .unwrap();
    evaluator
        .start_eval_session(Channel::Agent, &official.handle)
        .unwrap();
    let err = evaluator
        .reset(Channel::Agent, &official.handle, None)
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    let message = err.to_string();
    assert!(
        message.contains("failed to reset for an official rollout") && !message.contains("seed "),
        "{message}"
    );
}

#[test]
fn the_sims_entry_checks_a_tasks_sim_config_and_batch_mode() {
    let err = registry(&[(
        "odd.toml",
        task("odd", "CartPole-v1", "[sim_config]\ngravity = 3.0"),
    )])
    .unwrap_err()
    .to_string();
    assert!(err.contains("`sim_config`"), "{err}");
    assert!(err.contains("\"gravity\""), "{err}");

    let err = registry(&[("nope.toml", task("nope", "HalfCheetah-v5", ""))])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not in this evaluator's simulator catalog"),
        "{err}"
    );
    assert!(
        err.contains("Missing-v0") && err.contains("CartPole-v1"),
        "{err}"
    );

    // Missing-v0 was not declared cheap enough for the batch pool.
    let batch = task("missing-batch", "Missing-v0", "")
        .replace("mode = \"interactive\"", "mode = \"batch\"")
        + "[submission]\nsubmission_path = \"/submission\"\nentrypoint = \"policy.safetensors\"\nformat = \"mlp-safetensors\"\n";
    let err = registry(&[("b.toml", batch)]).unwrap_err().to_string();
    assert!(
        err.contains("`mode`") && err.contains("batch pool"),
        "{err}"
    );
}
