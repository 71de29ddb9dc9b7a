//! Without the `mujoco` feature: the same API with no library behind it. No [`Model`] can be
//! made, so no [`Data`] either, and every method past the constructors is unreachable.

use std::ops::Range;
use std::path::Path;

use crate::{Error, Geom, Joint};

pub(crate) fn library_version() -> Option<&'static str> {
    None
}

#[derive(Debug, Clone)]
enum Never {}

/// A compiled model; none can be made without the `mujoco` feature.
#[derive(Debug, Clone)]
pub struct Model(Never);

impl Model {
    /// Always [`Error::NotBuilt`].
    pub fn from_xml(_xml: &str) -> Result<Model, Error> {
        Err(Error::NotBuilt)
    }

    /// Always [`Error::NotBuilt`].
    pub fn from_xml_file(_path: &Path) -> Result<Model, Error> {
        Err(Error::NotBuilt)
    }

    pub fn nq(&self) -> usize {
        match self.0 {}
    }

    pub fn nv(&self) -> usize {
        match self.0 {}
    }

    pub fn nu(&self) -> usize {
        match self.0 {}
    }

    pub fn nbody(&self) -> usize {
        match self.0 {}
    }

    pub fn timestep(&self) -> f64 {
        match self.0 {}
    }

    pub fn qpos0(&self) -> &[f64] {
        match self.0 {}
    }

    pub fn body_mass(&self) -> &[f64] {
        match self.0 {}
    }

    pub fn ctrl_range(&self) -> &[[f64; 2]] {
        match self.0 {}
    }

    pub fn body_id(&self, _name: &str) -> Option<usize> {
        match self.0 {}
    }

    pub fn site_id(&self, _name: &str) -> Option<usize> {
        match self.0 {}
    }

    pub fn geom_id(&self, _name: &str) -> Option<usize> {
        match self.0 {}
    }

    pub fn sensor(&self, _name: &str) -> Option<Range<usize>> {
        match self.0 {}
    }

    pub fn joint_range(&self) -> &[[f64; 2]] {
        match self.0 {}
    }

    pub fn dof_damping_mut(&mut self) -> &mut [f64] {
        match self.0 {}
    }

    pub fn actuator_gainprm_mut(&mut self) -> &mut [[f64; 10]] {
        match self.0 {}
    }

    pub fn actuator_biasprm_mut(&mut self) -> &mut [[f64; 10]] {
        match self.0 {}
    }
}

/// The simulation state of one [`Model`]; none can be made without the `mujoco` feature.
#[derive(Debug)]
pub struct Data(Never);

impl Data {
    pub fn new(model: &Model) -> Data {
        match model.0 {}
    }

    pub fn step(&mut self) {
        match self.0 {}
    }

    pub fn rne_post_constraint(&mut self) {
        match self.0 {}
    }

    pub fn forward(&mut self) {
        match self.0 {}
    }

    pub fn reset(&mut self) {
        match self.0 {}
    }

    pub fn time(&self) -> f64 {
        match self.0 {}
    }

    pub fn qpos(&self) -> &[f64] {
        match self.0 {}
    }

    pub fn qpos_mut(&mut self) -> &mut [f64] {
        match self.0 {}
    }

    pub fn qvel(&self) -> &[f64] {
        match self.0 {}
    }

    pub fn qvel_mut(&mut self) -> &mut [f64] {
        match self.0 {}
    }

    pub fn ctrl(&self) -> &[f64] {
        match self.0 {}
    }

    pub fn ctrl_mut(&mut self) -> &mut [f64] {
        match self.0 {}
    }

    pub fn sensordata(&self) -> &[f64] {
        match self.0 {}
    }

    pub fn actuator_force(&self) -> &[f64] {
        match self.0 {}
    }

    pub fn site_xmat(&self, _id: usize) -> [f64; 9] {
        match self.0 {}
    }

    pub fn body_xpos(&self, _id: usize) -> [f64; 3] {
        match self.0 {}
    }

    pub fn xipos(&self) -> &[[f64; 3]] {
        match self.0 {}
    }

    pub fn cinert(&self) -> &[[f64; 10]] {
        match self.0 {}
    }

    pub fn cvel(&self) -> &[[f64; 6]] {
        match self.0 {}
    }

    pub fn site_xpos(&self, _id: usize) -> [f64; 3] {
        match self.0 {}
    }

    pub fn cfrc_ext(&self) -> &[[f64; 6]] {
        match self.0 {}
    }

    pub fn qfrc_actuator(&self) -> &[f64] {
        match self.0 {}
    }

    pub fn qfrc_constraint(&self) -> &[f64] {
        match self.0 {}
    }
}

impl Model {
    pub fn geoms(&self) -> Vec<Geom> {
        match self.0 {}
    }

    pub fn joints(&self) -> Vec<Joint> {
        match self.0 {}
    }

    pub fn actuator_names(&self) -> Vec<String> {
        match self.0 {}
    }

    pub fn body_name(&self, _id: usize) -> Option<&str> {
        match self.0 {}
    }
}

impl Data {
    pub fn kinematics(&mut self) {
        match self.0 {}
    }

    pub fn geom_xpos(&self, _id: usize) -> [f64; 3] {
        match self.0 {}
    }

    pub fn geom_xmat(&self, _id: usize) -> [f64; 9] {
        match self.0 {}
    }
}
