//! `ale serve`, `ale harness run` and the example agent as three real processes.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{ALE, private_tempdir};

/// Builds a client example with the same profile as this test and returns its path.
fn example(name: &str) -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "ale-client", "--example", name])
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building example {name}");
    Path::new(ALE).parent().unwrap().join("examples").join(name)
}

/// `ale serve` on a free port; returns the child and its agent endpoint.
fn serve(state_dir: &Path) -> (Child, String) {
    let mut child = Command::new(ALE)
        .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(state_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let endpoint = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.trim()
                .strip_prefix("agent channel:")
                .map(|e| e.trim().to_string())
        })
        .expect("serve prints its agent endpoint");
    (child, endpoint)
}

fn sigterm(child: &mut Child) -> std::process::ExitStatus {
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn serve_harness_and_example_agent_as_three_processes() {
    let agent = example("cartpole_agent");
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let (mut server, endpoint) = serve(&state);
    assert!(state.join("harness.sock").exists());

    let output = Command::new(ALE)
        .args([
            "harness",
            "run",
            "--task",
            "cartpole-balance",
            "--progress",
            "json",
        ])
        // The privileged path the way DESIGN.md spells it: the socket itself. The agent,
        // sandboxed, reaches the evaluator through the agent socket (ALE_ENDPOINT=unix://…).
        .arg("--harness-socket")
        .arg(state.join("harness.sock"))
        .arg("--")
        .arg(&agent)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let report = &last["report"];
    assert_eq!(report["status"], "completed");
    assert_eq!(report["value"], 500.0);
    assert_eq!(report["episodes"].as_array().unwrap().len(), 20);
    assert!(report["score"]["score"].as_f64().unwrap() > 1.0);

    let run_id = report["run_id"].as_str().unwrap();
    let trajectory =
        std::fs::read_to_string(state.join("runs").join(run_id).join("trajectory.jsonl")).unwrap();
    let chain = ale_records::trajectory::verify(&trajectory).unwrap();
    assert_eq!(chain.head, report["trajectory"]["head"].as_str().unwrap());
    // The evaluator was already serving: the harness used it and left it running.
    assert!(state.join("harness.sock").exists());

    // --endpoint names the TCP channel for an unsandboxed agent; a sandboxed one cannot use it.
    let with_endpoint = |sandbox: &[&str]| {
        Command::new(ALE)
            .args([
                "harness",
                "run",
                "--task",
                "cartpole-balance",
                "--progress",
                "none",
            ])
            .arg("--harness-socket")
            .arg(state.join("harness.sock"))
            .args(["--endpoint", &endpoint])
            .args(sandbox)
            .arg("--")
            .arg(&agent)
            .output()
            .unwrap()
    };
    let refused = with_endpoint(&[]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--endpoint is for --sandbox none"));
    let over_tcp = with_endpoint(&["--sandbox", "none"]);
    assert!(
        over_tcp.status.success(),
        "{}",
        String::from_utf8_lossy(&over_tcp.stderr)
    );

    let status = sigterm(&mut server);
    assert!(status.success(), "{status}");
    assert!(!state.join("harness.sock").exists());
}

#[test]
fn a_second_evaluator_on_the_same_state_dir_is_refused() {
    let tmp = private_tempdir();
    let (mut first, _) = serve(tmp.path());
    let second = Command::new(ALE)
        .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("already serving"), "{stderr}");
    sigterm(&mut first);
}

#[test]
fn harness_run_starts_an_evaluator_when_none_serves_the_state_dir_and_stops_it() {
    let tmp = private_tempdir();
    let out = Command::new(ALE)
        .args([
            "harness",
            "run",
            "--task",
            "cartpole-balance",
            "--policy",
            "heuristic",
            "--progress",
            "none",
            "--state-dir",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("status        completed"), "{stdout}");
    assert!(
        !tmp.path().join("harness.sock").exists(),
        "the evaluator it started is stopped"
    );
    assert!(!tmp.path().join("agent.endpoint").exists());
}

/// Regression: `ale serve` exited when whoever read its ready line closed the pipe.
#[test]
fn serve_keeps_running_when_its_stdout_is_closed() {
    let tmp = private_tempdir();
    let mut child = Command::new(ALE)
        .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    // The ready line goes out once the sockets are bound: wait for them (a loaded machine may
    // take seconds), then give a write to the closed pipe time to kill it.
    let socket = tmp.path().join("harness.sock");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !socket.exists() && child.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "serve never bound its sockets"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert!(child.try_wait().unwrap().is_none(), "serve exited");
    assert!(socket.exists());
    assert!(sigterm(&mut child).success());
}

/// `ale serve` on `state_dir` that is expected to refuse to start; returns its stderr.
fn serve_refused(state_dir: &Path) -> String {
    let out = Command::new(ALE)
        .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(state_dir)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "serve started on {}",
        state_dir.display()
    );
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn serve_refuses_a_state_dir_prepared_by_another_user_and_leaves_it_alone() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: cannot make a directory of another user");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(&state, Some(65534), Some(65534)).unwrap();
    let stderr = serve_refused(&state);
    assert!(
        stderr.contains(&format!(
            "{} is owned by uid 65534, expected uid 0",
            state.display()
        )),
        "{stderr}"
    );
    let metadata = std::fs::metadata(&state).unwrap();
    assert_eq!(metadata.mode() & 0o777, 0o755, "not chmodded");
    assert_eq!(metadata.uid(), 65534);
    assert_eq!(
        std::fs::read_dir(&state).unwrap().count(),
        0,
        "nothing created in it"
    );
}

#[test]
fn serve_refuses_an_open_state_dir_and_tells_how_to_fix_it() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let stderr = serve_refused(&state);
    assert!(
        stderr.contains(&format!("chmod 700 {}", state.display())),
        "{stderr}"
    );
    let mode = std::fs::metadata(&state).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755);
}

