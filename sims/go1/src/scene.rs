//! The compiled scene: `assets/scene.xml` over the Unitree Go1 model that scripts/fetch-go1
//! fetched, with Playground's PD gains, and the ids of what the sim reads from it. Compiled
//! once per process and shared by every sim.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ale_mujoco::Model;
use ale_sim::SimError;

use crate::layout::{ID, JOINTS, KD, KP, LEGS};

/// The environment variable naming Menagerie's `unitree_go1` folder (the one holding
/// `go1.xml`), instead of the one scripts/fetch-go1 fills.
pub const ASSETS_ENV: &str = "ALE_GO1_ASSETS";

/// Where scripts/fetch-go1 puts the model: `target/mujoco-menagerie/unitree_go1` under the
/// workspace root, as an absolute path recorded at build time.
pub const DEFAULT_ASSETS: &str = env!("ALE_GO1_DEFAULT_ASSETS");

const SCENE: &str = include_str!("../assets/scene.xml");

/// `soft_joint_pos_limit_factor`.
const SOFT_LIMIT_FACTOR: f64 = 0.95;

/// The folder the model is read from: `ALE_GO1_ASSETS` if set, else [`DEFAULT_ASSETS`].
pub fn assets_dir() -> PathBuf {
    std::env::var_os(ASSETS_ENV).map_or_else(|| PathBuf::from(DEFAULT_ASSETS), PathBuf::from)
}

/// The compiled scene and where the sim finds things in it.
#[derive(Debug)]
pub(crate) struct Scene {
    pub model: Model,
    pub imu: usize,
    pub feet: [usize; 4],
    pub sensors: Sensors,
    pub soft_limits: [[f64; 2]; JOINTS],
}

/// Where each sensor's values lie in `sensordata`.
#[derive(Debug)]
pub(crate) struct Sensors {
    pub gyro: Range<usize>,
    pub local_linvel: Range<usize>,
    pub upvector: Range<usize>,
    pub global_linvel: Range<usize>,
    pub global_angvel: Range<usize>,
    pub foot_linvel: [Range<usize>; 4],
    /// One number per foot: how many contacts with the floor it has (0 or 1).
    pub foot_contact: [usize; 4],
}

/// The shared scene, compiled on first use. A failure is not kept: once the model is
/// fetched, the next build finds it.
pub(crate) fn scene() -> Result<&'static Scene, SimError> {
    static SCENE: OnceLock<Scene> = OnceLock::new();
    if let Some(scene) = SCENE.get() {
        return Ok(scene);
    }
    let scene = compile(&assets_dir())?;
    Ok(SCENE.get_or_init(|| scene))
}

/// The elements inside go1.xml's `<mujoco>`, less what is only seen: the visual geoms (class
/// `visual`: meshes that collide with nothing, on bodies whose inertia the file gives) and the
/// mesh assets they show. The sim steps the same, bit for bit (a test here checks a rollout
/// against the whole model), and the meshes (37 MB compiled, with about twice that left by
/// their compiling) are not kept for the process's life; the drawing uses the collision
/// geoms. Refuses a file this reading might get wrong: a comment, a body without an
/// `<inertial>` (whose mass its visual geoms might carry), a mesh geom left behind.
fn physics_only(go1: &str) -> Result<String, &'static str> {
    fn is_element(tag: &str, name: &str) -> bool {
        tag.strip_prefix('<')
            .and_then(|t| t.strip_prefix(name))
            .is_some_and(|t| t.starts_with(|c: char| c.is_whitespace() || c == '/' || c == '>'))
    }
    let open = go1.find("<mujoco").ok_or("no <mujoco> element")?;
    let start = go1[open..]
        .find('>')
        .map(|j| open + j + 1)
        .ok_or("an unclosed <mujoco>")?;
    let end = go1.rfind("</mujoco>").ok_or("no </mujoco>")?;
    let mut rest = go1.get(start..end).ok_or("an empty <mujoco>")?;
    let mut out = String::with_capacity(rest.len());
    let mut bodies = 0;
    let mut inertials = 0;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        if rest[at..].starts_with("<!--") {
            return Err("a comment, which this reading does not expect");
        }
        let close = rest[at..]
            .find('>')
            .map(|j| at + j + 1)
            .ok_or("an unclosed tag")?;
        let tag = &rest[at..close];
        let shown_only = tag.ends_with("/>")
            && ((is_element(tag, "geom") && tag.contains("class=\"visual\""))
                || is_element(tag, "mesh"));
        bodies += usize::from(is_element(tag, "body"));
        inertials += usize::from(is_element(tag, "inertial"));
        if !shown_only {
            out.push_str(tag);
        }
        rest = &rest[close..];
    }
    out.push_str(rest);
    // A body without an <inertial> takes its mass from its geoms, visual ones included; and a
    // geom left on a mesh would name a mesh no longer there.
    if bodies != inertials {
        return Err("a body without an <inertial>, whose mass the visual geoms might carry");
    }
    if out.contains("mesh=\"") {
        return Err("a geom on a mesh outside the visual class");
    }
    Ok(out)
}

