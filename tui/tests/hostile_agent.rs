//! The trust boundary against a hostile agent. Each attack is a small program (built here with
//! `rustc` from `tests/hostile/agent.rs`) run by a real `ale harness run` against a real
//! evaluator; it reports on stdout, which the harness keeps as `agent.log` in the run folder,
//! and then plays honestly. Every attack must fail, every run must score what its play earned,
//! and a run folder forged afterwards with the public chain rule must fail `verify`, naming
//! the signature.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ale_records::trajectory::{Chain, EventKind, Level};

const ALE: &str = env!("CARGO_BIN_EXE_ale");

/// The hostile agent, compiled once, and a hard link to `ale` for its honest second stage, in
/// one folder any user may enter (the sandboxed agent runs as `nobody` when the tests run as
/// root). The folder is the agent's `--workdir`, so both are reachable in the sandbox wherever
/// the checkout is (under `/tmp` or a home the sandbox hides, say).
struct Kit {
    dir: PathBuf,
    agent: PathBuf,
    ale: PathBuf,
}

fn kit() -> &'static Kit {
    static KIT: OnceLock<Kit> = OnceLock::new();
    KIT.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-agent");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let agent = dir.join("agent");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile/agent.rs");
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let status = Command::new(rustc)
            .args(["--edition", "2024", "-O", "-o"])
            .arg(&agent)
            .arg(&source)
            .status()
            .expect("rustc runs");
        assert!(status.success(), "the hostile agent does not compile");
        let ale = dir.join("ale");
        if std::fs::hard_link(ALE, &ale).is_err() {
            std::fs::copy(ALE, &ale).unwrap();
        }
        Kit { dir, agent, ale }
    })
}

/// The harness arguments from `--workdir` on: the hostile agent's `attack`, then the honest
/// heuristic policy.
fn agent_args(attack: &str, marker: &str) -> Vec<String> {
    agent_args_in(&kit().dir, attack, marker)
}

/// [`agent_args`] with another working directory.
fn agent_args_in(workdir: &Path, attack: &str, marker: &str) -> Vec<String> {
    let kit = kit();
    let path = |p: &Path| p.to_str().unwrap().to_string();
    vec![
        "--workdir".into(),
        path(workdir),
        "--".into(),
        path(&kit.agent),
        attack.into(),
        marker.into(),
        path(&kit.ale),
        "agent".into(),
        "--policy".into(),
        "heuristic".into(),
    ]
}

