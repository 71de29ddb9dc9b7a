//! The headless `ale` subcommands, run as a user would.

use std::path::Path;
use std::process::Command;

const ALE: &str = env!("CARGO_BIN_EXE_ale");

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sims/tests/fixtures")
}

#[test]
fn sims_replay_reports_each_file_and_the_totals_last() {
    let good = fixtures().join("Acrobot-v1/00.json");
    let tmp = tempfile::tempdir().unwrap();
    // A fixture whose 4th observation was nudged by a relative 1e-5.
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&good).unwrap()).unwrap();
    let x = value["observations"][3][0].as_f64().unwrap();
    value["observations"][3][0] = serde_json::json!(x * (1.0 + 1e-5) + 1e-5);
    let bad = tmp.path().join("tampered.json");
    std::fs::write(&bad, value.to_string()).unwrap();
    let missing = tmp.path().join("missing.json");

    let out = Command::new(ALE)
        .args(["sims", "replay"])
        .arg(&good)
        .arg(&bad)
        .arg(&missing)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("ok "), "{stdout}");
    assert!(
        lines[1].contains("tampered.json: step 3: observation[0]"),
        "{stdout}"
    );
    assert!(lines[2].contains("missing.json: cannot read"), "{stdout}");
    assert_eq!(*lines.last().unwrap(), "1 passed, 2 failed");

    // A seeded fixture says how its reset observation compared.
    let seeded = fixtures().join("Acrobot-v1/s05.json");
    let out = Command::new(ALE)
        .args(["sims", "replay"])
        .arg(&good)
        .arg(&seeded)
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].ends_with("steps)") && !lines[0].contains("reset"),
        "{stdout}"
    );
    assert!(
        lines[1].ends_with("steps, reset observation bit for bit)"),
        "{stdout}"
    );
    assert!(stdout.ends_with("2 passed, 0 failed\n"), "{stdout}");
}

#[test]
fn tasks_lists_every_bundled_task() {
    let out = Command::new(ALE).arg("tasks").output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    for id in [
        "cartpole-balance",
        "pendulum-swingup",
        "mountaincar",
        "mountaincar-continuous",
        "acrobot-swingup",
        "reacher-reach",
        "nav2d-barn",
        "mountaincar-sarsa-reproduction",
        "swarm-goals",
        // Listed with or without MuJoCo built in.
        "inverted-pendulum",
        "inverted-double-pendulum",
        "halfcheetah-run",
        "hopper-hop",
        "walker2d-walk",
        "swimmer-swim",
        "ant-walk",
        "reacher-mujoco",
        "humanoid-walk",
        "humanoid-standup",
        "pusher-push",
        "go1-joystick",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(&format!("{id} "))),
            "{id} missing:\n{stdout}"
        );
    }
}

#[test]
fn sims_list_names_every_sim() {
    let out = Command::new(ALE).args(["sims", "list"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    for sim in ale_tui::sim_catalog().iter() {
        assert!(stdout.contains(sim.id()), "{}", sim.id());
    }
    assert!(stdout.contains("HalfCheetah-v5"), "{stdout}");
}

/// Gymnasium's MuJoCo fixtures (docs/sims.md), one per env.
fn mujoco_fixtures() -> Vec<std::path::PathBuf> {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../sims/gymnasium-mujoco/tests/fixtures");
    ale_sims_mujoco::ENV_IDS
        .iter()
        .map(|id| root.join(id).join("00.json"))
        .collect()
}

/// The binary finds libmujoco through its run path: the replay runs with no LD_LIBRARY_PATH
/// (which `cargo test` sets, and a child would inherit).
#[cfg(feature = "mujoco")]
#[test]
fn sims_replay_runs_gymnasiums_mujoco_envs_with_no_library_path() {
    let out = Command::new(ALE)
        .args(["sims", "replay"])
        .args(mujoco_fixtures())
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let n = ale_sims_mujoco::ENV_IDS.len();
    assert!(
        stdout.ends_with(&format!("{n} passed, 0 failed\n")),
        "{stdout}"
    );
}

#[cfg(not(feature = "mujoco"))]
#[test]
fn without_mujoco_a_replay_says_how_to_get_it() {
    let out = Command::new(ALE)
        .args(["sims", "replay"])
        .args(mujoco_fixtures())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout.contains("scripts/fetch-mujoco") && stdout.contains("--features mujoco"),
        "{stdout}"
    );
}

/// `--help` texts are part of the interface: reviewed like code when they change.
#[test]
fn help_texts() {
    for (name, args) in [
        ("ale", vec!["--help"]),
        ("serve", vec!["serve", "--help"]),
        ("harness_run", vec!["harness", "run", "--help"]),
        ("harness_verify", vec!["harness", "verify", "--help"]),
        ("sims_replay", vec!["sims", "replay", "--help"]),
        ("plot", vec!["plot", "--help"]),
        ("conformance", vec!["conformance", "--help"]),
        ("load", vec!["load", "--help"]),
    ] {
        let out = Command::new(ALE)
            .args(&args)
            .env("COLUMNS", "100")
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}");
        insta::assert_snapshot!(name, String::from_utf8_lossy(&out.stdout));
    }
}

#[test]
fn the_console_without_a_terminal_says_so_instead_of_panicking() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(ALE)
        .args(["--state-dir", tmp.path().to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the console needs a terminal"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A listing piped into a reader that has gone (`ale harness runs | head`) ends as a Unix tool
/// does, by SIGPIPE, not with a panic at its next line.
#[test]
fn a_listing_into_a_closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    std::fs::create_dir_all(state.join("runs")).unwrap();
    // The reading end is closed before the command starts: its first line meets a broken pipe.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(ALE)
        .args(["harness", "runs", "--state-dir", state.to_str().unwrap()])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "{:?}: {stderr}",
        out.status
    );
}

/// Regression: a task file whose time budget no clock can add made the evaluator panic at
/// `StartEvalSession`; `ale serve` now refuses it at start, naming the file and the key.
#[test]
fn serve_refuses_a_task_file_with_an_out_of_bounds_number() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    std::fs::create_dir(&tasks).unwrap();
    let text = include_str!("../../server/tasks/cartpole-balance.toml").replace(
        "time_budget_seconds = 600",
        "time_budget_seconds = 9223372036854775807",
    );
    let file = tasks.join("huge.toml");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(ALE)
        .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(tmp.path().join("state"))
        .arg("--tasks-dir")
        .arg(&tasks)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: `eval.time_budget_seconds` must be within 0..=604800",
            file.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `ale serve` logging into a file or a pipe writes plain text: no colour codes.
#[test]
fn serve_logs_are_plain_when_not_on_a_terminal() {
    use std::io::{BufRead, BufReader};
    let tmp = tempfile::tempdir().unwrap();
    let mut server = Command::new(ALE)
        .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(tmp.path().join("state"))
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = server.stdout.take().unwrap();
    for line in BufReader::new(stdout).lines() {
        if line.unwrap().contains("agent channel") {
            break;
        }
    }
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(server.id() as i32, libc::SIGTERM);
    }
    let out = server.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("evaluator listening"), "{stderr}");
    assert!(!stderr.contains('\x1b'), "colour codes in: {stderr:?}");
}