#[test]
fn serve_never_removes_what_is_not_its_socket() {
    let tmp = private_tempdir();
    let socket = tmp.path().join("harness.sock");
    std::fs::write(&socket, "someone's notes").unwrap();
    let stderr = serve_refused(tmp.path());
    assert!(
        stderr.contains(&format!("{} is a regular file", socket.display()))
            && stderr.contains(&format!("rm {}", socket.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("already serving"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&socket).unwrap(), "someone's notes");

    std::fs::remove_file(&socket).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("gone.sock"), &socket).unwrap();
    let stderr = serve_refused(tmp.path());
    assert!(
        stderr.contains(&format!("{} is a symbolic link", socket.display())),
        "{stderr}"
    );
    assert!(
        std::fs::symlink_metadata(&socket)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn serve_replaces_a_stale_socket_and_announces_its_public_key() {
    let tmp = private_tempdir();
    // An evaluator that died left its socket behind.
    drop(std::os::unix::net::UnixListener::bind(tmp.path().join("harness.sock")).unwrap());
    let mut child = Command::new(ALE)
        .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let key = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            l.trim()
                .strip_prefix("evaluator key:")
                .map(|k| k.trim().to_string())
        })
        .expect("serve prints the evaluator's public key");
    let published = std::fs::read_to_string(tmp.path().join("evaluator.pub")).unwrap();
    assert_eq!(published, format!("{key}\n"));
    ale_records::signing_keys::parse_public_key(&key).unwrap();
    std::os::unix::net::UnixStream::connect(tmp.path().join("harness.sock"))
        .expect("the new evaluator answers on the socket");
    assert!(sigterm(&mut child).success());
}

/// Regression: `ale serve` announced it was ready before its SIGTERM handler was installed, so
/// a SIGTERM sent right after the announcement killed it instead of stopping it cleanly.
#[test]
fn serve_stops_cleanly_on_a_sigterm_sent_right_after_its_announcement() {
    for _ in 0..5 {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        let (mut child, _) = serve(&state);
        let status = sigterm(&mut child);
        assert!(status.success(), "{status}");
        assert!(
            !state.join("harness.sock").exists(),
            "shut down, not killed"
        );
    }
}
