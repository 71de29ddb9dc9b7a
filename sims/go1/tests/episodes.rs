//! go1-joystick-flat through its catalog entry: seeded resets, the observation's layout, the
//! fall test and the counters, refusals; without MuJoCo, what building it says.

use ale_sim::{SimError, Space};
use ale_sims_go1::layout::{self, ID};

#[test]
fn the_entry_is_listed_with_its_spaces_counters_and_episode_length() {
    let catalog = ale_sims_go1::catalog();
    assert_eq!(catalog.ids(), [ID]);
    let entry = catalog.find(ID).unwrap();
    assert_eq!(entry.default_max_steps(), 1000);
    assert!(entry.is_batch_capable() && !entry.has_gymnasium_parity());
    assert_eq!(entry.counter_names(), ["falls", "tracking_lin_vel"]);
    let spaces = entry.declared_spaces().unwrap();
    let (Space::Box(observation), Space::Box(action)) = (&spaces.observation, &spaces.action)
    else {
        panic!("{spaces:?}")
    };
    assert_eq!(observation.shape, [layout::OBSERVATION_LEN]);
    assert_eq!(observation.labels.len(), layout::OBSERVATION_LEN);
    assert_eq!(action.shape, [layout::ACTION_LEN]);
    assert!(action.low.iter().all(|v| *v == -1.0) && action.high.iter().all(|v| *v == 1.0));
    spaces.observation.validate().unwrap();
    spaces.action.validate().unwrap();

    let mut options = serde_json::Map::new();
    options.insert("terrain".into(), "rough".into());
    let config = ale_sim::SimConfig {
        max_steps: 10,
        options: &options,
        holder: ale_sim::Holder::Official,
    };
    let err = entry.build(&config).err().unwrap();
    assert!(err.to_string().contains("terrain"), "{err}");
}

#[cfg(not(feature = "mujoco"))]
#[test]
fn without_mujoco_building_says_how_to_get_it() {
    let err = ale_sims_go1::catalog()
        .find(ID)
        .unwrap()
        .build_plain(10)
        .err()
        .unwrap();
    let message = err.to_string();
    assert!(matches!(err, SimError::Backend(_)), "{message}");
    assert!(
        message.contains(ID)
            && message.contains("scripts/fetch-mujoco")
            && message.contains("--features mujoco"),
        "{message}"
    );
}

#[cfg(feature = "mujoco")]
mod linked {
    use super::*;
    use ale_sim::{Sim, Tensor};
    use ale_sims_go1::Go1Joystick;
    use layout::{
        ACTION_LEN, COMMAND, COMMAND_RANGE, DEFAULT_HEIGHT, DEFAULT_POSE, GRAVITY, JOINT_ANGLES,
        JOINT_VELOCITIES, LAST_ACTION,
    };

    fn sim() -> Go1Joystick {
        Go1Joystick::new(1000).unwrap()
    }

    fn observation(sim: &Go1Joystick) -> Vec<f32> {
        sim.observation().as_f32().unwrap().to_vec()
    }

    fn counter(sim: &Go1Joystick, name: &str) -> f64 {
        sim.counters()
            .iter()
            .find(|c| c.name == name)
            .unwrap()
            .value
    }

    #[test]
    fn the_declared_spaces_are_the_built_sims_own() {
        let entry = ale_sims_go1::catalog();
        let entry = entry.find(ID).unwrap();
        let sim = entry.build_plain(10).unwrap();
        let declared = entry.declared_spaces().unwrap();
        assert_eq!(&declared.observation, sim.observation_space());
        assert_eq!(&declared.action, sim.action_space());
    }

    #[test]
    fn a_seed_draws_the_command_and_the_start_and_the_same_seed_draws_them_again() {
        let (mut a, mut b) = (sim(), sim());
        let mut commands = Vec::new();
        for seed in [0, 1, 2, u64::MAX] {
            a.reset(seed).unwrap();
            b.reset(seed).unwrap();
            assert_eq!(observation(&a), observation(&b), "seed {seed}");
            assert_eq!((a.qpos(), a.qvel()), (b.qpos(), b.qvel()));
            let command = a.command();
            for (c, range) in command.iter().zip(COMMAND_RANGE) {
                assert!(c.abs() < range, "{command:?}");
            }
            commands.push(command);

            // Upright in the default pose at the default height, somewhere within half a
            // metre of the origin, with the command in the observation.
            let obs = observation(&a);
            assert_eq!(a.qpos()[2], DEFAULT_HEIGHT);
            assert!(a.qpos()[0].abs() <= 0.5 && a.qpos()[1].abs() <= 0.5);
            assert_eq!(&a.qpos()[7..], &DEFAULT_POSE);
            assert!(
                obs[JOINT_ANGLES..JOINT_VELOCITIES]
                    .iter()
                    .all(|v| *v == 0.0)
            );
            assert!(obs[LAST_ACTION..COMMAND].iter().all(|v| *v == 0.0));
            for i in 0..3 {
                assert_eq!(obs[COMMAND + i], command[i] as f32);
            }
            // Turned about z only: gravity points straight down the trunk's z axis.
            let g = &obs[GRAVITY..GRAVITY + 3];
            assert!(g[0].abs() < 1e-6 && g[1].abs() < 1e-6 && (g[2] + 1.0).abs() < 1e-6);
        }
        commands.dedup();
        assert_eq!(commands.len(), 4, "{commands:?}");
    }

