//! The bundled sims' entries in the simulator catalog.

use ale_sim::{SimConfig, SimEntry};

use crate::{
    SimCatalog, acrobot, cartpole, mountain_car, mountain_car_continuous, nav2d, pendulum,
    reacher2d, swarm2d,
};

/// An entry for a bundled sim: it takes no options, and builds with the task's step limit.
fn entry<S: crate::Sim + 'static>(
    id: &'static str,
    default_max_steps: u32,
    new: fn(u32) -> S,
) -> SimEntry {
    SimEntry::new(id, default_max_steps, move |config: &SimConfig<'_>| {
        config.no_options(id)?;
        Ok(Box::new(new(config.max_steps)) as Box<dyn crate::Sim>)
    })
}

/// Adds every bundled sim to `catalog`. All are cheap enough for the batch pool.
pub fn add_to(catalog: &mut SimCatalog) -> Result<(), ale_sim::DuplicateSim> {
    let entries = [
        entry(
            cartpole::ID,
            cartpole::MAX_EPISODE_STEPS,
            cartpole::CartPole::new,
        )
        .gymnasium_parity()
        .draw_with(cartpole::draw),
        entry(
            pendulum::ID,
            pendulum::MAX_EPISODE_STEPS,
            pendulum::Pendulum::new,
        )
        .gymnasium_parity()
        .draw_with(pendulum::draw),
        entry(
            mountain_car::ID,
            mountain_car::MAX_EPISODE_STEPS,
            mountain_car::MountainCar::new,
        )
        .gymnasium_parity()
        .draw_with(mountain_car::draw),
        entry(
            mountain_car_continuous::ID,
            mountain_car_continuous::MAX_EPISODE_STEPS,
            mountain_car_continuous::MountainCarContinuous::new,
        )
        .gymnasium_parity()
        .draw_with(mountain_car_continuous::draw),
        entry(
            acrobot::ID,
            acrobot::MAX_EPISODE_STEPS,
            acrobot::Acrobot::new,
        )
        .gymnasium_parity()
        .draw_with(acrobot::draw),
        entry(nav2d::ID, nav2d::MAX_EPISODE_STEPS, nav2d::Nav2d::new)
            .counters(nav2d::COUNTERS)
            .draw_with(nav2d::draw)
            .map_with(|max_steps| Box::new(nav2d::Nav2d::new(max_steps))),
        entry(
            reacher2d::ID,
            reacher2d::MAX_EPISODE_STEPS,
            reacher2d::Reacher2d::new,
        )
        .counters(reacher2d::COUNTERS)
        .draw_with(reacher2d::draw),
        entry(
            swarm2d::ID,
            swarm2d::MAX_EPISODE_STEPS,
            swarm2d::Swarm2d::new,
        )
        .counters(swarm2d::COUNTERS)
        .draw_with(swarm2d::draw),
    ];
    for entry in entries {
        catalog.add(entry.batch())?;
    }
    Ok(())
}

/// A catalog of the bundled sims alone.
///
/// ```
/// let catalog = ale_sims::catalog();
/// let entry = catalog.find("CartPole-v1").unwrap();
/// let mut sim = entry.build_plain(entry.default_max_steps()).unwrap();
/// sim.reset(7);
/// assert_eq!(sim.observation().len(), 4);
/// ```
pub fn catalog() -> SimCatalog {
    let mut catalog = SimCatalog::new();
    add_to(&mut catalog).expect("the bundled sims have distinct ids");
    catalog
}
