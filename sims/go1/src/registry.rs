//! This crate's entry in the simulator catalog.

use ale_sim::{DuplicateSim, Sim, SimCatalog, SimConfig, SimEntry};

use crate::layout::{EPISODE_STEPS, ID};
use crate::sim::{COUNTERS, Go1Joystick, spaces};

/// Adds go1-joystick-flat to `catalog`, whether or not MuJoCo is built in (without it, or
/// without the model, building it says what to fetch). It takes no `[sim_config]` options and
/// runs in-process, cheaply enough for the batch pool; it draws from the observation
/// ([`crate::view`]).
pub fn add_to(catalog: &mut SimCatalog) -> Result<(), DuplicateSim> {
    let entry = SimEntry::new(ID, EPISODE_STEPS, |config: &SimConfig<'_>| {
        config.no_options(ID)?;
        Ok(Box::new(Go1Joystick::new(config.max_steps)?) as Box<dyn Sim>)
    });
    let (observation, action) = spaces();
    catalog.add(
        entry
            .spaces(observation, action)
            .counters(&COUNTERS)
            .draw_with(crate::view::draw)
            .batch(),
    )
}

/// A catalog of this crate's sim alone.
pub fn catalog() -> SimCatalog {
    let mut catalog = SimCatalog::new();
    add_to(&mut catalog).expect("an empty catalog has no id taken");
    catalog
}
