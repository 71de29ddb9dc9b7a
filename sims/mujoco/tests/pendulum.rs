//! A point-mass pendulum compiled and stepped by the MuJoCo library linked in (with the
//! `mujoco` feature), or the wrapper's answer when no library is built in (without it).

use ale_mujoco::{AVAILABLE, Error, Model};

/// A 1 kg ball on a massless 1 m rod, hinged about y at the origin, hanging along -z,
/// with a motor on the hinge. 2 ms steps.
const PENDULUM: &str = r#"
<mujoco model="pendulum">
  <option timestep="0.002"/>
  <worldbody>
    <body name="pole">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom type="sphere" size="0.01" pos="0 0 -1" mass="1"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="hinge"/>
  </actuator>
</mujoco>
"#;

#[cfg(feature = "mujoco")]
mod linked {
    use super::*;
    use ale_mujoco::Data;

    #[test]
    fn the_linked_library_is_mujoco_3_17_0() {
        assert_eq!(
            ale_mujoco::library_version(),
            Some(ale_mujoco::MUJOCO_VERSION)
        );
        assert_eq!(AVAILABLE, ale_mujoco::library_version().is_some());
    }

    #[test]
    fn a_thousand_steps_swing_the_pendulum_as_the_small_angle_solution_does() {
        let model = Model::from_xml(PENDULUM).unwrap();
        assert_eq!((model.nq(), model.nv(), model.nu()), (1, 1, 1));
        assert_eq!(model.timestep(), 0.002);

        let mut data = Data::new(&model);
        assert_eq!(data.qpos(), &[0.0]);
        let theta0 = 0.05;
        data.qpos_mut()[0] = theta0;
        // I = m L^2 + 2/5 m r^2 about the hinge; gravity's torque is m g L sin(theta).
        let omega = (9.81 / (1.0 + 0.4 * 0.01f64.powi(2))).sqrt();
        let mut worst = 0.0f64;
        for _ in 0..1000 {
            data.step();
            let expected = theta0 * (omega * data.time()).cos();
            worst = worst.max((data.qpos()[0] - expected).abs());
        }
        assert!((data.time() - 2.0).abs() < 1e-9, "time {}", data.time());
        assert!(
            worst < 1e-3,
            "qpos strayed {worst} rad from theta0 cos(omega t)"
        );
        // Past three half-periods (pi / omega = 1.003 s each), back near +theta0 at t = 2 s.
        assert!((data.qpos()[0] - theta0 * (omega * 2.0).cos()).abs() < 1e-3);

        data.reset();
        assert_eq!(
            (data.time(), data.qpos()[0], data.qvel()[0]),
            (0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn the_motor_drives_the_hinge() {
        let model = Model::from_xml(PENDULUM).unwrap();
        let mut data = Data::new(&model);
        data.ctrl_mut()[0] = 1.0;
        for _ in 0..100 {
            data.step();
        }
        // 1 N m against gravity's restoring torque: it turns, positively, and stays small.
        assert!(
            data.qpos()[0] > 0.0 && data.qpos()[0] < 0.2,
            "qpos {}",
            data.qpos()[0]
        );
    }

    /// A 2 kg block on a vertical slide, resting on the floor, with a site on its top face
    /// and a limited motor along the slide.
    const BLOCK: &str = r#"
<mujoco model="block">
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="block" pos="0 0 0.1">
      <joint name="z" type="slide" axis="0 0 1"/>
      <geom type="box" size="0.1 0.1 0.1" mass="2"/>
      <site name="top" pos="0 0 0.1"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="z" ctrllimited="true" ctrlrange="-5 5"/>
  </actuator>
</mujoco>
"#;

    #[test]
    fn names_ranges_positions_and_contact_forces_of_a_resting_block() {
        let model = Model::from_xml(BLOCK).unwrap();
        assert_eq!(model.body_id("block"), Some(1));
        assert_eq!(model.site_id("top"), Some(0));
        assert_eq!(model.body_id("nope"), None);
        assert_eq!(model.body_id("blo\0ck"), None);
        assert_eq!(model.nbody(), 2);
        assert_eq!(model.qpos0(), &[0.0]);
        assert_eq!(model.ctrl_range(), &[[-5.0, 5.0]]);

        let mut data = Data::new(&model);
        for _ in 0..500 {
            data.step();
        }
        let weight = 2.0 * 9.81;
        assert!((data.body_xpos(1)[2] - 0.1).abs() < 1e-2);
        assert!((data.site_xpos(0)[2] - 0.2).abs() < 1e-2);
        assert!((data.qfrc_constraint()[0] - weight).abs() < 1e-2 * weight);
        // mj_step leaves the bodies' external forces alone; mj_rnePostConstraint computes
        // them: the floor holds the block up with its weight, as a (torque, force) pair.
        assert_eq!(data.cfrc_ext(), &[[0.0; 6]; 2]);
        data.rne_post_constraint();
        let force = data.cfrc_ext()[1];
        assert!((force[5] - weight).abs() < 1e-2 * weight, "{force:?}");
    }

    /// A 1 kg ball on a vertical slide (limited to ±1 m, critically damped), held by a position
    /// servo (kp 10), with sensors on it and a site turned a quarter turn about z.
    const SERVO: &str = r#"
<mujoco model="servo">
  <option timestep="0.002"/>
  <worldbody>
    <body name="ball">
      <joint name="z" type="slide" axis="0 0 1" range="-1 1" damping="6"/>
      <geom name="ball" type="sphere" size="0.05" mass="1"/>
      <site name="mark" euler="0 0 90"/>
    </body>
  </worldbody>
  <actuator>
    <position joint="z" kp="10"/>
  </actuator>
  <sensor>
    <jointpos joint="z" name="height"/>
    <framezaxis objtype="site" objname="mark" name="up"/>
  </sensor>
</mujoco>
"#;

    /// Holds the servo's target 0 for 2000 steps; the final (height, actuator force).
    fn settle(data: &mut Data) -> (f64, f64) {
        for _ in 0..2000 {
            data.step();
        }
        (data.qpos()[0], data.actuator_force()[0])
    }

    #[test]
    fn gains_and_damping_change_after_compiling_and_sensors_read_back() {
        let mut model = Model::from_xml(SERVO).unwrap();
        assert_eq!(model.geom_id("ball"), Some(0));
        assert_eq!(model.sensor("height"), Some(0..1));
        assert_eq!(model.sensor("up"), Some(1..4));
        assert_eq!(model.sensor("nope"), None);
        assert_eq!(model.joint_range(), &[[-1.0, 1.0]]);
        assert_eq!(model.dof_damping_mut(), &[6.0]);
        assert_eq!(model.actuator_gainprm_mut()[0][0], 10.0);
        assert_eq!(model.actuator_biasprm_mut()[0][1], -10.0);

        // A servo of stiffness kp sags m g / kp below its target, pushing with m g.
        let mut soft = Data::new(&model);
        model.actuator_gainprm_mut()[0][0] = 100.0;
        model.actuator_biasprm_mut()[0][1] = -100.0;
        model.dof_damping_mut()[0] = 20.0;
        let mut stiff = Data::new(&model);
        let (sag, force) = settle(&mut soft);
        assert!(
            (sag + 0.981).abs() < 1e-2 && (force - 9.81).abs() < 1e-2,
            "{sag} {force}"
        );
        // The Data made before the change keeps the model it was made with.
        let (sag, force) = settle(&mut stiff);
        assert!(
            (sag + 0.0981).abs() < 1e-3 && (force - 9.81).abs() < 1e-2,
            "{sag} {force}"
        );

        stiff.forward();
        assert_eq!(stiff.sensordata()[0], stiff.qpos()[0]);
        assert_eq!(&stiff.sensordata()[1..4], &[0.0, 0.0, 1.0]);
        // The site's x axis points along world y.
        let xmat = stiff.site_xmat(0);
        let x_axis = [xmat[0], xmat[3], xmat[6]];
        assert!(
            (x_axis[1] - 1.0).abs() < 1e-12 && x_axis[0].abs() < 1e-12,
            "{xmat:?}"
        );
    }

    #[test]
    fn masses_inertias_and_a_clamped_motor_of_the_block() {
        let model = Model::from_xml(BLOCK).unwrap();
        assert_eq!(model.body_mass(), &[0.0, 2.0]);
        let mut data = Data::new(&model);
        data.forward();
        assert_eq!(data.xipos()[1], [0.0, 0.0, 0.1]);
        // cinert: six inertia terms, the mass times the offset from the subtree's centre of
        // mass (none: the block is its own subtree), then the mass.
        assert_eq!(data.cinert().len(), 2);
        assert_eq!(data.cinert()[1][6..], [0.0, 0.0, 0.0, 2.0]);
        // A control beyond the range stays as set; the force it makes is clamped to 5 N.
        data.ctrl_mut()[0] = 7.0;
        data.step();
        assert_eq!(data.ctrl(), &[7.0]);
        assert_eq!(data.qfrc_actuator(), &[5.0]);
    }

    #[test]
    fn the_swinging_pendulums_com_velocity_turns_about_the_hinge() {
        let model = Model::from_xml(PENDULUM).unwrap();
        let mut data = Data::new(&model);
        data.qvel_mut()[0] = 2.0;
        data.forward();
        // cvel: rotation (about y, at the hinge's rate), then translation.
        let cvel = data.cvel()[1];
        assert_eq!(cvel[..3], [0.0, 2.0, 0.0]);
        assert_eq!(data.cvel()[0], [0.0; 6]);
    }

    #[test]
    fn a_bad_model_is_an_error_not_a_crash() {
        let err = Model::from_xml(
            "<mujoco><worldbody><body><geom type=\"nope\"/></body></worldbody></mujoco>",
        )
        .unwrap_err();
        let Error::Model(message) = &err else {
            panic!("{err:?}")
        };
        assert!(!message.is_empty());
        assert!(Model::from_xml("not xml").is_err());
    }

    #[test]
    fn data_moves_between_threads() {
        fn send<T: Send>(_: &T) {}
        let model = Model::from_xml(PENDULUM).unwrap();
        let data = Data::new(&model);
        send(&data);
        std::thread::spawn(move || {
            let mut data = data;
            data.step();
            data.time()
        })
        .join()
        .unwrap();
    }
}

#[cfg(not(feature = "mujoco"))]
#[test]
fn without_the_feature_no_model_can_be_made() {
    assert_eq!(ale_mujoco::library_version(), None);
    assert_eq!(AVAILABLE, ale_mujoco::library_version().is_some());
    assert_eq!(Model::from_xml(PENDULUM).unwrap_err(), Error::NotBuilt);
    assert!(Error::NotBuilt.to_string().contains("scripts/fetch-mujoco"));
}