/// Playground's gains (`Go1Env.__init__`): every actuator a position servo of stiffness Kp,
/// every leg joint damped by Kd.
fn set_playground_gains(model: &mut Model) {
    for gain in model.actuator_gainprm_mut() {
        gain[0] = KP;
    }
    for bias in model.actuator_biasprm_mut() {
        bias[1] = -KP;
    }
    for damping in &mut model.dof_damping_mut()[6..] {
        *damping = KD;
    }
}

fn backend(problem: String) -> SimError {
    SimError::Backend(format!("{ID}: {problem}"))
}

fn compile(dir: &Path) -> Result<Scene, SimError> {
    if !ale_mujoco::AVAILABLE {
        return Err(backend(
            "it runs on MuJoCo, which this build lacks: run scripts/fetch-mujoco, then build \
             with `--features mujoco` (e.g. `cargo run --release --features mujoco`)"
                .into(),
        ));
    }
    let go1 = dir.join("go1.xml");
    let text = std::fs::read_to_string(&go1).map_err(|e| {
        backend(format!(
            "the Unitree Go1 model is not in {} (expected go1.xml there: {e}): run \
             scripts/fetch-go1 (scripts/fetch-mujoco runs it too), or set {ASSETS_ENV} to \
             MuJoCo Menagerie's unitree_go1 folder (the one holding go1.xml)",
            dir.display()
        ))
    })?;
    let go1 = go1.display().to_string();
    let unexpected = |what: &str| backend(format!("{go1} is not the Go1 model expected: {what}"));
    let body = physics_only(&text).map_err(&unexpected)?;
    let xml = SCENE.replace("<!--@GO1@-->", &body);
    let mut model =
        Model::from_xml(&xml).map_err(|e| backend(format!("{e} (model in {dir:?})")))?;
    if model.nq() != 7 + JOINTS || model.nv() != 6 + JOINTS || model.nu() != JOINTS {
        return Err(unexpected(&format!(
            "nq {}, nv {}, nu {} (expected 19, 18, 12)",
            model.nq(),
            model.nv(),
            model.nu()
        )));
    }

    set_playground_gains(&mut model);

    let site = |name: &str| {
        model
            .site_id(name)
            .ok_or_else(|| unexpected(&format!("no site {name}")))
    };
    let sensor = |name: &str, len: usize| match model.sensor(name) {
        Some(range) if range.len() == len => Ok(range),
        _ => Err(unexpected(&format!("no sensor {name} of {len} values"))),
    };
    let mut soft_limits = [[0.0; 2]; JOINTS];
    // Joint 0 is the trunk's free joint.
    for (soft, [low, high]) in soft_limits.iter_mut().zip(&model.joint_range()[1..]) {
        *soft = [low * SOFT_LIMIT_FACTOR, high * SOFT_LIMIT_FACTOR];
    }
    let feet = [
        site(LEGS[0])?,
        site(LEGS[1])?,
        site(LEGS[2])?,
        site(LEGS[3])?,
    ];
    let foot_linvel = |i: usize| sensor(&format!("{}_global_linvel", LEGS[i]), 3);
    let foot_contact = |i: usize| sensor(&format!("{}_floor_found", LEGS[i]), 1).map(|r| r.start);
    let sensors = Sensors {
        gyro: sensor("gyro", 3)?,
        local_linvel: sensor("local_linvel", 3)?,
        upvector: sensor("upvector", 3)?,
        global_linvel: sensor("global_linvel", 3)?,
        global_angvel: sensor("global_angvel", 3)?,
        foot_linvel: [
            foot_linvel(0)?,
            foot_linvel(1)?,
            foot_linvel(2)?,
            foot_linvel(3)?,
        ],
        foot_contact: [
            foot_contact(0)?,
            foot_contact(1)?,
            foot_contact(2)?,
            foot_contact(3)?,
        ],
    };
    Ok(Scene {
        imu: site("imu")?,
        feet,
        sensors,
        soft_limits,
        model,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_read_without_its_visual_meshes() {
        let go1 = r#"<mujoco model="go1">
  <default><default class="visual"><geom type="mesh" group="2"/></default></default>
  <asset><mesh class="go1" file="trunk.stl"/><material name="dark"/></asset>
  <worldbody><body name="trunk"><inertial mass="1"/><geom
    class="visual" mesh="trunk"/><geom class="collision" type="box"/></body></worldbody>
</mujoco>"#;
        let body = physics_only(go1).unwrap();
        assert!(
            !body.contains("mujoco") && !body.contains("<mesh") && !body.contains("mesh=\"trunk\""),
            "{body}"
        );
        assert!(
            body.contains(r#"<geom type="mesh" group="2"/>"#),
            "defaults stay: {body}"
        );
        assert!(
            body.contains(r#"<geom class="collision" type="box"/>"#) && body.contains("<material"),
            "{body}"
        );
        assert!(physics_only("<mujoco><!-- a > b --></mujoco>").is_err());
        assert!(
            physics_only(&go1.replace(r#"<inertial mass="1"/>"#, "")).is_err(),
            "no inertial"
        );
        assert!(physics_only(&go1.replace(r#"class="visual" mesh"#, "mesh")).is_err());
        assert!(physics_only("<robot/>").is_err());
    }

    /// The scene over go1.xml as it is, meshes included, through `<include>`.
    #[cfg(feature = "mujoco")]
    fn whole_model() -> Model {
        let dir = assets_dir();
        let include = format!(
            "<include file=\"{}\"/><compiler meshdir=\"{}\"/>",
            dir.join("go1.xml").display(),
            dir.join("assets").display()
        );
        Model::from_xml(&SCENE.replace("<!--@GO1@-->", &include)).unwrap()
    }

    #[cfg(feature = "mujoco")]
    #[test]
    fn without_its_visual_meshes_the_go1_steps_as_the_whole_model_bit_for_bit() {
        let stripped = &scene().unwrap().model;
        let mut whole = whole_model();
        assert_eq!(whole.nq(), stripped.nq());
        set_playground_gains(&mut whole);
        let mut a = ale_mujoco::Data::new(stripped);
        let mut b = ale_mujoco::Data::new(&whole);
        let mut rng = ale_sim::Rng::new(5);
        let mut contacts = 0;
        // Random targets over the joints' ranges: the robot thrashes, falls and rolls, its
        // legs and trunk in and out of contact.
        for step in 0..3000 {
            if step % 5 == 0 {
                for (i, ctrl) in a.ctrl_mut().iter_mut().enumerate() {
                    let [low, high] = stripped.ctrl_range()[i];
                    *ctrl = rng.uniform(low, high);
                }
                let ctrl = a.ctrl().to_vec();
                b.ctrl_mut().copy_from_slice(&ctrl);
            }
            a.step();
            b.step();
            assert_eq!(a.qpos(), b.qpos(), "qpos at step {step}");
            assert_eq!(a.qvel(), b.qvel(), "qvel at step {step}");
            assert_eq!(a.sensordata(), b.sensordata(), "sensors at step {step}");
            contacts += a.sensordata()[scene().unwrap().sensors.foot_contact[0]] as u32;
        }
        assert!(
            contacts > 100,
            "the feet touched the floor ({contacts} steps)"
        );
    }

    #[cfg(feature = "mujoco")]
    #[test]
    fn a_folder_without_the_model_says_to_fetch_it() {
        let err = compile(Path::new("/nonexistent/unitree_go1")).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, SimError::Backend(_)), "{message}");
        assert!(
            message.contains("scripts/fetch-go1")
                && message.contains("/nonexistent/unitree_go1")
                && message.contains(ASSETS_ENV),
            "{message}"
        );
    }

    #[cfg(feature = "mujoco")]
    #[test]
    fn the_scene_has_playgrounds_gains_and_timestep() {
        let scene = scene().unwrap();
        let mut model = scene.model.clone();
        assert_eq!(model.timestep(), crate::layout::SIM_DT);
        assert!(model.actuator_gainprm_mut().iter().all(|g| g[0] == KP));
        assert!(model.actuator_biasprm_mut().iter().all(|b| b[1] == -KP));
        assert!(model.dof_damping_mut()[6..].iter().all(|d| *d == KD));
        // The knee's range is Menagerie's (-2.818, -0.888), scaled as Playground scales it.
        assert_eq!(scene.soft_limits[2], [-2.818 * 0.95, -0.888 * 0.95]);
    }

    #[test]
    #[cfg(feature = "mujoco")]
    fn the_documented_leg_geometry_is_the_models() {
        use crate::layout::{CALF_LENGTH, HIP_POSITIONS, THIGH_LENGTH, THIGH_OFFSET};
        let scene = scene().unwrap();
        let model = &scene.model;
        // At qpos0 every joint angle is 0 and the trunk level: each leg hangs straight down.
        let mut data = ale_mujoco::Data::new(model);
        data.forward();
        let trunk = data.body_xpos(model.body_id("trunk").unwrap());
        let near = |a: [f64; 3], b: [f64; 3]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12);
        for (leg, name) in LEGS.iter().enumerate() {
            let [hx, hy] = HIP_POSITIONS[leg];
            let outward = if hy < 0.0 {
                -THIGH_OFFSET
            } else {
                THIGH_OFFSET
            };
            let at = |dx: f64, dy: f64, dz: f64| [trunk[0] + dx, trunk[1] + dy, trunk[2] + dz];
            let body =
                |part: &str| data.body_xpos(model.body_id(&format!("{name}_{part}")).unwrap());
            assert!(near(body("hip"), at(hx, hy, 0.0)), "{name}");
            assert!(near(body("thigh"), at(hx, hy + outward, 0.0)), "{name}");
            assert!(
                near(body("calf"), at(hx, hy + outward, -THIGH_LENGTH)),
                "{name}"
            );
            let foot = data.site_xpos(scene.feet[leg]);
            let expected = at(hx, hy + outward, -THIGH_LENGTH - CALF_LENGTH);
            assert!(near(foot, expected), "{name}: {foot:?} {expected:?}");
        }
    }
}
