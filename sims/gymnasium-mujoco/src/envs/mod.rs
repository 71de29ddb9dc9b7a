//! One module per Gymnasium env: its constants (the class's default arguments and
//! registration) and its [`crate::env::Rules`].

pub(crate) mod ant;
pub(crate) mod half_cheetah;
pub(crate) mod hopper;
pub(crate) mod humanoid;
pub(crate) mod humanoid_standup;
pub(crate) mod inverted_double_pendulum;
pub(crate) mod inverted_pendulum;
pub(crate) mod locomotion;
pub(crate) mod pusher;
pub(crate) mod reacher;
pub(crate) mod swimmer;
pub(crate) mod walker2d;
