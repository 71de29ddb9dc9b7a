//! MuJoCo's warnings reach the `log` crate, not a MUJOCO_LOG.TXT in the working directory.
//! A test binary of its own: it installs the process's logger.
#![cfg(feature = "mujoco")]

use std::sync::Mutex;

static SEEN: Mutex<Vec<(log::Level, String, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        let entry = (
            record.level(),
            record.target().to_owned(),
            record.args().to_string(),
        );
        SEEN.lock().unwrap().push(entry);
    }
    fn flush(&self) {}
}

#[test]
fn a_compiler_warning_goes_to_log_and_no_log_file_appears() {
    log::set_logger(&Capture).unwrap();
    log::set_max_level(log::LevelFilter::Trace);
    let file = std::path::Path::new("MUJOCO_LOG.TXT");
    let _ = std::fs::remove_file(file);

    // `settotalmass` is deprecated in MuJoCo 3.17: compiling it warns.
    let model = ale_mujoco::Model::from_xml(
        r#"<mujoco><compiler settotalmass="2"/><worldbody><body><joint/>
           <geom size="0.1"/></body></worldbody></mujoco>"#,
    )
    .unwrap();
    let mut data = ale_mujoco::Data::new(&model);
    data.step();

    let seen = SEEN.lock().unwrap();
    assert!(
        seen.iter()
            .any(|(level, target, text)| *level == log::Level::Warn
                && target == "mujoco"
                && text.contains("settotalmass")),
        "{seen:?}"
    );
    assert!(!file.exists(), "MuJoCo wrote {}", file.display());
}
