//! Loads each MJCF file named on the command line, steps it 1000 times with zero controls and
//! prints its sizes: `cargo run -p ale-mujoco --features mujoco --example load_xml -- FILE...`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut failed = false;
    for path in std::env::args_os().skip(1) {
        let path = std::path::PathBuf::from(path);
        match ale_mujoco::Model::from_xml_file(&path) {
            Ok(model) => {
                let mut data = ale_mujoco::Data::new(&model);
                for _ in 0..1000 {
                    data.step();
                }
                let finite = data.qpos().iter().all(|q| q.is_finite());
                println!(
                    "{}: nq {} nv {} nu {} dt {} -> t {:.3} qpos finite {finite}",
                    path.display(),
                    model.nq(),
                    model.nv(),
                    model.nu(),
                    model.timestep(),
                    data.time()
                );
                failed |= !finite;
            }
            Err(e) => {
                println!("{}: {e}", path.display());
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
