//! Runs that share one evaluator are strangers. Each attacker (a small program built here with
//! `rustc` from `tests/isolation/attacker.rs`) runs in a real `ale harness run` beside an
//! honest agent's run on the same evaluator; in every pairing the honest run scores exactly
//! what its play earns and verifies, the attacker gets only its own failure, and nothing is
//! left behind.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::ALE;

/// CartPole, three rollouts, as an interactive and as a batch task.
const TASK: &str = "cartpole-balance";
const BATCH_TASK: &str = "cartpole-batch";

/// Practice envs each run's channel may hold (`ale serve --max-run-practice-envs`' default).
const RUN_PRACTICE_ENVS: usize = 256;

/// What the heuristic (and its linear copy in a policy file) scores on every CartPole rollout.
const BALANCED: f64 = 500.0;

/// The attacker, compiled once, a hard link to `ale` for the agents' own play, and two policy
/// files, in one folder any user may enter; the folder is every agent's `--workdir`, so all of
/// it is reachable in a sandbox wherever the checkout is.
struct Kit {
    dir: PathBuf,
    attacker: PathBuf,
    ale: PathBuf,
    /// The linear copy of the CartPole heuristic: balances every rollout.
    good_policy: PathBuf,
    /// All weights zero: always pushes left.
    zero_policy: PathBuf,
}

fn kit() -> &'static Kit {
    static KIT: OnceLock<Kit> = OnceLock::new();
    KIT.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("run-isolation");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let attacker = dir.join("attacker");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/isolation/attacker.rs");
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let status = Command::new(rustc)
            .args(["--edition", "2024", "-O", "-o"])
            .arg(&attacker)
            .arg(&source)
            .status()
            .expect("rustc runs");
        assert!(status.success(), "the attacker does not compile");
        let ale = dir.join("ale");
        if std::fs::hard_link(ALE, &ale).is_err() {
            std::fs::copy(ALE, &ale).unwrap();
        }
        let good_policy = dir.join("good.safetensors");
        let gains = ale_client::policy::CartPoleHeuristic::default().gains;
        std::fs::write(&good_policy, linear_policy_file(gains)).unwrap();
        let zero_policy = dir.join("zero.safetensors");
        std::fs::write(&zero_policy, linear_policy_file([0.0; 4])).unwrap();
        for file in [&good_policy, &zero_policy] {
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        Kit {
            dir,
            attacker,
            ale,
            good_policy,
            zero_policy,
        }
    })
}

/// A linear controller in the `mlp-safetensors` format: output 1 (push right) scores
/// `gains · observation`, output 0 scores 0.
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

fn tasks_dir(root: &Path) -> PathBuf {
    let dir = root.join("tasks");
    std::fs::create_dir(&dir).unwrap();
    let text = include_str!("../../server/tasks/cartpole-balance.toml")
        .replace("episodes = 20", "episodes = 3");
    assert!(text.contains("episodes = 3"));
    std::fs::write(dir.join("cartpole.toml"), &text).unwrap();
    let batch = text
        .replace(
            &format!("id = \"{TASK}\""),
            &format!("id = \"{BATCH_TASK}\""),
        )
        .replace("mode = \"interactive\"", "mode = \"batch\"")
        + "\n[submission]\nsubmission_path = \"/run/ale/submission\"\nentrypoint = \"policy.safetensors\"\nformat = \"mlp-safetensors\"\n";
    assert!(batch.contains("mode = \"batch\""));
    std::fs::write(dir.join("cartpole-batch.toml"), batch).unwrap();
    dir
}

/// Whether this process may mount (root): the small-disk pairing needs a tmpfs state dir.
fn is_root() -> bool {
    // SAFETY: geteuid never fails.
    unsafe { libc::geteuid() == 0 }
}

/// An evaluator on a fresh state dir outside `/tmp` (which the sandbox replaces anyway),
/// stopped when dropped.
struct Evaluator {
    child: Child,
    state: PathBuf,
    on_tmpfs: bool,
    _tmp: tempfile::TempDir,
}

impl Evaluator {
    fn start(extra: &[&str]) -> Evaluator {
        Evaluator::start_on(None, extra)
    }