/// Whether uid 65534 can run `ale` and the hostile agent from where they are (every folder on
/// the way searchable by others): the unprivileged tests need it.
fn nobody_can_run_the_kit() -> bool {
    use std::os::unix::fs::PermissionsExt;
    [Path::new(ALE), kit().agent.as_path()].iter().all(|path| {
        path.ancestors()
            .all(|p| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
    })
}

/// A task small enough to play quickly: CartPole, three rollouts.
fn tasks_dir(root: &Path) -> PathBuf {
    let dir = root.join("tasks");
    std::fs::create_dir(&dir).unwrap();
    let text = include_str!("../../server/tasks/cartpole-balance.toml")
        .replace("episodes = 20", "episodes = 3");
    assert!(text.contains("episodes = 3"));
    std::fs::write(dir.join("cartpole.toml"), text.clone()).unwrap();
    let batch = text
        .replace(
            "id = \"cartpole-balance\"",
            &format!("id = \"{BATCH_TASK}\""),
        )
        .replace("mode = \"interactive\"", "mode = \"batch\"")
        + "\n[submission]\nsubmission_path = \"/run/ale/submission\"\nentrypoint = \"policy.safetensors\"\nformat = \"mlp-safetensors\"\n";
    assert!(
        batch.contains(&format!("id = \"{BATCH_TASK}\"")) && batch.contains("mode = \"batch\"")
    );
    std::fs::write(dir.join("cartpole-batch.toml"), batch.clone()).unwrap();
    // Long enough that the run outlasts several of the harness's polls.
    let long = batch
        .replace(
            &format!("id = \"{BATCH_TASK}\""),
            &format!("id = \"{LONG_BATCH_TASK}\""),
        )
        .replace("episodes = 3", "episodes = 1000")
        .replace("max_total_steps = 10000", "max_total_steps = 0");
    assert!(long.contains("episodes = 1000") && long.contains("max_total_steps = 0"));
    std::fs::write(dir.join("cartpole-batch-long.toml"), long).unwrap();
    dir
}

/// [`BATCH_TASK`] with a thousand rollouts.
const LONG_BATCH_TASK: &str = "cartpole-batch-long";

/// CartPole as a batch task, three rollouts.
const BATCH_TASK: &str = "cartpole-batch";

/// A linear controller in the `mlp-safetensors` format, written by hand: output 1 (push right)
/// scores `gains · observation`, output 0 scores 0.
fn linear_policy_file(gains: [f32; 4]) -> Vec<u8> {
    let mut weights = [0.0f32; 4].to_vec();
    weights.extend(gains);
    let mut header =
        r#"{"0.weight":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]}}"#.to_string();
    while !header.len().is_multiple_of(8) {
        header.push(' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header.as_bytes());
    file.extend(weights.iter().flat_map(|w| w.to_le_bytes()));
    file
}

/// An evaluator on a fresh state dir, stopped (and its sessions ended) when dropped. The state
/// dir is outside `/tmp`, which the sandbox replaces anyway, so that hiding it is what keeps
/// the agent out.
struct Evaluator {
    child: Child,
    state: PathBuf,
    _tmp: tempfile::TempDir,
}

fn fresh_state_dir() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hostile-state-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

impl Evaluator {
    fn start() -> Evaluator {
        let tmp = tempfile::tempdir().unwrap();
        let state = fresh_state_dir();
        let mut child = Command::new(ALE)
            .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(&state)
            .arg("--tasks-dir")
            .arg(tasks_dir(tmp.path()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::os::unix::net::UnixStream::connect(state.join("harness.sock")).is_err() {
            assert!(Instant::now() < deadline, "the evaluator did not start");
            assert!(child.try_wait().unwrap().is_none(), "the evaluator exited");
            std::thread::sleep(Duration::from_millis(50));
        }
        Evaluator {
            child,
            state,
            _tmp: tmp,
        }
    }
}

impl Drop for Evaluator {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

struct Run {
    report: serde_json::Value,
    run_dir: PathBuf,
    agent_log: String,
}

/// `ale harness run` of the hostile agent's `attack` (then the heuristic policy), with
/// `extra` harness flags. The harness's pid reaches the agent as HOSTILE_HARNESS_PID: the
/// shell execs into the harness, so `$$` is its pid.
fn run_attack(evaluator: &Evaluator, attack: &str, marker: &str, extra: &[&str]) -> Run {
    let output = start_attack(evaluator, attack, marker, extra)
        .wait_with_output()
        .unwrap();
    finished_run(attack, &output)
}

/// [`run_attack`], started: the harness runs while the caller does something else.
fn start_attack(evaluator: &Evaluator, attack: &str, marker: &str, extra: &[&str]) -> Child {
    let state = evaluator.state.to_str().unwrap();
    let mut script = format!(
        "exec {ALE} harness run --task cartpole-balance --progress json --state-dir {state} \
         --env HOSTILE_STATE_DIR={state} --env HOSTILE_HARNESS_PID=$$"
    );
    for flag in extra {
        script.push(' ');
        script.push_str(flag);
    }
    for arg in agent_args(attack, marker) {
        script.push(' ');
        script.push_str(&arg);
    }
    Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The run a successful `ale harness run --progress json` reported on its last line.
fn finished_run(what: &str, output: &std::process::Output) -> Run {
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    // 0: every rollout played; 3: the agent ended early (stopped by a limit, say).
    assert!(
        matches!(output.status.code(), Some(0 | 3)),
        "{what}: the harness failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let run_dir = PathBuf::from(last["run_dir"].as_str().unwrap());
    let agent_log = std::fs::read_to_string(run_dir.join("agent.log")).unwrap();
    Run {
        report: last["report"].clone(),
        run_dir,
        agent_log,
    }
}

/// The attack lines of an agent log, each checked to have failed.
fn assert_attack_failed(run: &Run, attack: &str) {
    let lines: Vec<&str> = run
        .agent_log
        .lines()
        .filter(|l| l.starts_with("ATTACK "))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("ATTACK {attack}:"))),
        "{attack}: the agent reported nothing:\n{}",
        run.agent_log
    );
    for line in &lines {
        assert!(line.contains(": FAILED "), "{attack} got through: {line}");
    }
}

/// The run scored what its play earned: the heuristic balances CartPole for all 500 steps of
/// every rollout, the score is re-derived from the signed trajectory, and verify passes.
fn assert_scored_honestly(run: &Run) {
    assert_eq!(run.report["status"], "completed", "{:?}", run.report);
    assert_eq!(run.report["value"].as_f64(), Some(500.0));
    let (ok, text) = verify_output(&run.run_dir);
    assert!(ok, "{text}");
    assert!(text.contains("sandboxed (offline"), "{text}");
}

fn host_processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(entry.file_name().to_string_lossy().to_string());
        }
    }
    found
}

#[test]
fn every_attack_from_inside_the_sandbox_fails_and_the_run_scores_its_play() {
    let evaluator = Evaluator::start();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_addr = format!("HOSTILE_TCP_ADDR={}", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();

    for attack in [
        "read-secrets",
        "list-state-dir",
        "harness-socket",
        "write-runs",
        "proc-cmdline",
    ] {
        let run = run_attack(&evaluator, attack, "unused", &[]);
        assert_attack_failed(&run, attack);
        assert_scored_honestly(&run);
    }
    assert!(!evaluator.state.join("runs/forged.txt").exists());

    let run = run_attack(&evaluator, "tcp", "unused", &["--env", &tcp_addr]);
    assert_attack_failed(&run, "tcp");
    assert!(
        listener.accept().is_err(),
        "a connection from the sandbox reached the test's listener"
    );
    assert_scored_honestly(&run);

    // The daemon is gone when `ale harness run` returns.
    let marker = format!("daemon-marker-{}", std::process::id());
    let run = run_attack(&evaluator, "daemon", &marker, &[]);
    assert!(
        run.agent_log
            .contains("ATTACK daemon: SUCCEEDED left a daemon"),
        "the agent did not manage to fork:\n{}",
        run.agent_log
    );
    assert_eq!(
        host_processes_with(&marker),
        Vec::<String>::new(),
        "the agent's daemon outlived the run"
    );
    assert_scored_honestly(&run);

    // Only the allow-listed environment reaches the agent.
    let run = run_attack(&evaluator, "env", "unused", &["--env", "EXTRA=1"]);
    let keys: Vec<&str> = run
        .agent_log
        .lines()
        .filter_map(|l| l.strip_prefix("ENV "))
        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
        .collect();
    assert!(
        keys.contains(&"ALE_ENDPOINT") && keys.contains(&"EXTRA"),
        "{keys:?}"
    );
    for key in &keys {
        assert!(
            [
                "ALE_ENDPOINT",
                "ALE_ENV_HANDLE",
                "HOME",
                "PATH",
                "LANG",
                "TERM",
                "EXTRA",
                "HOSTILE_STATE_DIR",
                "HOSTILE_HARNESS_PID",
            ]
            .contains(key),
            "{key} leaked into the agent's environment"
        );
    }
    assert!(
        run.agent_log
            .contains("ENV ALE_ENDPOINT=unix:///run/ale/agent.sock"),
        "{}",
        run.agent_log
    );
}

/// Rewrites every line of a chained file with `edit` applied to each event, re-sealing it with
/// the public chain rule; a `sig` field is kept (stale) or dropped.
fn reseal(path: &Path, keep_signature: bool, edit: impl Fn(&mut serde_json::Value)) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut chain = Chain::new();
    let mut out = String::new();
    let mut head = String::new();
    for line in text.lines() {
        let mut event: serde_json::Value = serde_json::from_str(line).unwrap();
        edit(&mut event);
        let level: Level = serde_json::from_value(event["level"].clone()).unwrap();
        let kind: EventKind = serde_json::from_value(event["kind"].clone()).unwrap();
        let (mut sealed, hash) = chain.seal(
            level,
            kind,
            event["time_unix_ms"].as_u64().unwrap(),
            event["data"].clone(),
        );
        if keep_signature && let Some(sig) = event.get("sig") {
            let mut object: serde_json::Value = serde_json::from_str(&sealed).unwrap();
            object["sig"] = sig.clone();
            sealed = ale_records::trajectory::canonical_json(&object);
        }
        out.push_str(&sealed);
        out.push('\n');
        head = hash;
    }
    std::fs::write(path, out).unwrap();
    head
}

/// The forger of the issue: after the report appears, rewrite rollout 0 as a better episode,
/// re-seal the trajectory and the harness log with the public chain rule, patch the report.
fn forge(run_dir: &Path, keep_signature: bool) {
    let new_head = reseal(&run_dir.join("trajectory.jsonl"), keep_signature, |event| {
        let kind = event["kind"].as_str().unwrap_or_default().to_string();
        if kind == "rollout_finished" && event["data"]["index"] == 0 {
            event["data"]["episode_return"] = serde_json::json!(9999.0);
        }
        if kind == "session_finished" {
            event["data"]["episodes"][0]["episode_return"] = serde_json::json!(9999.0);
        }
    });
    reseal(&run_dir.join("harness.jsonl"), keep_signature, |event| {
        if event["kind"] == "result_read" {
            event["data"]["evaluator_head"] = serde_json::json!(new_head);
        }
    });
    let report_path = run_dir.join("report.json");
    let mut report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    report["trajectory"]["head"] = serde_json::json!(new_head);
    report["episodes"][0]["episode_return"] = serde_json::json!(9999.0);
    std::fs::write(&report_path, report.to_string()).unwrap();
}

#[test]
fn a_run_folder_resealed_with_the_public_chain_rule_fails_verify_naming_the_signature() {
    let evaluator = Evaluator::start();
    for keep_signature in [false, true] {
        let run = run_attack(&evaluator, "list-state-dir", "unused", &[]);
        assert_scored_honestly(&run);
        forge(&run.run_dir, keep_signature);
        // The chains themselves are whole again: only a key tells the forgery apart.
        let text = std::fs::read_to_string(run.run_dir.join("trajectory.jsonl")).unwrap();
        ale_records::trajectory::verify(&text).expect("the forged chain is well formed");
        let (ok, out) = verify_output(&run.run_dir);
        assert!(!ok, "a forged run verified:\n{out}");
        assert!(
            out.contains("trajectory.jsonl") && out.contains("evaluator's signature"),
            "verify must name the signature that does not match:\n{out}"
        );
    }
}

#[test]
fn an_unsandboxed_run_is_marked_everywhere() {
    let evaluator = Evaluator::start();
    let run = run_attack(&evaluator, "env", "unused", &["--sandbox", "none"]);
    assert_eq!(run.report["sandbox"]["mode"], "none");
    let (ok, text) = verify_output(&run.run_dir);
    assert!(ok, "{text}");
    assert!(
        text.contains("unsandboxed: the agent could have tampered with this record"),
        "{text}"
    );
    let runs = Command::new(ALE)
        .args(["harness", "runs", "--state-dir"])
        .arg(&evaluator.state)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&runs.stdout);
    assert!(listing.contains("unsandboxed"), "{listing}");
}

/// A fresh folder (kept while the returned guard lives) holding a home owned by uid 65534.
fn home_of_nobody() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    for dir in [tmp.path(), home.as_path()] {
        std::os::unix::fs::chown(dir, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    (tmp, home)
}

/// What a non-root operator meets: the harness (and the evaluator it starts) run as an
/// unprivileged user, the sandbox is built from an unprivileged user namespace, and the agent,
/// running as that same user, still cannot reach the state dir that user owns.
#[test]
fn an_unprivileged_harness_sandboxes_its_agent_too() {
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !nobody_can_run_the_kit() {
        // Unprivileged already, the other tests run this path.
        eprintln!("skipped: needs root, and a checkout that uid 65534 may enter");
        return;
    }
    let (_tmp, home) = home_of_nobody();
    let state = home.join("state");
    let state_str = state.to_str().unwrap();
    let output = Command::new(ALE)
        .args([
            "harness",
            "run",
            "--task",
            "cartpole-balance",
            "--progress",
            "json",
            "--state-dir",
            state_str,
            "--env",
            &format!("HOSTILE_STATE_DIR={state_str}"),
        ])
        .args(agent_args("read-secrets", "unused"))
        .env("HOME", &home)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let run = finished_run("an unprivileged harness", &output);
    assert_eq!(run.report["sandbox"]["agent_uid"], serde_json::Value::Null);
    assert_attack_failed(&run, "read-secrets");
    assert_scored_honestly(&run);
}

fn verify_output(run_dir: &Path) -> (bool, String) {
    let out = Command::new(ALE)
        .args(["harness", "verify"])
        .arg(run_dir)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

fn edit_json(path: &Path, edit: impl Fn(&mut serde_json::Value)) {
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut value);
    std::fs::write(path, value.to_string()).unwrap();
}

/// Whoever can write a run folder afterwards (an unsandboxed agent's daemon, say) cannot
/// relabel an unsandboxed run as sandboxed, change what the report says, or pass one run's
/// records off as another's.
#[test]
fn a_report_or_harness_log_changed_after_the_run_fails_verify() {
    let evaluator = Evaluator::start();
    let unsandboxed = run_attack(&evaluator, "env", "unused", &["--sandbox", "none"]);
    assert!(verify_output(&unsandboxed.run_dir).0);

    // The report alone relabelled.
    let report = unsandboxed.run_dir.join("report.json");
    let original = std::fs::read_to_string(&report).unwrap();
    edit_json(&report, |r| {
        r["sandbox"]["mode"] = serde_json::json!("namespaces")
    });
    let (ok, out) = verify_output(&unsandboxed.run_dir);
    assert!(
        !ok && out.contains("report.json") && out.contains("sandbox"),
        "{out}"
    );

    // The report's task and agent rewritten.
    std::fs::write(&report, &original).unwrap();
    edit_json(&report, |r| {
        r["task"]["id"] = serde_json::json!("mountaincar-sarsa-reproduction");
        r["agent"]["exit"] = serde_json::json!("exited with status 0 (honestly)");
    });
    let (ok, out) = verify_output(&unsandboxed.run_dir);
    assert!(
        !ok && out.contains("task") && out.contains("agent"),
        "{out}"
    );

    // The harness log relabelled and re-sealed, the report made to match: the harness's
    // signature no longer holds; without the report and run_scored, the log's claim is shown
    // as unverified rather than as a fact.
    std::fs::write(&report, &original).unwrap();
    reseal(&unsandboxed.run_dir.join("harness.jsonl"), true, |event| {
        if event["kind"] == "harness_started" {
            event["data"]["sandbox"]["mode"] = serde_json::json!("namespaces");
        }
    });
    edit_json(&report, |r| {
        r["sandbox"]["mode"] = serde_json::json!("namespaces")
    });
    let (ok, out) = verify_output(&unsandboxed.run_dir);
    assert!(
        !ok && out.contains("harness.jsonl") && out.contains("harness's signature"),
        "{out}"
    );
    let log = unsandboxed.run_dir.join("harness.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let without_score: Vec<&str> = text.lines().filter(|l| !l.contains("run_scored")).collect();
    std::fs::write(&log, format!("{}\n", without_score.join("\n"))).unwrap();
    std::fs::remove_file(&report).unwrap();
    let (ok, out) = verify_output(&unsandboxed.run_dir);
    assert!(ok, "{out}");
    assert!(
        out.contains("unverified: the harness log is not signed") && !out.contains("sandboxed ("),
        "{out}"
    );

    // A good run's records copied over another run's folder.
    let honest = run_attack(&evaluator, "env", "unused", &[]);
    let poor = run_attack(&evaluator, "env", "unused", &[]);
    for file in ["trajectory.jsonl", "harness.jsonl", "report.json"] {
        std::fs::copy(honest.run_dir.join(file), poor.run_dir.join(file)).unwrap();
    }
    let (ok, out) = verify_output(&poor.run_dir);
    assert!(!ok && out.contains("in the folder of another run"), "{out}");
}

/// Runs `ale` with `args` inside a user namespace of its own in which only root is mapped and
/// no further user namespace may be made: there, no agent sandbox can be built.
fn ale_where_no_sandbox_can_be_built(args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(ALE);
    command.args(args);
    // SAFETY: only raw syscalls on static data between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::unshare(libc::CLONE_NEWUSER) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            for (file, text) in [
                (c"/proc/self/uid_map", &b"0 0 1\n"[..]),
                (c"/proc/self/setgroups", &b"deny"[..]),
                (c"/proc/self/gid_map", &b"0 0 1\n"[..]),
                (c"/proc/sys/user/max_user_namespaces", &b"0\n"[..]),
            ] {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY);
                if fd < 0 || libc::write(fd, text.as_ptr().cast(), text.len()) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(fd);
            }
            Ok(())
        });
    }
    command.output().unwrap()
}