    /// From seed 3, as from most starts; from a few (seeds 52, 80, 85 of 0..100) the soft
    /// servos give way under a lean and the robot topples.
    #[test]
    fn standing_in_the_default_pose_lasts_the_episode_without_a_fall() {
        let mut sim = sim();
        sim.reset(3).unwrap();
        let zero = Tensor::vector_f32(vec![0.0; ACTION_LEN]);
        let mut steps = 0;
        loop {
            let t = sim.step(&zero).unwrap();
            steps += 1;
            assert!((0.0..=10000.0).contains(&t.reward));
            if t.is_done() {
                assert!(t.truncated && !t.terminated);
                break;
            }
        }
        assert_eq!(steps, 1000);
        assert!(sim.qpos()[2] > 0.2, "the trunk sank to {}", sim.qpos()[2]);
        assert_eq!(counter(&sim, "falls"), 0.0);
        // Standing still tracks a moving command badly: a mean tracking term near 0.
        let tracking = counter(&sim, "tracking_lin_vel");
        assert!((0.0..0.2).contains(&tracking), "{tracking}");
        assert!(matches!(sim.step(&zero), Err(SimError::EpisodeOver)));
    }

    #[test]
    fn holding_the_pose_from_a_leaning_start_topples_and_counts_a_fall() {
        let mut sim = sim();
        sim.reset(52).unwrap();
        let zero = Tensor::vector_f32(vec![0.0; ACTION_LEN]);
        let t = loop {
            let t = sim.step(&zero).unwrap();
            if t.is_done() {
                break t;
            }
        };
        assert!(
            t.terminated && sim.episode_steps() < 200,
            "{}",
            sim.episode_steps()
        );
        assert_eq!(counter(&sim, "falls"), 1.0);
    }

    #[test]
    fn the_action_just_applied_is_observed_and_moves_the_joints_toward_their_targets() {
        // Every knee bent 0.5 * 0.4 = 0.2 rad further than the default pose, against standing
        // in it from the same start.
        let mut bent = vec![0.0f32; ACTION_LEN];
        for leg in 0..4 {
            bent[leg * 3 + 2] = -0.4;
        }
        let knees = |action: &Tensor| {
            let mut sim = sim();
            sim.reset(5).unwrap();
            for _ in 0..50 {
                sim.step(action).unwrap();
            }
            let obs = observation(&sim);
            assert_eq!(&obs[LAST_ACTION..COMMAND], action.as_f32().unwrap());
            [0, 1, 2, 3].map(|leg| obs[JOINT_ANGLES + leg * 3 + 2])
        };
        let standing = knees(&Tensor::vector_f32(vec![0.0; ACTION_LEN]));
        let bent = knees(&Tensor::vector_f32(bent));
        for leg in 0..4 {
            // Soft servos under the robot's weight: about the 0.2 rad asked for.
            let change = bent[leg] - standing[leg];
            assert!(
                (-0.3..-0.1).contains(&change),
                "leg {leg}: knee moved {change}"
            );
        }
    }

    #[test]
    fn turned_upside_down_it_falls_on_the_first_step() {
        let mut sim = sim();
        let mut state = vec![0.0; 19 + 18 + 3];
        // Rolled half a turn about x, half a metre up.
        state[..7].copy_from_slice(&[0.0, 0.0, 0.5, 0.0, 1.0, 0.0, 0.0]);
        state[7..19].copy_from_slice(&DEFAULT_POSE);
        state[37..].copy_from_slice(&[0.5, 0.0, 0.0]);
        sim.reset_to_state(&state).unwrap();
        assert_eq!(sim.command(), [0.5, 0.0, 0.0]);
        let t = sim
            .step(&Tensor::vector_f32(vec![0.0; ACTION_LEN]))
            .unwrap();
        assert!(t.terminated && !t.truncated);
        assert_eq!(counter(&sim, "falls"), 1.0);
        // One step's tracking term over the 1000-step limit.
        assert!(counter(&sim, "tracking_lin_vel") <= 1e-3);
        // A fall costs Playground's termination penalty; the clip keeps the reward at 0 or more.
        assert!(t.reward >= 0.0);
    }

    #[test]
    fn bad_actions_and_states_are_refused_and_change_nothing() {
        let mut sim = sim();
        sim.reset(1).unwrap();
        let before = observation(&sim);
        for bad in [
            Tensor::vector_f32(vec![0.0; ACTION_LEN - 1]),
            Tensor::zeros(vec![ACTION_LEN], ale_sim::DType::F64),
            Tensor::vector_f32([vec![f32::NAN], vec![0.0; ACTION_LEN - 1]].concat()),
        ] {
            assert!(
                matches!(sim.step(&bad), Err(SimError::Action(_))),
                "{bad:?}"
            );
        }
        assert_eq!(observation(&sim), before);
        assert_eq!(sim.episode_steps(), 0);
        assert!(matches!(
            sim.reset_to_state(&[0.0; 39]),
            Err(SimError::State(_))
        ));
        let mut state = vec![0.0; 40];
        state[3] = f64::INFINITY;
        assert!(matches!(
            sim.reset_to_state(&state),
            Err(SimError::State(_))
        ));
    }

    #[test]
    fn a_missing_model_folder_is_named_with_what_to_run() {
        // The folder is read when the scene is first compiled; this process has compiled it
        // already or will from the default folder, so the check is on the message alone.
        let dir = ale_sims_go1::assets_dir();
        assert!(
            dir.join("go1.xml").is_file(),
            "{} has no go1.xml: run scripts/fetch-go1",
            dir.display()
        );
        assert!(dir.is_absolute(), "{}", dir.display());
    }
}
