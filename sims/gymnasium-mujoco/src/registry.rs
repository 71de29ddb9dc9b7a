//! This crate's entries in the simulator catalog.

use ale_sim::{DuplicateSim, Sim, SimCatalog, SimConfig, SimEntry};

use crate::env::EnvSpec;
use crate::envs::{
    ant, half_cheetah, hopper, humanoid, humanoid_standup, inverted_double_pendulum,
    inverted_pendulum, pusher, reacher, swimmer, walker2d,
};
use crate::sim::GymnasiumMujoco;
use crate::view;

static ENVS: [&EnvSpec; 11] = [
    &inverted_pendulum::SPEC,
    &inverted_double_pendulum::SPEC,
    &reacher::SPEC,
    &half_cheetah::SPEC,
    &hopper::SPEC,
    &walker2d::SPEC,
    &swimmer::SPEC,
    &ant::SPEC,
    &humanoid::SPEC,
    &humanoid_standup::SPEC,
    &pusher::SPEC,
];

/// The Gymnasium ids of this crate's envs, in catalog order.
pub const ENV_IDS: [&str; 11] = [
    inverted_pendulum::ID,
    inverted_double_pendulum::ID,
    reacher::ID,
    half_cheetah::ID,
    hopper::ID,
    walker2d::ID,
    swimmer::ID,
    ant::ID,
    humanoid::ID,
    humanoid_standup::ID,
    pusher::ID,
];

pub(crate) fn spec(id: &str) -> Option<&'static EnvSpec> {
    ENVS.iter().copied().find(|spec| spec.id == id)
}

/// Adds this crate's envs to `catalog`, whether or not MuJoCo is built in (without it, each
/// entry's build says how to get it). They take no `[sim_config]` options, mirror Gymnasium
/// step for step, and run in-process, cheaply enough for the batch pool.
pub fn add_to(catalog: &mut SimCatalog) -> Result<(), DuplicateSim> {
    for spec in ENVS {
        let entry = SimEntry::new(
            spec.id,
            spec.max_episode_steps,
            move |config: &SimConfig<'_>| {
                config.no_options(spec.id)?;
                Ok(Box::new(GymnasiumMujoco::of(spec, config.max_steps)?) as Box<dyn Sim>)
            },
        );
        let (observation, action) = spec.declared_spaces();
        let entry = entry
            .spaces(observation, action)
            .draw_with(move |observation| view::draw(spec, observation))
            .gymnasium_parity()
            .batch();
        catalog.add(entry)?;
    }
    Ok(())
}

/// A catalog of this crate's envs alone.
pub fn catalog() -> SimCatalog {
    let mut catalog = SimCatalog::new();
    add_to(&mut catalog).expect("this crate's envs have distinct ids");
    catalog
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "mujoco")]
    use ale_sim::Space;

    #[test]
    fn the_ids_name_the_specs_in_order() {
        assert_eq!(ENVS.map(|spec| spec.id), ENV_IDS);
        assert_eq!(catalog().ids(), ENV_IDS);
    }

    #[test]
    fn every_entry_is_listed_with_its_time_limit_and_refuses_options() {
        let catalog = catalog();
        for id in ENV_IDS {
            let entry = catalog.find(id).unwrap();
            let limit = match id {
                "Reacher-v5" => 50,
                "Pusher-v5" => 100,
                _ => 1000,
            };
            assert_eq!(entry.default_max_steps(), limit, "{id}");
            assert!(
                entry.has_gymnasium_parity() && entry.is_batch_capable(),
                "{id}"
            );
            let mut options = serde_json::Map::new();
            options.insert("frame_skip".into(), 3.into());
            let config = SimConfig {
                max_steps: 10,
                options: &options,
                holder: ale_sim::Holder::Official,
            };
            let err = entry.build(&config).err().unwrap();
            assert!(err.to_string().contains("frame_skip"), "{id}: {err}");
        }
    }

    /// Labels aside, which come from the compiled model (tests/drawing.rs checks them).
    #[cfg(feature = "mujoco")]
    #[test]
    fn the_declared_spaces_are_the_built_sims_own() {
        let unlabelled = |space: &Space| match space {
            Space::Box(b) => Space::Box(ale_sim::BoxSpace {
                labels: Vec::new(),
                ..b.clone()
            }),
            other => other.clone(),
        };
        for entry in catalog().iter() {
            let sim = entry.build_plain(10).unwrap();
            let declared = entry.declared_spaces().unwrap();
            let id = entry.id();
            assert_eq!(
                declared.observation,
                unlabelled(sim.observation_space()),
                "{id}"
            );
            assert_eq!(declared.action, unlabelled(sim.action_space()), "{id}");
        }
    }

    #[cfg(not(feature = "mujoco"))]
    #[test]
    fn without_mujoco_building_says_how_to_get_it() {
        for entry in catalog().iter() {
            let err = entry.build_plain(10).err().unwrap();
            let message = err.to_string();
            assert!(matches!(err, ale_sim::SimError::Backend(_)), "{message}");
            assert!(
                message.contains(entry.id())
                    && message.contains("scripts/fetch-mujoco")
                    && message.contains("--features mujoco"),
                "{message}"
            );
        }
    }
}