#[test]
fn where_no_sandbox_can_be_built_the_harness_refuses_unless_told_sandbox_none() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return; // making the namespace needs root here
    }
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let state_str = state.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "harness",
            "run",
            "--task",
            "cartpole-balance",
            "--progress",
            "none",
            "--state-dir",
            state_str,
            "--policy",
            "random",
        ];
        args.extend(extra);
        ale_where_no_sandbox_can_be_built(&args)
    };
    let refused = run(&[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("cannot sandbox the agent") && stderr.contains("--sandbox none"),
        "{stderr}"
    );
    let runs = std::fs::read_dir(state.join("runs")).map_or(0, |d| d.count());
    assert_eq!(runs, 0, "the refusal came after an official env was made");

    let unsandboxed = run(&["--sandbox", "none"]);
    let stdout = String::from_utf8_lossy(&unsandboxed.stdout);
    assert!(
        unsandboxed.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&unsandboxed.stderr)
    );
    assert!(
        stdout.contains("unsandboxed: the agent could have tampered with this record"),
        "{stdout}"
    );
}

/// Found by an attacker: a state dir that is also reachable at a second path (its folder
/// bind-mounted elsewhere) must be masked there too, or an agent running as the evaluator's own
/// user (an unprivileged harness) reads the keys through it.
#[test]
fn a_state_dir_reachable_at_a_second_path_is_hidden_there_too() {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !nobody_can_run_the_kit() {
        eprintln!("skipped: needs root, and a checkout that uid 65534 may enter");
        return; // making the second path needs root here
    }
    let (_tmp, home) = home_of_nobody();
    let alias =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("second-path-{}", std::process::id()));
    std::fs::create_dir_all(&alias).unwrap();
    let state = home.join("state");
    let through_alias = alias.join("state");
    let (home_c, alias_c) = (
        CString::new(home.as_os_str().as_bytes()).unwrap(),
        CString::new(alias.as_os_str().as_bytes()).unwrap(),
    );
    // The harness, as uid 65534, in a mount namespace where `home` is also at `alias`.
    let harness_with = |workdir: &Path| {
        let (home_c, alias_c) = (home_c.clone(), alias_c.clone());
        let mut command = Command::new(ALE);
        command
            .args([
                "harness",
                "run",
                "--task",
                "cartpole-balance",
                "--progress",
                "json",
            ])
            .arg("--state-dir")
            .arg(&state)
            .arg("--env")
            .arg(format!("HOSTILE_STATE_DIR={}", through_alias.display()))
            .args(agent_args_in(workdir, "read-secrets", "unused"))
            .env("HOME", &home);
        // SAFETY: only raw syscalls on data prepared before the fork.
        unsafe {
            command.pre_exec(move || {
                let null = std::ptr::null();
                let private = libc::MS_REC | libc::MS_PRIVATE;
                let ok = libc::unshare(libc::CLONE_NEWNS) == 0
                    && libc::mount(null, c"/".as_ptr(), null, private, null.cast()) == 0
                    && libc::mount(
                        home_c.as_ptr(),
                        alias_c.as_ptr(),
                        null,
                        libc::MS_BIND,
                        null.cast(),
                    ) == 0
                    && libc::setgroups(0, std::ptr::null()) == 0
                    && libc::setgid(65534) == 0
                    && libc::setuid(65534) == 0;
                if ok {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        command.output().unwrap()
    };
    // A working directory that holds the second path would lay it bare again: refused.
    let refused = harness_with(&alias);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(stderr.contains("must not see"), "{stderr}");
    let output = harness_with(&kit().dir);
    let _ = std::fs::remove_dir(&alias);
    let run = finished_run("a harness whose state dir has a second path", &output);
    assert!(
        run.agent_log
            .contains(&format!("{}/evaluator.key", through_alias.display())),
        "the agent did not try the second path:\n{}",
        run.agent_log
    );
    assert_attack_failed(&run, "read-secrets");
    assert_scored_honestly(&run);
}

#[test]
fn a_sandboxed_agent_submits_a_policy_file_and_never_sees_the_result() {
    let evaluator = Evaluator::start();
    let kit = kit();
    let policy = kit.dir.join("linear.safetensors");
    let gains = ale_client::policy::CartPoleHeuristic::default().gains;
    std::fs::write(&policy, linear_policy_file(gains)).unwrap();
    let output = Command::new(ALE)
        .args([
            "harness",
            "run",
            "--task",
            BATCH_TASK,
            "--progress",
            "json",
            "--state-dir",
        ])
        .arg(&evaluator.state)
        // The policy file is handed over through the working directory: where the checkout
        // lies under /tmp, the sandbox's own /tmp would hide it.
        .arg("--workdir")
        .arg(&kit.dir)
        .arg("--")
        .arg(&kit.ale)
        .args(["agent", "--submit"])
        .arg(&policy)
        .arg("--try-reading-result")
        .output()
        .unwrap();
    let run = finished_run("batch submission", &output);
    let run_id = run.report["run_id"].as_str().unwrap();
    let folder = ale_records::layout::run_submission_dir(
        &evaluator.state,
        &ale_proto::RunId::from_wire(run_id.to_string()),
    );
    assert!(!folder.exists(), "the run's submission folder outlived it");
    // The evaluator rolled the linear copy of the heuristic out itself: every rollout balanced.
    assert_eq!(run.report["status"], "completed", "{:?}", run.report);
    assert_eq!(
        run.report["value"].as_f64(),
        Some(500.0),
        "{:?}",
        run.report
    );
    assert!(
        run.agent_log
            .contains("agent: submitted /run/ale/submission/policy.safetensors"),
        "{}",
        run.agent_log
    );
    assert!(
        run.agent_log
            .contains("GetBatchEvalStatus answered with no result"),
        "{}",
        run.agent_log
    );
    assert!(
        run.agent_log
            .contains("GetEvalResult refused: PermissionDenied"),
        "{}",
        run.agent_log
    );
    // The trajectory names the bytes the agent wrote.
    let trajectory = std::fs::read_to_string(run.run_dir.join("trajectory.jsonl")).unwrap();
    let digest = {
        use sha2::Digest;
        let bytes = std::fs::read(&policy).unwrap();
        format!("{:x}", sha2::Sha256::digest(&bytes))
    };
    assert!(
        trajectory.contains(&digest),
        "no submission_received with {digest}"
    );
    let (ok, text) = verify_output(&run.run_dir);
    assert!(ok, "{text}");
    assert!(text.contains("sandboxed (offline"), "{text}");
}

/// An agent that submits and exits at once (as most do) leaves its run to finish: the harness
/// does not take the exit for an early end.
#[test]
fn a_batch_run_goes_on_after_its_agent_exits() {
    let evaluator = Evaluator::start();
    let kit = kit();
    let policy = kit.dir.join("linear-exit.safetensors");
    let gains = ale_client::policy::CartPoleHeuristic::default().gains;
    std::fs::write(&policy, linear_policy_file(gains)).unwrap();
    let output = Command::new(ALE)
        .args([
            "harness",
            "run",
            "--task",
            LONG_BATCH_TASK,
            "--progress",
            "json",
            "--state-dir",
        ])
        .arg(&evaluator.state)
        // The policy file is handed over through the working directory: where the checkout
        // lies under /tmp, the sandbox's own /tmp would hide it.
        .arg("--workdir")
        .arg(&kit.dir)
        .arg("--")
        .arg(&kit.ale)
        .args(["agent", "--submit"])
        .arg(&policy)
        .output()
        .unwrap();
    let run = finished_run("submit and exit", &output);
    assert_eq!(run.report["status"], "completed", "{:?}", run.report);
    assert_eq!(run.report["agent"]["left_early"], false, "{:?}", run.report);
    assert_eq!(
        run.report["task"]["episodes"], 1000,
        "{:?}",
        run.report["task"]
    );
    assert_eq!(
        run.report["value"].as_f64(),
        Some(500.0),
        "{:?}",
        run.report
    );
    // Nothing the agent wrote outlives the run.
    let left: Vec<_> = std::fs::read_dir(ale_records::layout::submissions_dir(&evaluator.state))
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// A run its agent ended by hitting `limit`: the agent's failure, named in the report and the
/// status message, with records that verify.
fn assert_stopped_by(run: &Run, limit: &str) {
    assert_eq!(run.report["agent"]["exit"], limit, "{:?}", run.report);
    assert_eq!(run.report["agent"]["left_early"], true);
    let message = run.report["status_message"].as_str().unwrap();
    assert!(message.contains(limit), "{message}");
    assert_ne!(run.report["status"], "completed");
    let (ok, text) = verify_output(&run.run_dir);
    assert!(ok, "{text}");
}

#[test]
fn a_fork_bomb_is_stopped_at_the_process_limit_and_named() {
    let evaluator = Evaluator::start();
    let marker = format!("fork-bomb-{}", std::process::id());
    let run = run_attack(&evaluator, "fork-bomb", &marker, &["--agent-pids", "64"]);
    assert!(
        run.agent_log.contains("FORK-BOMB started"),
        "{}",
        run.agent_log
    );
    assert_stopped_by(&run, "agent stopped: process limit 64");
    assert_eq!(run.report["sandbox"]["limits"]["tasks"], 64);
    assert_eq!(host_processes_with(&marker), Vec::<String>::new());
    // The evaluator serves the next run as before.
    assert_scored_honestly(&run_attack(&evaluator, "env", "unused", &[]));
}

#[test]
fn a_memory_hog_of_many_processes_is_stopped_at_the_memory_limit_and_named() {
    let evaluator = Evaluator::start();
    let marker = format!("memory-hog-{}", std::process::id());
    let run = run_attack(
        &evaluator,
        "memory-hog",
        &marker,
        &["--agent-memory", "256M"],
    );
    assert!(
        run.agent_log.contains("MEMORY-HOG started"),
        "{}",
        run.agent_log
    );
    assert_stopped_by(&run, "agent stopped: memory limit 256 MiB");
    assert_eq!(host_processes_with(&marker), Vec::<String>::new());
}

/// Memory that no process maps is refused: `memfd_create` fails inside the sandbox.
#[test]
fn a_memfd_hog_is_refused() {
    let evaluator = Evaluator::start();
    let run = run_attack(
        &evaluator,
        "memfd-hog",
        "unused",
        &["--agent-memory", "256M"],
    );
    assert_attack_failed(&run, "memfd-hog");
    assert!(
        run.agent_log
            .contains("memfd_create: Operation not permitted"),
        "{}",
        run.agent_log
    );
    assert_scored_honestly(&run);
}

/// Shared anonymous memory counts: eight processes' `MAP_SHARED | MAP_ANONYMOUS` regions,
/// each under every per-process bound, stop the sandbox at the memory limit.
#[test]
fn a_shared_anonymous_memory_hog_is_stopped_at_the_memory_limit_and_named() {
    let evaluator = Evaluator::start();
    let marker = format!("shared-anon-hog-{}", std::process::id());
    let run = run_attack(
        &evaluator,
        "shared-anon-hog",
        &marker,
        &["--agent-memory", "256M"],
    );
    assert!(
        run.agent_log.contains("SHARED-ANON-HOG started"),
        "{}",
        run.agent_log
    );
    assert_stopped_by(&run, "agent stopped: memory limit 256 MiB");
    assert_eq!(host_processes_with(&marker), Vec::<String>::new());
}

/// System V shared memory, detached and so held by no process, is bounded by the sandbox's
/// own IPC namespace: at most the agent's memory.
#[test]
fn detached_system_v_shared_memory_is_bounded_by_the_memory_limit() {
    let evaluator = Evaluator::start();
    let run = run_attack(&evaluator, "shm-hog", "unused", &["--agent-memory", "256M"]);
    assert_attack_failed(&run, "shm-hog");
    assert!(
        run.agent_log
            .contains("shmget refused after 268435456 bytes"),
        "{}",
        run.agent_log
    );
    assert_scored_honestly(&run);
}

/// Children the kernel reaps (their parent ignores SIGCHLD) leave their CPU time in no
/// parent's; the watchdog keeps what it saw of them.
#[test]
fn an_agent_whose_children_are_reaped_by_the_kernel_is_stopped_at_the_cpu_time_limit() {
    let evaluator = Evaluator::start();
    let marker = format!("autoreap-{}", std::process::id());
    let run = run_attack(
        &evaluator,
        "autoreap-spin",
        &marker,
        &["--agent-cpu-seconds", "2"],
    );
    assert!(
        run.agent_log.contains("AUTOREAP-SPIN started"),
        "{}",
        run.agent_log
    );
    assert_stopped_by(&run, "agent stopped: CPU time limit 2 s");
    assert_eq!(host_processes_with(&marker), Vec::<String>::new());
}

#[test]
fn a_spinning_agent_is_stopped_at_the_cpu_time_limit_and_named() {
    let evaluator = Evaluator::start();
    let run = run_attack(&evaluator, "spin", "unused", &["--agent-cpu-seconds", "1"]);
    assert_stopped_by(&run, "agent stopped: CPU time limit 1 s");
}

#[test]
fn an_agent_can_make_no_user_namespace_and_mount_no_tmpfs() {
    let evaluator = Evaluator::start();
    let run = run_attack(&evaluator, "userns", "unused", &[]);
    assert_attack_failed(&run, "userns");
    assert!(
        run.agent_log.contains("ATTACK mount-tmpfs: FAILED"),
        "{}",
        run.agent_log
    );
    assert_scored_honestly(&run);
}

/// As root, two runs at once get two uids from the range, and their records say which.
#[test]
fn two_runs_at_once_as_root_get_different_uids() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !range_is_free() {
        eprintln!("skipped: needs root");
        return;
    }
    let evaluator = Evaluator::start();
    // The first run makes the harness's key; two harnesses making it at once is another matter.
    assert_scored_honestly(&run_attack(&evaluator, "env", "unused", &[]));
    let first = start_attack(&evaluator, "uid", "unused", &[]);
    let second = start_attack(&evaluator, "uid", "unused", &[]);
    let runs = [first, second].map(|child| finished_run("uid", &child.wait_with_output().unwrap()));
    let uids: Vec<u64> = runs
        .iter()
        .map(|run| {
            let recorded = run.report["sandbox"]["agent_uid"].as_u64().unwrap();
            assert!(
                run.agent_log.contains(&format!("UID {recorded}")),
                "{}",
                run.agent_log
            );
            assert!((200_000..=265_535).contains(&recorded), "{recorded}");
            assert_scored_honestly(run);
            recorded
        })
        .collect();
    assert_ne!(uids[0], uids[1], "two runs at once shared a uid");
}

/// Whether the default range of agent uids is in use by no account on this machine.
fn range_is_free() -> bool {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    !passwd.lines().any(|line| {
        line.split(':')
            .nth(2)
            .and_then(|uid| uid.parse::<u32>().ok())
            .is_some_and(|uid| (200_000..=265_535).contains(&uid))
    })
}
