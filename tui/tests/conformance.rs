//! `ale conformance` and `ale load` against a real evaluator: ours must pass its own suite.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ale_reliability::conformance::{self, CASES, Needs, Options, Verdict};

use common::{ALE, private_tempdir};

/// Tasks with budgets small enough for the suite's budget cases to run out.
fn budget_tasks() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/conformance-tasks")
}

/// `ale serve` on a free port, stopped (SIGTERM) when dropped.
struct Server {
    child: Child,
    endpoint: String,
}

impl Server {
    fn start(state_dir: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(ALE)
            .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(state_dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let endpoint = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| {
                l.trim()
                    .strip_prefix("agent channel:")
                    .map(|e| e.trim().to_string())
            })
            .expect("serve prints its agent endpoint");
        Server { child, endpoint }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn our_evaluator_passes_every_case_of_the_conformance_suite() {
    let tmp = private_tempdir();
    let state = tmp.path().join("state");
    let tasks = budget_tasks();
    let server = Server::start(&state, &["--tasks-dir", tasks.to_str().unwrap()]);
    let out = Command::new(ALE)
        .args([
            "conformance",
            "--endpoint",
            &server.endpoint,
            "--harness-socket",
        ])
        .arg(state.join("harness.sock"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    // Every case ran (none skipped: the budget tasks and the harness socket are there).
    assert_eq!(
        *lines.last().unwrap(),
        format!("{} passed, 0 failed", CASES.len()),
        "{stdout}"
    );
    for (case, line) in CASES.iter().zip(&lines) {
        assert_eq!(*line, format!("ok    {}", case.name), "{stdout}");
    }
}

/// The suite runs in-process too; without the harness socket, exactly the cases that need it
/// are skipped, each saying so.
#[test]
fn without_the_harness_socket_its_cases_are_skipped_with_the_reason() {
    let tmp = private_tempdir();
    let state = tmp.path().join("state");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let evaluator = ale_server::Evaluator::new(
            ale_server::TaskRegistry::builtin(&ale_sims::catalog()).unwrap(),
            &state,
        )
        .unwrap();
        let server = ale_server::serve::start(Arc::new(evaluator), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let options = Options {
            endpoint: server.agent_endpoint(),
            harness_socket: None,
        };
        let mut reports = Vec::new();
        let summary = conformance::run(&options, |case| reports.push(case.clone()))
            .await
            .unwrap();
        server.shutdown().await;
        let text: Vec<String> = reports.iter().map(ToString::to_string).collect();
        assert_eq!(summary.failed, 0, "{text:#?}");
        for (case, report) in CASES.iter().zip(&reports) {
            match (&report.verdict, case.needs) {
                (Verdict::Skipped(why), Needs::Harness) => {
                    assert!(why.contains("--harness-socket"), "{report}")
                }
                (Verdict::Passed, Needs::Agent) => {}
                _ => panic!("{report}"),
            }
        }
    });
}

#[test]
fn an_unreachable_endpoint_is_an_error_not_a_report() {
    let out = Command::new(ALE)
        .args([
            "conformance",
            "--endpoint",
            "unix:///nonexistent/agent.sock",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot connect to the evaluator at unix:///nonexistent/agent.sock"),
        "{stderr}"
    );
}

#[test]
fn load_reports_the_step_rate_latency_and_errors() {
    let tmp = private_tempdir();
    let server = Server::start(&tmp.path().join("state"), &[]);
    let out = Command::new(ALE)
        .args([
            "load",
            "--endpoint",
            &server.endpoint,
            "--clients",
            "2",
            "--envs-per-client",
            "2",
            "--steps",
            "50",
            "--server-pid",
            &server.child.id().to_string(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.last(), Some(&"errors: 0"), "{stdout}");
    assert!(
        lines.contains(&"clients: 2 × 2 practice envs of cartpole-balance (4 live)"),
        "{stdout}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("steps: 200 in ")),
        "{stdout}"
    );
    let rate: f64 = lines
        .iter()
        .find_map(|l| l.strip_prefix("steps/s: "))
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no steps/s line: {stdout}"));
    assert!(rate > 0.0, "{stdout}");
    assert!(
        lines.iter().any(|l| l.starts_with("step latency: p50 ")),
        "{stdout}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("server rss: ")),
        "{stdout}"
    );
}

#[test]
fn load_counts_refused_envs_as_errors() {
    let tmp = private_tempdir();
    let server = Server::start(
        &tmp.path().join("state"),
        &["--max-practice-envs-per-connection", "1"],
    );
    let out = Command::new(ALE)
        .args([
            "load",
            "--endpoint",
            &server.endpoint,
            "--clients",
            "1",
            "--envs-per-client",
            "2",
            "--steps",
            "10",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("(1 live)"), "{stdout}");
    assert!(
        stdout.contains("\nerrors: 1\nfirst error: CreateEnv: "),
        "{stdout}"
    );
    assert!(stdout.contains("steps: 10 in "), "{stdout}");
}
