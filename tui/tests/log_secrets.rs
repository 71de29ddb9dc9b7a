//! What an attacker who reads the logs learns: an evaluator and a harness run an interactive
//! and a batch session with `RUST_LOG=trace`, every line they print is kept, and none may
//! carry the evaluator's secret or either private key (in hex, base64 or as a byte list), a
//! hidden seed (any number in the logs that commits to one of the runs' seed commitments), or
//! a field named like a seed with a value.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use common::{ALE, private_tempdir};

/// Everything `ale harness run` printed, stdout and stderr.
fn harness_run(state: &Path, args: &[&str]) -> String {
    let out = Command::new(ALE)
        .args(["harness", "run", "--progress", "json", "--state-dir"])
        .arg(state)
        .args(args)
        .env("RUST_LOG", "trace")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    text
}

fn to_hex(bytes: impl AsRef<[u8]>) -> String {
    bytes.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The ways a 32-byte secret could be printed.
fn renderings(name: &str, bytes: &[u8]) -> Vec<(String, String)> {
    let hex = to_hex(bytes);
    let mut forms = vec![
        (format!("{name} as hex"), hex.clone()),
        (format!("{name} as HEX"), hex.to_uppercase()),
        (format!("{name} as a byte list"), format!("{bytes:?}")),
        (
            format!("{name} as a byte list without spaces"),
            format!("{bytes:?}").replace(' ', ""),
        ),
    ];
    for (engine, label) in [
        (&base64_standard as &dyn Fn(&[u8]) -> String, "base64"),
        (&base64_url, "base64url"),
    ] {
        let encoded = engine(bytes);
        forms.push((format!("{name} as {label}"), encoded.clone()));
        forms.push((
            format!("{name} as {label} unpadded"),
            encoded.trim_end_matches('=').to_string(),
        ));
    }
    // A prefix long enough to be no accident: a secret cut short in a log is still a leak.
    forms.push((
        format!("{name}'s first 12 bytes as hex"),
        hex[..24].to_string(),
    ));
    forms
}

fn base64_with(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_standard(bytes: &[u8]) -> String {
    base64_with(
        bytes,
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    )
}

fn base64_url(bytes: &[u8]) -> String {
    base64_with(
        bytes,
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
    )
}

#[test]
fn base64_matches_the_standard_alphabet() {
    assert_eq!(base64_standard(b"foob"), "Zm9vYg==");
    assert_eq!(base64_standard(b"fooba"), "Zm9vYmE=");
    assert_eq!(base64_url(&[0xfb, 0xff]), "-_8=");
}

/// Every number in `text`, read as decimal and, for runs of hex digits, as hex: any of them
/// could be a seed printed by mistake.
fn numbers(text: &str) -> Vec<u64> {
    let mut found = Vec::new();
    for token in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        if let Ok(n) = token.parse::<u64>() {
            found.push(n);
        }
        let hex = token.trim_start_matches("0x");
        if !hex.is_empty()
            && hex.len() <= 16
            && hex.chars().all(|c| c.is_ascii_hexdigit())
            && let Ok(n) = u64::from_str_radix(hex, 16)
        {
            found.push(n);
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// The seed commitments of every run in the state dir, with the run's id.
fn commitments(state: &Path) -> Vec<(String, Vec<String>)> {
    let mut runs = Vec::new();
    for entry in std::fs::read_dir(state.join("runs")).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path().join("trajectory.jsonl")).unwrap();
        let verified = ale_harness::verify::verify_trajectory(&text).unwrap();
        let result = verified.result.expect("each session finished");
        runs.push((verified.run.run_id.to_string(), result.seed_commitments));
    }
    runs
}

#[test]
fn no_secret_key_or_hidden_seed_reaches_the_logs_at_trace_level() {
    let tmp = private_tempdir();
    let state = tmp.path().join("state");
    // Whole official sessions, short ones: trace logs run to a hundred lines a step.
    let tasks = tmp.path().join("tasks");
    std::fs::create_dir(&tasks).unwrap();
    let short = |file: &str, text: &str, from: &str, id: &str| {
        let text = text
            .replacen("id = \"", &format!("id = \"{id}-"), 1)
            .replace(from, "episodes = 3");
        std::fs::write(tasks.join(file), text).unwrap();
    };
    short(
        "cartpole.toml",
        include_str!("../../server/tasks/cartpole-balance.toml"),
        "episodes = 20",
        "short",
    );
    short(
        "nav2d.toml",
        include_str!("../../server/tasks/nav2d-barn.toml"),
        "episodes = 50",
        "short",
    );
    let mut server = Command::new(ALE)
        .args(["serve", "--listen", "127.0.0.1:0", "--tasks-dir"])
        .arg(&tasks)
        .arg("--state-dir")
        .arg(&state)
        .env("RUST_LOG", "trace")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server_stderr = server.stderr.take().unwrap();
    let stderr_reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = server_stderr.read_to_end(&mut all);
        all
    });
    let mut server_stdout = server.stdout.take().unwrap();
    let mut announced = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&announced).contains("evaluator key:") {
        let mut buf = [0u8; 512];
        let n = server_stdout.read(&mut buf).unwrap();
        assert!(n > 0 && Instant::now() < deadline, "serve announces itself");
        announced.extend_from_slice(&buf[..n]);
    }
    let mut logs = String::from_utf8_lossy(&announced).into_owned();

    logs += &harness_run(
        &state,
        &["--task", "short-cartpole-balance", "--policy", "heuristic"],
    );
    let submission = tmp.path().join("submission-in");
    std::fs::create_dir(&submission).unwrap();
    let weight = vec![0u8; 2 * 36 * 4];
    let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![2, 36], &weight)
        .unwrap();
    let policy = safetensors::serialize([("0.weight", view)], None).unwrap();
    std::fs::write(submission.join("policy.safetensors"), policy).unwrap();
    logs += &harness_run(
        &state,
        &[
            "--task",
            "short-nav2d-barn",
            "--submission",
            submission.to_str().unwrap(),
        ],
    );

    // SAFETY: signalling the evaluator this test started.
    unsafe {
        libc::kill(server.id() as i32, libc::SIGTERM);
    }
    let mut rest = Vec::new();
    server_stdout.read_to_end(&mut rest).unwrap();
    logs += &String::from_utf8_lossy(&rest);
    logs += &String::from_utf8_lossy(&stderr_reader.join().unwrap());
    assert!(server.wait().unwrap().success());
    for run in std::fs::read_dir(state.join("runs")).unwrap().flatten() {
        if let Ok(agent_log) = std::fs::read_to_string(run.path().join("agent.log")) {
            logs += &agent_log;
        }
    }
    // The logs are real trace logs, not an empty capture.
    assert!(logs.contains("TRACE"), "no trace-level line was captured");
    assert!(logs.lines().count() > 100, "{} lines", logs.lines().count());
    eprintln!(
        "{} lines, {} bytes of logs",
        logs.lines().count(),
        logs.len()
    );

    for file in ["evaluator.secret", "evaluator.key", "harness.key"] {
        let bytes = std::fs::read(state.join(file)).unwrap();
        assert_eq!(bytes.len(), 32, "{file}");
        for (what, form) in renderings(file, &bytes) {
            assert!(!logs.contains(&form), "the logs hold {what}: {form}");
        }
    }

    let secret: [u8; 32] = std::fs::read(state.join("evaluator.secret"))
        .unwrap()
        .try_into()
        .unwrap();
    let runs = commitments(&state);
    assert_eq!(runs.len(), 2);
    let candidates = numbers(&logs);
    for (run_id, committed) in &runs {
        for n in &candidates {
            let mut h = Sha256::new();
            h.update(n.to_be_bytes());
            h.update(run_id.as_bytes());
            h.update(secret);
            let commitment = to_hex(h.finalize());
            assert!(
                !committed.contains(&commitment),
                "the logs hold a hidden seed of {run_id}: {n}"
            );
        }
    }

    // No field that names a seed carries a value (seed commitments are public).
    for line in logs.lines() {
        let lower = line.to_lowercase();
        for (at, _) in lower.match_indices("seed") {
            let after = &lower[at + 4..];
            let is_commitment =
                after.starts_with("_commitment") || after.starts_with(" commitment");
            let has_value = after.starts_with('=')
                || after.starts_with("s=")
                || after.starts_with(": ")
                || after.starts_with("\":")
                || after.starts_with("(");
            assert!(
                is_commitment || !has_value,
                "a seed-named field with a value: {line}"
            );
        }
    }
}