    /// With `disk_bytes`, the state dir is a tmpfs of that size (root only).
    fn start_on(disk_bytes: Option<u64>, extra: &[&str]) -> Evaluator {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let state = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("isolation-state-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&state);
        std::fs::create_dir_all(&state).unwrap();
        std::fs::set_permissions(&state, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .unwrap();
        if let Some(bytes) = disk_bytes {
            let target = std::ffi::CString::new(state.to_str().unwrap()).unwrap();
            let options = std::ffi::CString::new(format!("size={bytes},mode=0700")).unwrap();
            // SAFETY: mount(2) on C strings that outlive the call.
            let mounted = unsafe {
                libc::mount(
                    c"tmpfs".as_ptr(),
                    target.as_ptr(),
                    c"tmpfs".as_ptr(),
                    0,
                    options.as_ptr().cast(),
                )
            };
            assert_eq!(mounted, 0, "{}", std::io::Error::last_os_error());
        }
        let tmp = tempfile::tempdir().unwrap();
        let child = Command::new(ALE)
            .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(&state)
            .arg("--tasks-dir")
            .arg(tasks_dir(tmp.path()))
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut evaluator = Evaluator {
            child,
            state,
            on_tmpfs: disk_bytes.is_some(),
            _tmp: tmp,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::os::unix::net::UnixStream::connect(evaluator.state.join("harness.sock")).is_err()
        {
            assert!(Instant::now() < deadline, "the evaluator did not start");
            assert!(
                evaluator.child.try_wait().unwrap().is_none(),
                "the evaluator exited"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        evaluator
    }

    /// `ale harness run` of `task` with `agent` (a command), started in the background.
    fn spawn_run(&self, task: &str, flags: &[&str], agent: &[&str]) -> Child {
        Command::new(ALE)
            .args(["harness", "run", "--task", task, "--progress", "json"])
            .arg("--state-dir")
            .arg(&self.state)
            .arg("--env")
            .arg(format!("HOSTILE_STATE_DIR={}", self.state.display()))
            .arg("--workdir")
            .arg(&kit().dir)
            .args(flags)
            .arg("--")
            .args(agent)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The run folder whose `agent.log` has a line starting with `line`, waited for.
    fn wait_for_agent_line(&self, line: &str) -> PathBuf {
        self.wait_for_another_agent_line(line, &[])
    }

    /// [`Evaluator::wait_for_agent_line`] in a run folder other than those of `known`.
    fn wait_for_another_agent_line(&self, line: &str, known: &[&Path]) -> PathBuf {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            for entry in std::fs::read_dir(self.state.join("runs"))
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| !known.contains(&e.path().as_path()))
            {
                let log = std::fs::read_to_string(entry.path().join("agent.log"));
                if log.is_ok_and(|log| log.lines().any(|l| l.starts_with(line))) {
                    return entry.path();
                }
            }
            assert!(Instant::now() < deadline, "no agent said {line:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What is left in `dir` of the state dir (nothing where it does not exist).
    fn left_in(&self, dir: &str) -> Vec<String> {
        std::fs::read_dir(self.state.join(dir))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect()
    }
}

impl Drop for Evaluator {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
        if self.on_tmpfs {
            let target = std::ffi::CString::new(self.state.to_str().unwrap()).unwrap();
            // SAFETY: umount2(2) on a C string that outlives the call.
            unsafe {
                libc::umount2(target.as_ptr(), libc::MNT_DETACH);
            }
        }
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

/// A finished run: its report and folder, what its agent printed, what the harness said.
struct Run {
    report: serde_json::Value,
    run_dir: PathBuf,
    agent_log: String,
    harness_output: String,
}

/// Waits for a run started with [`Evaluator::spawn_run`]; the harness must succeed.
fn finish(what: &str, child: Child) -> Run {
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let harness_output = format!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        common::reported(&output.status),
        "{what}: the harness failed:\n{harness_output}"
    );
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let run_dir = PathBuf::from(last["run_dir"].as_str().unwrap());
    let agent_log = std::fs::read_to_string(run_dir.join("agent.log")).unwrap();
    Run {
        report: last["report"].clone(),
        run_dir,
        agent_log,
        harness_output,
    }
}

fn verify(run: &Run) -> (bool, String) {
    let out = Command::new(ALE)
        .args(["harness", "verify"])
        .arg(&run.run_dir)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

/// The run completed with exactly `value`, and its records verify.
fn assert_scored(what: &str, run: &Run, value: f64) {
    assert_eq!(
        run.report["status"], "completed",
        "{what}: {:?}\n{}",
        run.report, run.agent_log
    );
    assert_eq!(
        run.report["value"].as_f64(),
        Some(value),
        "{what}: {:?}\n{}",
        run.report,
        run.agent_log
    );
    let (ok, text) = verify(run);
    assert!(ok, "{what}: {text}");
}

/// Every attack line of the run's agent log says FAILED, and there is at least one.
fn assert_attack_failed(run: &Run, attack: &str) {
    let lines: Vec<&str> = run
        .agent_log
        .lines()
        .filter(|l| l.starts_with(&format!("ATTACK {attack}:")))
        .collect();
    assert!(
        !lines.is_empty(),
        "{attack}: nothing reported:\n{}",
        run.agent_log
    );
    for line in lines {
        assert!(line.contains(": FAILED "), "{attack} got through: {line}");
    }
}

/// The attacker's own run still verifies: whatever it did, its record is whole.
fn assert_record_whole(what: &str, run: &Run) {
    let (ok, text) = verify(run);
    assert!(ok, "{what}: {text}");
}

/// `attacker ATTACK ARG` then the agent's own play (`ale agent …`).
fn attacker(attack: &str, arg: &str, then: &[&str]) -> Vec<String> {
    let kit = kit();
    let mut args = vec![
        kit.attacker.to_str().unwrap().to_string(),
        attack.to_string(),
        arg.to_string(),
        kit.ale.to_str().unwrap().to_string(),
        "agent".to_string(),
    ];
    args.extend(then.iter().map(|s| s.to_string()));
    args
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// The honest interactive agent: the heuristic, every rollout balanced.
fn honest_agent() -> Vec<String> {
    vec![
        kit().ale.to_str().unwrap().to_string(),
        "agent".into(),
        "--policy".into(),
        "heuristic".into(),
    ]
}

/// The honest batch agent: writes the good policy into its own folder and submits it.
fn honest_submitter() -> Vec<String> {
    let kit = kit();
    vec![
        kit.ale.to_str().unwrap().to_string(),
        "agent".into(),
        "--submit".into(),
        kit.good_policy.to_str().unwrap().to_string(),
    ]
}

#[test]
fn a_thief_that_submits_without_writing_gets_only_its_own_failure() {
    let evaluator = Evaluator::start(&[]);
    let kit = kit();
    // The thief submits what its folder holds, writing nothing, while the honest agent's file
    // is in the honest run's folder.
    let thief = evaluator.spawn_run(
        BATCH_TASK,
        &[],
        &strs(&attacker("thief", "1", &["--submit-as-is"])),
    );
    evaluator.wait_for_agent_line("READY");
    let honest = finish(
        "honest",
        evaluator.spawn_run(
            BATCH_TASK,
            &[],
            &strs(&attacker(
                "write-and-wait",
                kit.good_policy.to_str().unwrap(),
                &["--submit-as-is"],
            )),
        ),
    );
    assert!(
        honest.agent_log.contains("OWN FILE INTACT"),
        "{}",
        honest.agent_log
    );
    assert_scored("honest beside a thief", &honest, BALANCED);
    let thief = finish("thief", thief);
    assert_attack_failed(&thief, "thief");
    // Its own empty folder is all it could submit.
    assert_ne!(thief.report["status"], "completed", "{:?}", thief.report);
    assert!(
        thief.report.to_string().contains("no policy.safetensors"),
        "{:?}",
        thief.report
    );
    assert_record_whole("thief", &thief);
    assert_eq!(evaluator.left_in("submissions"), Vec::<String>::new());
}

#[test]
fn a_saboteur_reaches_no_other_runs_folder() {
    let evaluator = Evaluator::start(&[]);
    let kit = kit();
    let good = kit.good_policy.to_str().unwrap();
    let honest = evaluator.spawn_run(
        BATCH_TASK,
        &[],
        &strs(&attacker("write-and-wait", good, &["--submit-as-is"])),
    );
    evaluator.wait_for_agent_line("READY");
    let zero = kit.zero_policy.to_str().unwrap();
    let saboteur = evaluator.spawn_run(
        BATCH_TASK,
        &[],
        &strs(&attacker("saboteur", zero, &["--submit-as-is"])),
    );
    let honest = finish("honest", honest);
    assert!(
        honest.agent_log.contains("OWN FILE INTACT"),
        "{}",
        honest.agent_log
    );
    assert_scored("honest beside a saboteur", &honest, BALANCED);
    let saboteur = finish("saboteur", saboteur);
    assert_attack_failed(&saboteur, "saboteur");
    // The saboteur played its own zero policy: its own score, well below balancing.
    assert_eq!(saboteur.report["status"], "completed");
    assert!(saboteur.report["value"].as_f64().unwrap() < 100.0);
    assert_record_whole("saboteur", &saboteur);
}

#[test]
fn two_honest_batch_runs_at_once_each_score_their_own_file() {
    // One run plays at a time: a run submitted while the other plays waits its turn.
    let evaluator = Evaluator::start(&["--max-batch-runs", "1"]);
    let kit = kit();
    let good = evaluator.spawn_run(
        BATCH_TASK,
        &[],
        &strs(&attacker(
            "write-and-wait",
            kit.good_policy.to_str().unwrap(),
            &["--submit-as-is"],
        )),
    );
    let zero = evaluator.spawn_run(
        BATCH_TASK,
        &[],
        &strs(&attacker(
            "write-and-wait",
            kit.zero_policy.to_str().unwrap(),
            &["--submit-as-is"],
        )),
    );
    let (good, zero) = (finish("good", good), finish("zero", zero));
    assert_scored("the good policy's run", &good, BALANCED);
    assert_eq!(zero.report["status"], "completed", "{:?}", zero.report);
    let zero_value = zero.report["value"].as_f64().unwrap();
    assert!(zero_value < 100.0, "{zero_value}");
    for run in [&good, &zero] {
        assert!(
            run.agent_log.contains("OWN FILE INTACT"),
            "{}",
            run.agent_log
        );
        assert_record_whole("honest", run);
    }
    // Each trajectory names the bytes its own agent wrote.
    for (run, file) in [(&good, &kit.good_policy), (&zero, &kit.zero_policy)] {
        use sha2::Digest;
        let digest = format!("{:x}", sha2::Sha256::digest(std::fs::read(file).unwrap()));
        let trajectory = std::fs::read_to_string(run.run_dir.join("trajectory.jsonl")).unwrap();
        assert!(
            trajectory.contains(&digest),
            "no submission_received with {digest}"
        );
    }
}

/// Appends to `path` until the disk refuses; the bytes written.
fn fill_up(path: &Path) -> u64 {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    let chunk = vec![0u8; 64 << 10];
    let mut written = 0;
    while let Ok(n) = file.write(&chunk) {
        if n == 0 {
            break;
        }
        written += n as u64;
    }
    // The last bytes a page at a time.
    while file.write(&[0u8; 512]).is_ok_and(|n| n > 0) {
        written += 512;
    }
    written
}

#[test]
fn a_disk_filler_on_a_small_state_disk_costs_no_other_run_its_record() {
    if !is_root() {
        eprintln!("skipped: a tmpfs state dir needs root");
        return;
    }
    // A 48 MiB state disk, submissions capped at 4 MiB.
    let evaluator = Evaluator::start_on(Some(48 << 20), &["--max-submission-bytes", "4194304"]);
    let filler = evaluator.spawn_run(
        BATCH_TASK,
        &[],
        // It holds its reservations well past the refusal checked below, on a slow machine too.
        &strs(&attacker("disk-filler", "20", &["--submit-as-is"])),
    );
    let filler_dir = evaluator.wait_for_agent_line("READY");
    let log = std::fs::read_to_string(filler_dir.join("agent.log")).unwrap();
    let submission_line = log
        .lines()
        .find(|l| l.starts_with("ATTACK disk-filler: FAILED submission:"))
        .unwrap_or_else(|| panic!("the filler was not stopped in its folder:\n{log}"));
    assert!(
        submission_line.contains("No space left") || submission_line.contains("too large"),
        "{submission_line}"
    );
    // An honest run starts, then the state disk fills up to the last byte (by the test: the
    // agents cannot reach it); the run still records its end, signed, and its report, and its
    // agent prints a MiB after the fill without a write failing (its log's room was set aside).
    let mut spewing = attacker("write-and-wait", "/nonexistent", &[]);
    spewing.truncate(3);
    spewing.extend(attacker("spew", "1048576", &["--policy", "heuristic"]));
    let honest = evaluator.spawn_run(TASK, &[], &strs(&spewing));
    evaluator.wait_for_another_agent_line("READY", &[&filler_dir]);
    let filled = fill_up(&evaluator.state.join("filler"));
    assert!(filled > 0);
    let honest = finish("honest", honest);
    assert_scored("honest on a full state disk", &honest, BALANCED);
    assert!(
        honest.agent_log.contains("SPEWED 1048"),
        "the honest agent's output was cut short on a full disk:\n{}",
        honest
            .agent_log
            .lines()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(honest.run_dir.join("report.json").is_file());
    // Its records, whole, keep no more disk than their own pages: the rest of what was set
    // aside for them went back.
    for file in ["trajectory.jsonl", "harness.jsonl", "report.json"] {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(honest.run_dir.join(file)).unwrap();
        assert!(
            meta.blocks() * 512 <= meta.len().next_multiple_of(4096) + 4096,
            "{file}: {} bytes allocated for {}",
            meta.blocks() * 512,
            meta.len()
        );
    }
    // Nothing can start on a full disk — refused with a reason, not half recorded. The honest
    // run gave back what it had set aside and left unused, so the disk is topped up first.
    fill_up(&evaluator.state.join("filler"));
    let refused = evaluator
        .spawn_run(TASK, &[], &strs(&honest_agent()))
        .wait_with_output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("reserve"), "{said}");
    std::fs::remove_file(evaluator.state.join("filler")).unwrap();
    let batch = finish(
        "honest batch",
        evaluator.spawn_run(BATCH_TASK, &[], &strs(&honest_submitter())),
    );
    assert_scored("honest batch beside a disk filler", &batch, BALANCED);
    let filler = finish("filler", filler);
    assert_attack_failed(&filler, "disk-filler");
    assert_record_whole("filler", &filler);
    // What it wrote went with its run.
    assert_eq!(evaluator.left_in("submissions"), Vec::<String>::new());
}

#[test]
fn a_connection_holder_leaves_other_runs_their_channel() {
    let evaluator = Evaluator::start(&[]);
    let holder = evaluator.spawn_run(
        TASK,
        &[],
        &strs(&attacker(
            "hold-connections",
            "300",
            &["--policy", "heuristic"],
        )),
    );
    evaluator.wait_for_agent_line("READY");
    let honest = finish(
        "honest",
        evaluator.spawn_run(TASK, &[], &strs(&honest_agent())),
    );
    assert_scored("honest beside a connection holder", &honest, BALANCED);
    let holder = finish("holder", holder);
    assert_attack_failed(&holder, "hold-connections");
    assert_record_whole("holder", &holder);
    assert_eq!(evaluator.left_in("agents"), Vec::<String>::new());
}

#[test]
fn a_practice_env_holder_leaves_other_runs_and_the_shared_channel_their_share() {
    let evaluator = Evaluator::start(&[]);
    let holder = evaluator.spawn_run(
        TASK,
        &[],
        &strs(&attacker("hold-for", "15", &["--hold-practice-envs"])),
    );
    let holder_dir = evaluator.wait_for_agent_line("HOLDING");
    let log = std::fs::read_to_string(holder_dir.join("agent.log")).unwrap();
    let held: usize = log
        .lines()
        .find_map(|l| l.strip_prefix("HOLDING "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    // Its run's share (`ale serve --max-run-practice-envs`, 256 by default), however many
    // connections it opened; and the run beside it gets a whole share of its own.
    assert_eq!(held, RUN_PRACTICE_ENVS, "the holder's envs:\n{log}");
    let mut practice = honest_agent();
    practice.extend(["--practice-envs".into(), RUN_PRACTICE_ENVS.to_string()]);
    let honest = finish("honest", evaluator.spawn_run(TASK, &[], &strs(&practice)));
    assert!(
        honest
            .agent_log
            .contains(&format!("stepped {RUN_PRACTICE_ENVS} practice envs")),
        "{}",
        honest.agent_log
    );
    assert_scored("honest beside a practice-env holder", &honest, BALANCED);
    // A practice client of the shared channel (TCP) is served too.
    let endpoint = std::fs::read_to_string(evaluator.state.join("agent.endpoint")).unwrap();
    let tcp = endpoint.lines().find(|l| l.starts_with("http://")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = ale_client::Client::connect(tcp).await.unwrap();
        let mut env = client.create(TASK).await.unwrap();
        env.reset(Some(0)).await.unwrap();
    });
    let holder = finish("holder", holder);
    assert_record_whole("holder", &holder);
}

#[test]
fn a_fork_bomb_is_stopped_at_its_own_process_limit() {
    let evaluator = Evaluator::start(&[]);
    let bomb = evaluator.spawn_run(
        TASK,
        &["--agent-pids", "64"],
        &strs(&attacker("fork-bomb", "", &["--policy", "heuristic"])),
    );
    evaluator.wait_for_agent_line("READY");
    let honest = finish(
        "honest",
        evaluator.spawn_run(TASK, &[], &strs(&honest_agent())),
    );
    assert_scored("honest beside a fork bomb", &honest, BALANCED);
    let bomb = finish("bomb", bomb);
    assert!(
        !bomb.agent_log.contains("ATTACK fork-bomb: SUCCEEDED"),
        "{}",
        bomb.agent_log
    );
    // Its run ends as its own failure, named.
    assert_ne!(bomb.report["status"], "completed", "{:?}", bomb.report);
    assert!(
        bomb.report.to_string().contains("process limit 64"),
        "{:?}\n{}",
        bomb.report,
        bomb.agent_log
    );
    assert_record_whole("bomb", &bomb);
}

#[test]
fn a_memory_hog_is_stopped_and_its_report_names_the_limit() {
    let evaluator = Evaluator::start(&[]);
    let hog = evaluator.spawn_run(
        TASK,
        &["--agent-memory", "512M"],
        &strs(&attacker("memory-hog", "", &["--policy", "heuristic"])),
    );
    evaluator.wait_for_agent_line("READY");
    let honest = finish(
        "honest",
        evaluator.spawn_run(TASK, &[], &strs(&honest_agent())),
    );
    assert_scored("honest beside a memory hog", &honest, BALANCED);
    let hog = finish("hog", hog);
    assert!(
        !hog.agent_log.contains("ATTACK memory-hog: SUCCEEDED"),
        "{}",
        hog.agent_log
    );
    assert_ne!(hog.report["status"], "completed", "{:?}", hog.report);
    assert!(
        hog.report.to_string().contains("memory limit 512 MiB"),
        "{:?}\n{}",
        hog.report,
        hog.harness_output
    );
    assert_record_whole("hog", &hog);
}

#[test]
fn an_agent_cannot_mount_a_tmpfs_of_its_own_and_its_tmp_is_capped() {
    let evaluator = Evaluator::start(&[]);
    let filler = evaluator.spawn_run(
        TASK,
        &[],
        &strs(&attacker("own-tmpfs", "", &["--policy", "heuristic"])),
    );
    evaluator.wait_for_agent_line("READY");
    let honest = finish(
        "honest",
        evaluator.spawn_run(TASK, &[], &strs(&honest_agent())),
    );
    assert_scored("honest beside a tmpfs filler", &honest, BALANCED);
    let filler = finish("filler", filler);
    assert_attack_failed(&filler, "own-tmpfs");
    // Out of memory, the kernel kills an agent before the evaluator or a harness.
    assert!(
        filler.agent_log.contains("OOM_SCORE_ADJ 1000"),
        "{}",
        filler.agent_log
    );
    assert_attack_failed(&filler, "fill-tmp");
    assert_scored("the tmpfs filler's own play", &filler, BALANCED);
}

/// A run whose harness fails after its official env exists (here: an agent program that cannot
/// be started, which only an unsandboxed run finds out that late) ends its session, so the
/// evaluator removes the run's submission folder and agent socket at once, not when it
/// reclaims the env.
#[test]
fn a_run_that_fails_after_its_env_exists_leaves_no_folder_or_socket() {
    let evaluator = Evaluator::start(&[]);
    let output = evaluator
        .spawn_run(
            BATCH_TASK,
            &["--sandbox", "none"],
            &["/nonexistent/agent-program"],
        )
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("/nonexistent/agent-program"), "{stderr}");
    // The env was made: its run folder holds its trajectory.
    assert_eq!(evaluator.left_in("runs").len(), 1, "{stderr}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(evaluator.left_in("submissions").is_empty() && evaluator.left_in("agents").is_empty()) {
        assert!(
            Instant::now() < deadline,
            "the failed run's resources stayed: submissions {:?}, agents {:?}",
            evaluator.left_in("submissions"),
            evaluator.left_in("agents")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_run_share_these_tests_count_on_is_the_evaluators_default() {
    assert_eq!(
        RUN_PRACTICE_ENVS,
        ale_server::Limits::default().max_run_practice_envs
    );
}
