//! The harness as an operator uses it: `ale harness run/verify/score/runs`, `ale demo`,
//! `ale plot`, each a real process against a real evaluator.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ale_records::trajectory::{Chain, Level};

use common::{ALE, ale, private_tempdir, text};

/// Runs `ale harness run` with JSON progress and returns (report, run folder, combined output).
fn harness_run(state: &Path, task: &str, agent: &[&str]) -> (serde_json::Value, PathBuf, String) {
    let mut args = vec![
        "harness",
        "run",
        "--task",
        task,
        "--progress",
        "json",
        "--state-dir",
    ];
    let state_str = state.to_str().unwrap();
    args.push(state_str);
    args.push("--");
    args.extend(agent);
    let out = ale(&args);
    let all = text(&out);
    assert!(common::reported(&out.status), "{all}");
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap()
        .to_string();
    let event: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(event["event"], "report");
    (
        event["report"].clone(),
        PathBuf::from(event["run_dir"].as_str().unwrap()),
        all,
    )
}

#[test]
fn an_agent_that_passes_through_the_harness_cannot_read_its_own_result() {
    let tmp = private_tempdir();
    let (report, _, output) = harness_run(
        tmp.path(),
        "cartpole-balance",
        &[
            ALE,
            "agent",
            "--policy",
            "heuristic",
            "--try-reading-result",
        ],
    );
    assert_eq!(report["status"], "completed");
    assert!(
        output.contains("agent: GetEvalResult refused: PermissionDenied"),
        "the agent's own attempt must be refused:\n{output}"
    );
    assert!(report["score"]["score"].as_f64().unwrap() > 1.0);
}

#[test]
fn a_killed_agent_yields_a_finished_report_with_the_rest_failed() {
    let tmp = private_tempdir();
    let started = Instant::now();
    let (report, run_dir, _) = harness_run(
        tmp.path(),
        "cartpole-balance",
        &[
            ALE,
            "agent",
            "--policy",
            "heuristic",
            "--crash-after-steps",
            "700",
        ],
    );
    // Well inside the task's 600 s time budget: the harness notices the exit at once.
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(report["status"], "ended_early");
    assert!(report["agent"]["left_early"].as_bool().unwrap());
    assert_eq!(report["agent"]["exit"], "killed by signal 9");
    let message = report["status_message"].as_str().unwrap();
    assert!(
        message.contains("killed by signal 9 before finishing"),
        "{message}"
    );
    let outcomes: Vec<&str> = report["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes[0], "completed");
    assert_eq!(
        outcomes[1], "aborted",
        "the rollout in progress when the agent died"
    );
    assert!(outcomes[2..].iter().all(|o| *o == "not_run"));
    // 500 of 20 × 500 possible, failures at 0.
    assert_eq!(report["value"], 25.0);
    assert!(run_dir.join("report.json").exists() && run_dir.join("plot.png").exists());
    assert!(
        ale(&["harness", "verify", run_dir.to_str().unwrap()])
            .status
            .success()
    );
}

/// Re-seals every line of a trajectory after `edit` changed the events, as a forger who knows
/// the (public) chain rule would.
fn reseal(text: &str, edit: impl Fn(&mut Vec<serde_json::Value>)) -> String {
    let mut events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    edit(&mut events);
    let mut chain = Chain::new();
    let mut out = String::new();
    for e in events {
        let kind = serde_json::from_value(e["kind"].clone()).unwrap();
        let (line, _) = chain.seal(
            Level::TrustedEvaluator,
            kind,
            e["time_unix_ms"].as_u64().unwrap(),
            e["data"].clone(),
        );
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Verifies `content` as a loose trajectory file, with the public keys of `state`.
fn verify_text(dir: &Path, state: &Path, name: &str, content: &str) -> (bool, String) {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    let out = ale(&[
        "harness",
        "verify",
        path.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
    ]);
    (out.status.success(), text(&out))
}

#[test]
fn verify_accepts_what_the_evaluator_writes_and_rejects_every_tampering() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    // Completed, ended early with an aborted rollout, and a random agent's run.
    let (_, completed, _) = harness_run(
        &state,
        "acrobot-swingup",
        &[ALE, "agent", "--policy", "heuristic"],
    );
    let (_, crashed, _) = harness_run(
        &state,
        "cartpole-balance",
        &[ALE, "agent", "--crash-after-steps", "30"],
    );
    let (_, random, _) = harness_run(
        &state,
        "reacher-reach",
        &[ALE, "agent", "--policy", "random"],
    );
    for dir in [&completed, &crashed, &random] {
        let out = ale(&["harness", "verify", dir.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        for row in ["harness log", "evaluator signature", "harness signature"] {
            assert!(
                stdout
                    .lines()
                    .any(|l| l.trim_start().starts_with(row) && l.contains(" ok ")),
                "{row}: {stdout}"
            );
        }
    }

    let original = std::fs::read_to_string(completed.join("trajectory.jsonl")).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    let join = |ls: &[&str]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    let work = tmp.path();

    let (ok, out) = verify_text(work, &state, "copy.jsonl", &original);
    assert!(ok, "{out}");

    // A flipped byte in the middle of line 3.
    let mut bytes = original.clone().into_bytes();
    let offset = lines[0].len() + lines[1].len() + 2 + lines[2].len() / 2;
    bytes[offset] ^= 0x01;
    let (ok, out) = verify_text(
        work,
        &state,
        "flipped.jsonl",
        &String::from_utf8_lossy(&bytes),
    );
    assert!(!ok && out.contains("line 3:"), "{out}");

    // A deleted line.
    let mut deleted = lines.clone();
    deleted.remove(4);
    let (ok, out) = verify_text(work, &state, "deleted.jsonl", &join(&deleted));
    assert!(!ok && out.contains("line 5:"), "{out}");

    // A reordered pair.
    let mut swapped = lines.clone();
    swapped.swap(3, 4);
    let (ok, out) = verify_text(work, &state, "swapped.jsonl", &join(&swapped));
    assert!(!ok && out.contains("line 4:"), "{out}");

    // An edited EvalResult, left unsealed: the chain breaks on the last line.
    let last = lines.len();
    let mut edited = lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    edited[last - 1] = edited[last - 1].replacen("\"value\":", "\"value\":1", 1);
    let edited_refs: Vec<&str> = edited.iter().map(String::as_str).collect();
    let (ok, out) = verify_text(work, &state, "edited.jsonl", &join(&edited_refs));
    assert!(!ok && out.contains(&format!("line {last}:")), "{out}");

    // An edited EvalResult re-sealed into a valid chain: the result no longer adds up.
    let forged = reseal(&original, |events| {
        let data = &mut events.last_mut().unwrap()["data"];
        data["value"] = serde_json::json!(10.0);
    });
    let (ok, out) = verify_text(work, &state, "forged.jsonl", &forged);
    assert!(
        !ok && out.contains(&format!("line {last}:")) && out.contains("not the mean"),
        "{out}"
    );

    // Rewriting one rollout's metric and the value to match: the rollout event disagrees.
    let forged = reseal(&original, |events| {
        let data = &mut events.last_mut().unwrap()["data"];
        let n = data["episodes"].as_array().unwrap().len() as f64;
        let first = data["episodes"][0]["metric"].as_f64().unwrap();
        data["episodes"][0]["metric"] = serde_json::json!(1.0);
        let value = data["value"].as_f64().unwrap() + (1.0 - first) / n;
        data["value"] = serde_json::json!(value);
    });
    let (ok, out) = verify_text(work, &state, "forged2.jsonl", &forged);
    assert!(
        !ok && out.contains("differs from its rollout_finished event"),
        "{out}"
    );

    // A forgery that is internally consistent (here: one timestamp changed, every hash
    // re-sealed) passes the chain and the event checks; only the evaluator's signature on the
    // head tells it apart, loose or in its run folder.
    let forged = reseal(&original, |events| {
        let t = events[0]["time_unix_ms"].as_u64().unwrap();
        events[0]["time_unix_ms"] = serde_json::json!(t + 1);
    });
    ale_harness::verify::verify_trajectory(&forged).expect("consistent apart from the signature");
    let (ok, out) = verify_text(work, &state, "consistent-forgery.jsonl", &forged);
    assert!(!ok && out.contains("evaluator's signature"), "{out}");
    std::fs::write(completed.join("trajectory.jsonl"), &forged).unwrap();
    let out = ale(&["harness", "verify", completed.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("trajectory.jsonl: the evaluator's signature"),
        "{}",
        text(&out)
    );
}

/// `ale harness verify --json DIR`: its exit status and the verdict it printed.
fn verify_json(dir: &Path) -> (bool, serde_json::Value) {
    let out = ale(&["harness", "verify", "--json", dir.to_str().unwrap()]);
    let verdict = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", text(&out)));
    (out.status.success(), verdict)
}

#[test]
fn verify_json_says_what_the_library_concludes_of_a_good_and_a_tampered_run() {
    use ale_harness::verify::{RecordKeys, RunVerdict, verify_run_dir};
    let tmp = private_tempdir();
    let (_, run_dir, _) = harness_run(
        tmp.path(),
        "cartpole-balance",
        &[ALE, "agent", "--policy", "heuristic"],
    );
    let keys = RecordKeys::from_state_dir(tmp.path()).unwrap();
    let library = |dir: &Path| serde_json::to_value(RunVerdict::from(verify_run_dir(dir, &keys)));

    let (ok, printed) = verify_json(&run_dir);
    assert!(ok, "{printed:#}");
    assert_eq!(printed["verdict"], "verified");
    assert_eq!(printed, library(&run_dir).unwrap());
    assert_eq!(
        printed["report"]["run_id"],
        printed["trajectory"]["run"]["run_id"]
    );
    assert!(printed["harness_log"]["signature"].is_string());

    // Found by an attacker helper: a field added to the report (here, a claim beside the
    // score) passed, as the report was read into its type and compared there.
    let report_path = run_dir.join("report.json");
    let original = std::fs::read_to_string(&report_path).unwrap();
    let mut report: serde_json::Value = serde_json::from_str(&original).unwrap();
    report["score"]["certified_by"] = serde_json::json!("the evaluator");
    std::fs::write(&report_path, serde_json::to_string(&report).unwrap()).unwrap();
    let (ok, printed) = verify_json(&run_dir);
    assert!(!ok, "{printed:#}");
    assert!(
        printed["reason"]
            .as_str()
            .unwrap()
            .ends_with("say in: score"),
        "{printed:#}"
    );
    let mut report: serde_json::Value = serde_json::from_str(&original).unwrap();
    report["endorsement"] = serde_json::json!("gold");
    std::fs::write(&report_path, serde_json::to_string(&report).unwrap()).unwrap();
    let (ok, printed) = verify_json(&run_dir);
    assert!(!ok, "{printed:#}");
    assert!(
        printed["reason"]
            .as_str()
            .unwrap()
            .ends_with("say in: endorsement"),
        "{printed:#}"
    );
    // Rewritten in another layout, with nothing changed, it still verifies.
    let report: serde_json::Value = serde_json::from_str(&original).unwrap();
    std::fs::write(&report_path, serde_json::to_string(&report).unwrap()).unwrap();
    assert!(verify_json(&run_dir).0);

    // A report whose score was raised no longer says what the signed records say.
    let mut report: serde_json::Value = serde_json::from_str(&original).unwrap();
    report["score"]["score"] = serde_json::json!(1.5);
    std::fs::write(&report_path, serde_json::to_string(&report).unwrap()).unwrap();
    let (ok, printed) = verify_json(&run_dir);
    assert!(!ok, "{printed:#}");
    assert_eq!(printed["verdict"], "broken");
    assert_eq!(printed, library(&run_dir).unwrap());
    assert_eq!(printed["path"], report_path.to_str().unwrap());
    assert!(
        printed["reason"].as_str().unwrap().contains("score"),
        "{printed:#}"
    );
}

#[test]
fn score_reports_the_breakdown_from_a_trajectory_and_from_a_bare_result() {
    let tmp = private_tempdir();
    let (report, run_dir, _) = harness_run(
        tmp.path(),
        "cartpole-balance",
        &[ALE, "agent", "--policy", "random"],
    );
    let out = ale(&[
        "harness",
        "score",
        run_dir.join("trajectory.jsonl").to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let breakdown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(breakdown["score"], report["score"]["score"]);

    let result = tmp.path().join("result.json");
    std::fs::write(
        &result,
        r#"{"task_id": "nav2d-barn", "value": 10.0, "safety": {"collisions": 2.0}}"#,
    )
    .unwrap();
    let out = ale(&["harness", "score", result.to_str().unwrap(), "--json"]);
    let b: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Lower is better: 20 / 10 = 2, capped at 1.5, halved by the collisions.
    assert_eq!(b["score"], 0.75);

    let reproduction = tmp.path().join("repro.json");
    std::fs::write(
        &reproduction,
        r#"{"task_id": "mountaincar-sarsa-reproduction", "value": 120.0}"#,
    )
    .unwrap();
    let out = ale(&["harness", "score", reproduction.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("score         0 — faithfulness gate failed"),
        "{stdout}"
    );
    let verdict = tmp.path().join("verdict.json");
    std::fs::write(
        &verdict,
        r#"{"pass": true, "reason": "Sarsa with tile coding as in section 10.1"}"#,
    )
    .unwrap();
    let out = ale(&[
        "harness",
        "score",
        reproduction.to_str().unwrap(),
        "--faithfulness",
        verdict.to_str().unwrap(),
        "--json",
    ]);
    let b: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(b["score"], 130.0 / 120.0);
}

#[test]
fn demo_runs_a_whole_official_evaluation_in_seconds() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("demo");
    let mut child = Command::new(ALE)
        .args(["demo", "--state-dir", state.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "ale demo did not finish within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let score: f64 = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("score"))
        .and_then(|s| s.trim().parse().ok())
        .expect("a score line");
    assert!(score > 0.0);
    let runs = std::fs::read_dir(state.join("runs")).unwrap().count();
    assert_eq!(runs, 1);
    let run = std::fs::read_dir(state.join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let verified = ale(&["harness", "verify", run.to_str().unwrap()]);
    assert!(verified.status.success(), "{}", text(&verified));

    let listed = ale(&["harness", "runs", "--state-dir", state.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("cartpole-balance"));
    let png = tmp.path().join("run.png");
    let plotted = ale(&["plot", run.to_str().unwrap(), "-o", png.to_str().unwrap()]);
    assert!(plotted.status.success(), "{}", text(&plotted));
    assert_eq!(&std::fs::read(&png).unwrap()[..4], b"\x89PNG");
}

/// `ale harness run --submission DIR` on a batch task: no agent runs; the harness copies the
/// entrypoint into the evaluator's submission dir, submits it, and ends as an interactive run
/// does, with a report that `ale harness verify` accepts.
#[test]
fn a_batch_submission_runs_through_the_harness_and_its_records_verify() {
    let tmp = private_tempdir();
    let state = tmp.path().join("state");
    let submission = tmp.path().join("my-submission");
    std::fs::create_dir(&submission).unwrap();
    // An MLP with all-zero weights: observation (36) in, (speed, turn rate) = (0, 0) out. The
    // robot stays where it starts, so every rollout runs to its 50 s limit.
    let weight = vec![0u8; 2 * 36 * 4];
    let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![2, 36], &weight)
        .unwrap();
    let file = safetensors::serialize([("0.weight", view)], None).unwrap();
    std::fs::write(submission.join("policy.safetensors"), &file).unwrap();
    let out = ale(&[
        "harness",
        "run",
        "--task",
        "nav2d-barn",
        "--submission",
        submission.to_str().unwrap(),
        "--progress",
        "json",
        "--state-dir",
        state.to_str().unwrap(),
    ]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap()
        .to_string();
    let event: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(event["event"], "report", "{all}");
    let report = &event["report"];
    assert_eq!(report["task"]["id"], "nav2d-barn");
    assert_eq!(report["status"], "completed", "{report}");
    assert_eq!(
        report["status_message"], "all 50 rollouts played",
        "{report}"
    );
    let run_dir = PathBuf::from(event["run_dir"].as_str().unwrap());
    // The run read the copy in its own folder, which is gone with the run; its snapshot's
    // digest is the file's.
    let trajectory = std::fs::read_to_string(run_dir.join("trajectory.jsonl")).unwrap();
    let digest = {
        use sha2::Digest;
        format!("{:x}", sha2::Sha256::digest(&file))
    };
    assert!(
        trajectory.contains(&digest),
        "no submission_received with {digest}"
    );
    let run_id = ale_proto::RunId::from_wire(report["run_id"].as_str().unwrap().to_string());
    assert!(!ale_records::layout::run_submission_dir(&state, &run_id).exists());
    let out = ale(&["harness", "verify", run_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));

    // An agent and a submission together are refused before anything runs.
    let out = ale(&[
        "harness",
        "run",
        "--task",
        "nav2d-barn",
        "--submission",
        submission.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert!(!out.status.success());
    assert!(text(&out).contains("--submission"), "{}", text(&out));

    // Found by an attacker helper: a policy file that was a link to the state dir's private
    // key was copied through the link, and the refusal's message put the key's first 8 bytes
    // into the signed records. A link is refused, and so is a hard link to a key.
    let key = std::fs::read(state.join("evaluator.key")).unwrap();
    let key_prefix = u64::from_le_bytes(key[..8].try_into().unwrap()).to_string();
    let entry = submission.join("policy.safetensors");
    let run_submission = || {
        ale(&[
            "harness",
            "run",
            "--task",
            "nav2d-barn",
            "--submission",
            submission.to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
        ])
    };
    for how in ["symbolic", "hard"] {
        std::fs::remove_file(&entry).unwrap();
        let key_file = state.join("evaluator.key");
        if how == "symbolic" {
            std::os::unix::fs::symlink(&key_file, &entry).unwrap();
        } else {
            std::fs::hard_link(&key_file, &entry).unwrap();
        }
        let out = run_submission();
        let said = text(&out);
        assert!(!out.status.success(), "{how}: {said}");
        let why = if how == "symbolic" {
            "it is a symbolic link"
        } else {
            "it is one of the evaluator's secret or private keys"
        };
        assert!(said.contains(why), "{how}: {said}");
        assert!(!said.contains(&key_prefix), "{how}: {said}");
        for run in std::fs::read_dir(state.join("runs")).unwrap() {
            for file in std::fs::read_dir(run.unwrap().path()).unwrap() {
                let bytes = std::fs::read(file.unwrap().path()).unwrap_or_default();
                let text = String::from_utf8_lossy(&bytes);
                assert!(
                    !text.contains(&key_prefix),
                    "{how}: the key's bytes are on record"
                );
            }
        }
        let copied = std::fs::read(state.join("submission").join("policy.safetensors"));
        assert_ne!(copied.ok(), Some(key.clone()), "{how}: the key was copied");
    }

    // A file the evaluator cannot load is the submission's fault, not the agent's exit nor the
    // evaluator's: the report says so, and the run exits 3.
    std::fs::remove_file(&entry).unwrap();
    std::fs::write(&entry, b"not a safetensors file").unwrap();
    let out = run_submission();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains("the submission could not be played"),
        "{said}"
    );
    assert!(
        said.contains("the submitted policy cannot be used"),
        "{said}"
    );
}

/// `ale plot --compare`: two runs of one task (given by id, by folder or by trajectory) in one
/// picture, each line of its output saying whether the run verified; runs of two tasks are
/// refused, naming both, and nothing is written.
#[test]
fn plot_compare_draws_two_runs_of_one_task_and_refuses_two_tasks() {
    let tmp = private_tempdir();
    let state = tmp.path().join("state");
    let (heuristic, heuristic_dir, _) = harness_run(
        &state,
        "cartpole-balance",
        &[ALE, "agent", "--policy", "heuristic"],
    );
    let (random, random_dir, _) = harness_run(
        &state,
        "cartpole-balance",
        &[ALE, "agent", "--policy", "random"],
    );
    let (_, mountaincar_dir, _) = harness_run(
        &state,
        "mountaincar",
        &[ALE, "agent", "--policy", "heuristic"],
    );
    let state_arg = state.to_str().unwrap();
    let heuristic_id = heuristic["run_id"].as_str().unwrap();
    let random_id = random["run_id"].as_str().unwrap();

    let svg = tmp.path().join("compare.svg");
    let out = ale(&[
        "plot",
        "--compare",
        heuristic_id,
        random_dir.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
        "--state-dir",
        state_arg,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let verdict = |line: &str| line.rsplit("  ").next().unwrap().to_string();
    assert!(lines[0].starts_with(heuristic_id), "{stdout}");
    assert_eq!(verdict(lines[0]), "verified", "{stdout}");
    assert!(lines[1].starts_with(random_id), "{stdout}");
    assert_eq!(verdict(lines[1]), "verified", "{stdout}");
    let short = |id: &str| ale_proto::RunId::from_wire(id).short().to_string();
    let picture = std::fs::read_to_string(&svg).unwrap();
    // Each run is named by its agent, never by its id.
    for agent in ["policy heuristic (completed)", "policy random (completed)"] {
        assert!(picture.contains(agent), "{agent} not in {picture}");
    }
    assert!(picture.contains("cartpole-balance: policy heuristic vs policy random"));
    for id in [heuristic_id, random_id] {
        assert!(!picture.contains(&short(id)), "{id} in {picture}");
    }
    assert!(!picture.contains("NOT VERIFIED"));

    // With no -o, the plot is named for the runs, in the current directory.
    let here = tmp.path().join("here");
    std::fs::create_dir(&here).unwrap();
    let out = Command::new(ALE)
        .args([
            "plot",
            "--compare",
            heuristic_id,
            random_id,
            "--state-dir",
            state_arg,
        ])
        .current_dir(&here)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let default = format!("{}-vs-{}.png", short(heuristic_id), short(random_id));
    assert!(
        text(&out).contains(&format!("wrote {default}")),
        "{}",
        text(&out)
    );
    let png = std::fs::read(here.join(&default)).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
    // --width, --height and --dpi: the image's size, and its resolution in pHYs (px/m).
    let out = Command::new(ALE)
        .args(["plot", heuristic_id, "--state-dir", state_arg])
        .args([
            "--width", "1500", "--height", "1000", "--dpi", "150", "--title", "Fig. 2",
        ])
        .current_dir(&here)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let png = std::fs::read(here.join(format!("{}.png", short(heuristic_id)))).unwrap();
    let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((be(16), be(20)), (1500, 1000));
    let phys = png
        .windows(4)
        .position(|w| w == b"pHYs")
        .expect("a pHYs chunk");
    assert_eq!(be(phys + 4), 5906);
    // --dpi means nothing to an SVG: refused, saying so.
    let out = ale(&[
        "plot",
        heuristic_id,
        "--dpi",
        "300",
        "-o",
        svg.to_str().unwrap(),
        "--state-dir",
        state_arg,
    ]);
    assert!(!out.status.success());
    assert!(text(&out).contains("--dpi is for PNG"), "{}", text(&out));

    // One run named two ways is refused.
    let out = ale(&[
        "plot",
        "--compare",
        random_id,
        random_dir.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
        "--state-dir",
        state_arg,
    ]);
    assert!(!out.status.success());
    assert!(text(&out).contains("was given twice"), "{}", text(&out));

    // A trajectory file compares too, on what it holds alone.
    let png = tmp.path().join("compare.png");
    let out = ale(&[
        "plot",
        "--compare",
        heuristic_dir.join("trajectory.jsonl").to_str().unwrap(),
        random_id,
        "-o",
        png.to_str().unwrap(),
        "--state-dir",
        state_arg,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(&std::fs::read(&png).unwrap()[..4], b"\x89PNG");

    let refused = tmp.path().join("refused.png");
    let out = ale(&[
        "plot",
        "--compare",
        random_id,
        mountaincar_dir.to_str().unwrap(),
        "-o",
        refused.to_str().unwrap(),
        "--state-dir",
        state_arg,
    ]);
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains("a run of cartpole-balance") && said.contains("a run of mountaincar"),
        "{said}"
    );
    assert!(!refused.exists());

    // A run whose trajectory was added to still plots, marked NOT VERIFIED, and the command
    // fails.
    let mut trajectory = std::fs::OpenOptions::new()
        .append(true)
        .open(random_dir.join("trajectory.jsonl"))
        .unwrap();
    std::io::Write::write_all(&mut trajectory, b"{\"forged\":true}\n").unwrap();
    let out = ale(&[
        "plot",
        "--compare",
        heuristic_id,
        random_id,
        "-o",
        svg.to_str().unwrap(),
        "--state-dir",
        state_arg,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains(&format!("the records of {random_id} do not verify")),
        "{said}"
    );
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(verdict(&lines[0]), "verified", "{said}");
    assert!(verdict(&lines[1]).starts_with("BROKEN "), "{said}");
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(
        picture.contains("policy random (completed) · NOT VERIFIED"),
        "{said}"
    );
}

/// `ale harness run` with `args` on `state`: (exit code, stdout, stderr).
fn harness_run_args(state: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["harness", "run", "--state-dir", state.to_str().unwrap()];
    if !args.contains(&"--progress") {
        all.extend(["--progress", "none"]);
    }
    all.extend(args);
    let out = ale(&all);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn run_folders(state: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(state.join("runs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn the_exit_code_says_how_a_run_ended_and_refusals_record_nothing() {
    let tmp = private_tempdir();
    let state = tmp.path();
    let (code, out, _) = harness_run_args(
        state,
        &["--task", "cartpole-balance", "--policy", "heuristic"],
    );
    assert_eq!(code, Some(0), "{out}");
    // An agent that exits at once: its run is reported, and exits 3.
    let (code, out, err) =
        harness_run_args(state, &["--task", "acrobot-swingup", "--", "/bin/false"]);
    assert_eq!(code, Some(3), "{out}{err}");
    assert!(
        out.contains("Official run") && out.contains("ended early"),
        "{out}"
    );
    assert!(
        err.contains("the agent ended before its rollouts were played (exit code 3)"),
        "{err}"
    );
    assert_eq!(run_folders(state).len(), 2);
    // A built-in policy on a batch task: refused before any run exists, said once.
    let (code, _, err) =
        harness_run_args(state, &["--task", "nav2d-barn", "--policy", "heuristic"]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.matches("is a batch task").count(), 1, "{err}");
    assert!(err.contains("--submission DIR"), "{err}");
    // A tag a table cannot show: refused before the run too.
    let (code, _, err) = harness_run_args(
        state,
        &[
            "--task",
            "cartpole-balance",
            "--policy",
            "random",
            "--tag",
            "a,b",
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("tag \"a,b\""), "{err}");
    assert_eq!(run_folders(state).len(), 2, "refused runs leave no folder");
}

#[test]
fn runs_are_named_listed_filtered_ranked_and_removed() {
    let tmp = private_tempdir();
    let state = tmp.path();
    let state_str = state.to_str().unwrap();
    let ok = |args: &[&str]| {
        let (code, out, err) = harness_run_args(state, args);
        assert_eq!(code, Some(0), "{out}{err}");
        out
    };
    let out = ok(&[
        "--task",
        "cartpole-balance",
        "--policy",
        "heuristic",
        "--name",
        "heuristic, v1",
        "--tag",
        "paper",
    ]);
    assert!(
        out.contains("heuristic, v1") && out.contains("95% interval"),
        "{out}"
    );
    ok(&[
        "--task",
        "cartpole-balance",
        "--policy",
        "random",
        "--name",
        "random",
    ]);
    ok(&[
        "--task",
        "cartpole-balance",
        "--policy",
        "random",
        "--name",
        "random",
    ]);

    let listed = ale(&["harness", "runs", "--state-dir", state_str, "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let heuristic = rows.iter().find(|r| r["name"] == "heuristic, v1").unwrap();
    assert_eq!(heuristic["tags"], serde_json::json!(["paper"]));
    assert_eq!(heuristic["agent"], "policy heuristic");
    assert_eq!(heuristic["value"], 500.0);
    assert!(heuristic["score_ci"]["low"].as_f64().unwrap() <= heuristic["score"].as_f64().unwrap());
    assert!(heuristic["duration_seconds"].as_f64().unwrap() > 0.0);
    let heuristic_id = heuristic["run_id"].as_str().unwrap().to_string();

    let csv = ale(&[
        "harness",
        "runs",
        "--state-dir",
        state_str,
        "--tag",
        "paper",
        "--csv",
    ]);
    let csv = String::from_utf8_lossy(&csv.stdout).to_string();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(
        lines[1].starts_with(&format!(
            "{heuristic_id},\"heuristic, v1\",paper,cartpole-balance,completed,"
        )),
        "{csv}"
    );
    let table = text(&ale(&[
        "harness",
        "runs",
        "--state-dir",
        state_str,
        "--name",
        "RANDOM",
    ]));
    assert_eq!(table.lines().count(), 3, "a header and two runs:\n{table}");
    assert!(
        table.contains("SCORE ± 95%") && table.contains(" ± "),
        "{table}"
    );

    // The leaderboard: one line per agent, best first; a tampered run is left off it.
    let board = |json: bool| {
        let mut args = vec![
            "harness",
            "leaderboard",
            "--task",
            "cartpole-balance",
            "--state-dir",
            state_str,
        ];
        if json {
            args.push("--json");
        }
        ale(&args)
    };
    let ranked: serde_json::Value = serde_json::from_slice(&board(true).stdout).unwrap();
    let standings = ranked["standings"].as_array().unwrap();
    assert_eq!(standings.len(), 2);
    assert_eq!(standings[0]["agent"], "heuristic, v1");
    assert_eq!(standings[1]["agent"], "random");
    assert_eq!(standings[1]["runs"], 2);
    let random_best = standings[1]["run_id"].as_str().unwrap().to_string();
    let report_path = state.join("runs").join(&random_best).join("report.json");
    let mut report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    report["score"]["score"] = serde_json::json!(9.0);
    std::fs::write(&report_path, serde_json::to_string(&report).unwrap()).unwrap();
    let ranked: serde_json::Value = serde_json::from_slice(&board(true).stdout).unwrap();
    assert_eq!(ranked["standings"][0]["agent"], "heuristic, v1", "{ranked}");
    assert_ne!(ranked["standings"][1]["run_id"], random_best.as_str());
    assert_eq!(ranked["left_out"][0]["run_id"], random_best.as_str());
    let shown = text(&board(false));
    assert!(
        shown.contains("Left out, not ranked (1)") && shown.contains("NOT VERIFIED"),
        "{shown}"
    );

    // verify takes a run id; it finds the changed number.
    let verified = ale(&["harness", "verify", &heuristic_id, "--state-dir", state_str]);
    assert!(verified.status.success(), "{}", text(&verified));
    assert!(text(&verified).contains("95% interval"));
    let broken = ale(&["harness", "verify", &random_best, "--state-dir", state_str]);
    assert!(!broken.status.success());
    assert!(text(&broken).contains("score"), "{}", text(&broken));

    // rm: archived out of the listing, then removed for good.
    let archived = ale(&[
        "harness",
        "runs",
        "rm",
        &random_best,
        "--archive",
        "--state-dir",
        state_str,
    ]);
    assert!(archived.status.success(), "{}", text(&archived));
    assert!(state.join("archive/runs").join(&random_best).is_dir());
    let removed = ale(&[
        "harness",
        "runs",
        "rm",
        &heuristic_id,
        "--state-dir",
        state_str,
    ]);
    assert!(removed.status.success(), "{}", text(&removed));
    assert!(!state.join("runs").join(&heuristic_id).exists());
    let left: serde_json::Value = serde_json::from_slice(
        &ale(&["harness", "runs", "--state-dir", state_str, "--json"]).stdout,
    )
    .unwrap();
    assert_eq!(left.as_array().unwrap().len(), 1);
    // A run of the task whose report cannot be read is left off the board, and said so.
    let last = left[0]["run_id"].as_str().unwrap().to_string();
    std::fs::remove_file(state.join("runs").join(&last).join("report.json")).unwrap();
    let ranked: serde_json::Value = serde_json::from_slice(&board(true).stdout).unwrap();
    assert!(
        ranked["standings"].as_array().unwrap().is_empty(),
        "{ranked}"
    );
    assert_eq!(ranked["left_out"][0]["run_id"], last.as_str());
    assert!(
        ranked["left_out"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("no readable report"),
        "{ranked}"
    );
    let nothing = ale(&[
        "harness",
        "runs",
        "rm",
        "run-doesnotexist",
        "--state-dir",
        state_str,
    ]);
    assert!(!nothing.status.success());
    assert!(
        text(&nothing).contains("neither a file, a folder, nor a run"),
        "{}",
        text(&nothing)
    );
}

#[test]
fn report_statistics_are_checked_and_version_2_reports_still_verify() {
    let tmp = private_tempdir();
    let (report, run_dir, _) = harness_run(
        tmp.path(),
        "pendulum-swingup",
        &[ALE, "agent", "--policy", "heuristic"],
    );
    let stats = &report["statistics"];
    let (low, high) = (
        stats["metric"]["mean_ci"]["low"].as_f64().unwrap(),
        stats["metric"]["mean_ci"]["high"].as_f64().unwrap(),
    );
    let mean = report["value"].as_f64().unwrap();
    assert!(low < mean && mean < high, "{stats}");
    assert!(stats["metric"]["std"].as_f64().unwrap() > 0.0);
    assert_eq!(stats["metric"]["n"], 20);
    assert_eq!(stats["metric"]["method"]["resamples"], 2000);
    assert_eq!(report["report_version"], 3);
    let path = run_dir.join("report.json");
    let original = std::fs::read_to_string(&path).unwrap();
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_str(&original).unwrap();
        f(&mut v);
        std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        ale(&["harness", "verify", run_dir.to_str().unwrap()])
    };
    // A narrower interval than the rollouts give is caught.
    let narrowed =
        edit(&|v| v["statistics"]["metric"]["mean_ci"]["low"] = serde_json::json!(mean - 0.001));
    assert!(!narrowed.status.success());
    assert!(
        text(&narrowed).contains("statistics"),
        "{}",
        text(&narrowed)
    );
    // A report of before statistics is checked as that version wrote it.
    let old = edit(&|v| {
        v.as_object_mut().unwrap().remove("statistics");
        v["report_version"] = serde_json::json!(2);
    });
    assert!(old.status.success(), "{}", text(&old));
    // But a version-3 report cannot drop them.
    let dropped = edit(&|v| {
        v.as_object_mut().unwrap().remove("statistics");
    });
    assert!(!dropped.status.success());
}

#[test]
fn two_runs_on_one_seed_set_are_paired_rollout_for_rollout() {
    let tmp = private_tempdir();
    let state = tmp.path();
    let run = |set: Option<&str>| {
        let mut args = vec!["--task", "pendulum-swingup", "--progress", "json"];
        if let Some(set) = set {
            args.extend(["--seed-set", set]);
        }
        args.extend(["--policy", "heuristic"]);
        let (code, out, err) = harness_run_args(state, &args);
        assert_eq!(code, Some(0), "{out}{err}");
        let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        last["report"].clone()
    };
    let metrics = |r: &serde_json::Value| -> Vec<f64> {
        r["episodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["metric"].as_f64().unwrap())
            .collect()
    };
    let (a, b, fresh) = (run(Some("benchmark")), run(Some("benchmark")), run(None));
    // The heuristic is deterministic: the same seeds give the same rollouts.
    assert_eq!(metrics(&a), metrics(&b));
    assert_ne!(metrics(&a), metrics(&fresh));
    assert_eq!(a["seed_set"], b["seed_set"]);
    assert_eq!(a["seed_set"]["name"], "benchmark");
    assert!(fresh.get("seed_set").is_none());
    let id = |r: &serde_json::Value| r["run_id"].as_str().unwrap().to_string();
    let state_str = state.to_str().unwrap();
    let png = state.join("compare.png");
    let compare = |x: &str, y: &str| {
        let out = ale(&[
            "plot",
            "--compare",
            x,
            y,
            "-o",
            png.to_str().unwrap(),
            "--state-dir",
            state_str,
        ]);
        assert!(out.status.success(), "{}", text(&out));
        text(&out)
    };
    let paired = compare(&id(&a), &id(&b));
    assert!(
        paired.contains(
            "difference +0.0000 [+0.0000, +0.0000] (95%, paired by seed) · P(first better) 0.50"
        ),
        "{paired}"
    );
    let unpaired = compare(&id(&a), &id(&fresh));
    assert!(unpaired.contains("unpaired"), "{unpaired}");
    // An unknown set is refused before any run exists.
    let (code, _, err) = harness_run_args(
        state,
        &[
            "--task",
            "pendulum-swingup",
            "--seed-set",
            "nope",
            "--policy",
            "heuristic",
        ],
    );
    assert_eq!(code, Some(1));
    assert!(err.contains("no evaluation seed set \"nope\""), "{err}");
    assert_eq!(run_folders(state).len(), 3);
}

/// `ale harness run --dry-run`: the preflight alone. A script relative to the harness's
/// folder needs `--workdir`, one the sandbox does not show needs `--expose`, an unknown task is
/// named; nothing is started or recorded, and the exit status says whether all is well.
#[test]
fn a_dry_run_checks_every_path_argument_and_records_nothing() {
    let tmp = private_tempdir();
    let state = tmp.path().join("state");
    let project = tempfile::tempdir().unwrap();
    let project_dir = std::fs::canonicalize(project.path()).unwrap();
    std::fs::write(project_dir.join("agent.py"), "print('hi')\n").unwrap();
    let dry_run = |extra: &[&str], agent: &[&str]| {
        let mut command = Command::new(ALE);
        command
            .current_dir(&project_dir)
            .args(["harness", "run", "--task", "cartpole-balance", "--dry-run"])
            .arg("--state-dir")
            .arg(&state)
            .args(extra)
            .arg("--")
            .args(agent);
        command.output().unwrap()
    };
    // The script beside the harness, and the agent in an empty folder of its own.
    let out = dry_run(&[], &["python3", "agent.py"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("warning: the agent's argument agent.py"),
        "{all}"
    );
    assert!(
        all.contains(&format!("--workdir {}", project_dir.display())),
        "{all}"
    );
    // Given that folder, all is well.
    let out = dry_run(&["--workdir", "."], &["python3", "agent.py"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("Every check passed."), "{all}");
    // The script by its whole path, in /tmp (which the sandbox replaces), from another folder;
    // through `sh -c` as the console starts commands.
    let elsewhere = tempfile::tempdir().unwrap();
    let line = format!("python3 {}/agent.py", project_dir.display());
    let out = dry_run(
        &["--workdir", elsewhere.path().to_str().unwrap()],
        &["sh", "-c", &line],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains(&format!("--expose {}", project_dir.display())),
        "{all}"
    );
    // An unknown task.
    let out = Command::new(ALE)
        .args(["harness", "run", "--task", "no-such-task", "--dry-run"])
        .arg("--state-dir")
        .arg(&state)
        .args(["--policy", "heuristic"])
        .output()
        .unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("no task no-such-task"), "{all}");
    // No evaluator was started and no run recorded: the state dir was never made.
    assert!(!state.exists(), "{}", state.display());
}

/// `ale harness run --tasks-dir DIR`: the evaluator the harness starts has DIR's tasks.
#[test]
fn the_harness_starts_its_evaluator_with_the_tasks_dir_given() {
    let tmp = private_tempdir();
    let tasks = tempfile::tempdir().unwrap();
    let task = include_str!("../../server/tasks/cartpole-balance.toml").replace(
        "id = \"cartpole-balance\"",
        "id = \"cartpole-from-a-tasks-dir\"",
    );
    std::fs::write(tasks.path().join("custom.toml"), task).unwrap();
    let state = tmp.path().to_str().unwrap();
    let out = ale(&[
        "harness",
        "run",
        "--task",
        "cartpole-from-a-tasks-dir",
        "--tasks-dir",
        tasks.path().to_str().unwrap(),
        "--policy",
        "heuristic",
        "--progress",
        "json",
        "--state-dir",
        state,
    ]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap()
        .to_string();
    let event: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(event["report"]["task"]["id"], "cartpole-from-a-tasks-dir");
    assert_eq!(event["report"]["status"], "completed");
}

/// On a terminal, `ale harness run` draws a progress bar; the agent's own output goes into
/// agent.log, not across the bar. (`script` gives the harness a terminal.)
#[test]
fn the_agents_output_stays_off_the_progress_bar() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` to give the harness a terminal");
        return;
    }
    let tmp = private_tempdir();
    let state = tmp.path().display().to_string();
    // The agent's line is made by its shell, so the command line (in the summary) does not
    // hold it.
    let agent = format!("echo AGENT-SAYS-$((40 + 2)); exec {ALE} agent --policy heuristic");
    let harness = format!(
        "{ALE} harness run --task cartpole-balance --sandbox none --state-dir {state} -- sh -c '{agent}'"
    );
    let out = Command::new("script")
        .args(["-qec", &harness, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let terminal = text(&out);
    assert!(out.status.success(), "{terminal}");
    assert!(terminal.contains('█'), "no progress bar:\n{terminal}");
    assert!(
        !terminal.contains("AGENT-SAYS-42"),
        "the agent wrote on the terminal:\n{terminal}"
    );
    assert!(terminal.contains("agent log"), "{terminal}");
    let run = std::fs::read_dir(tmp.path().join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let log = std::fs::read_to_string(run.join("agent.log")).unwrap();
    assert!(log.contains("AGENT-SAYS-42"), "{log}");
}

/// `ale demo` in its own temporary folder says, at its end, that the folder is kept and how to
/// remove it.
#[test]
fn the_demo_says_where_its_temporary_state_dir_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(ALE)
        .arg("demo")
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    let kept: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let dir = kept[0].display().to_string();
    assert!(
        stdout.contains(&format!(
            "The demo's state dir is kept, so the run can be looked at: {dir}"
        )),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("rm -r {dir}")), "{stdout}");
}

#[test]
fn a_bundle_carries_a_run_to_a_recipient_who_verifies_it_and_holds_no_seed() {
    let tmp = private_tempdir();
    let state = tmp.path().to_path_buf();
    let (report, run_dir, _) = harness_run(
        &state,
        "cartpole-balance",
        &[ALE, "agent", "--policy", "heuristic"],
    );
    let run_id = report["run_id"].as_str().unwrap().to_string();
    let state_str = state.to_str().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let at = |name: &str| out_dir.path().join(name).to_str().unwrap().to_string();

    // Plain: verifies with the keys it carries, and says where they came from.
    let made = ale(&[
        "harness",
        "bundle",
        &run_id,
        "-o",
        &at("run.alebundle"),
        "--state-dir",
        state_str,
    ]);
    assert!(made.status.success(), "{}", text(&made));
    let bundle = std::fs::read_to_string(at("run.alebundle")).unwrap();
    assert!(bundle.contains("ale-run-bundle/1") && bundle.contains("harness.jsonl"));
    let agent_said = std::fs::read_to_string(run_dir.join("agent.log")).unwrap();
    let first = agent_said.lines().next().unwrap();
    assert!(!bundle.contains(first), "the agent's output stays home");
    let secret = std::fs::read(state.join("evaluator.secret")).unwrap();
    let secret_hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    assert!(!bundle.contains(&secret_hex));
    // Alone, the keys it carries prove nothing: checked, but not pinned.
    let unpinned = ale(&["harness", "verify", &at("run.alebundle")]);
    assert!(!unpinned.status.success(), "{}", text(&unpinned));
    let said = text(&unpinned);
    assert!(
        said.contains("shipped in the bundle") && said.contains("NOT PINNED"),
        "{said}"
    );
    // Pinned to the evaluator's keys (its state dir, or the keys themselves), it verifies.
    let verified = ale(&[
        "harness",
        "verify",
        &at("run.alebundle"),
        "--state-dir",
        state_str,
    ]);
    assert!(verified.status.success(), "{}", text(&verified));
    assert!(
        text(&verified).contains("95% interval"),
        "{}",
        text(&verified)
    );
    let key_of = |file: &str| state.join(file).to_str().unwrap().to_string();
    let (ek, hk) = (key_of("evaluator.pub"), key_of("harness.pub"));
    let by_keys = ale(&[
        "harness",
        "verify",
        &at("run.alebundle"),
        "--evaluator-key",
        &ek,
        "--harness-key",
        &hk,
    ]);
    assert!(by_keys.status.success(), "{}", text(&by_keys));
    // Only one key pinned: still not enough.
    let half = ale(&[
        "harness",
        "verify",
        &at("run.alebundle"),
        "--evaluator-key",
        &ek,
    ]);
    assert!(!half.status.success(), "{}", text(&half));
    // Pinned to other keys, it is refused.
    let wrong = "11".repeat(32);
    let pinned = ale(&[
        "harness",
        "verify",
        &at("run.alebundle"),
        "--evaluator-key",
        &wrong,
        "--harness-key",
        &wrong,
    ]);
    assert!(!pinned.status.success(), "{}", text(&pinned));

    // Encrypted for a recipient: only their identity opens it.
    let key = at("key.txt");
    let made_key = ale(&["harness", "keygen", "-o", &key]);
    assert!(made_key.status.success(), "{}", text(&made_key));
    let recipient = text(&made_key)
        .split_whitespace()
        .find(|w| w.starts_with("age1"))
        .unwrap()
        .to_string();
    let sealed = ale(&[
        "harness",
        "bundle",
        run_dir.to_str().unwrap(),
        "--to",
        &recipient,
        "-o",
        &at("run.age"),
    ]);
    assert!(sealed.status.success(), "{}", text(&sealed));
    assert!(!String::from_utf8_lossy(&std::fs::read(at("run.age")).unwrap()).contains(&run_id));
    let locked = ale(&["harness", "verify", &at("run.age")]);
    assert!(!locked.status.success());
    assert!(text(&locked).contains("--identity"), "{}", text(&locked));
    let opened = ale(&[
        "harness",
        "verify",
        &at("run.age"),
        "--identity",
        &key,
        "--state-dir",
        state_str,
    ]);
    assert!(opened.status.success(), "{}", text(&opened));
    let other = at("other.txt");
    assert!(ale(&["harness", "keygen", "-o", &other]).status.success());
    let refused = ale(&["harness", "verify", &at("run.age"), "--identity", &other]);
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("cannot decrypt"),
        "{}",
        text(&refused)
    );

    // A bundle whose report was changed after bundling does not verify.
    let mut value: serde_json::Value = serde_json::from_str(&bundle).unwrap();
    let report_text = value["files"]["report.json"]
        .as_str()
        .unwrap()
        .replace("\"value\": 500.0", "\"value\": 501.0");
    value["files"]["report.json"] = serde_json::Value::String(report_text);
    std::fs::write(
        at("forged.alebundle"),
        serde_json::to_string(&value).unwrap(),
    )
    .unwrap();
    let forged = ale(&[
        "harness",
        "verify",
        &at("forged.alebundle"),
        "--state-dir",
        state_str,
    ]);
    assert!(!forged.status.success(), "{}", text(&forged));
    // keygen never overwrites a key.
    assert!(!ale(&["harness", "keygen", "-o", &key]).status.success());
}

/// Exit 4: the session's step budget ran out before the rollouts were played.
#[test]
fn a_run_stopped_by_its_step_budget_exits_4() {
    let tmp = private_tempdir();
    let tasks = tempfile::tempdir().unwrap();
    let task = include_str!("../../server/tasks/cartpole-balance.toml")
        .replace(
            "id = \"cartpole-balance\"",
            "id = \"cartpole-short-budget\"",
        )
        .replace("max_total_steps = 10000", "max_total_steps = 700");
    assert!(task.contains("max_total_steps = 700"));
    std::fs::write(tasks.path().join("short.toml"), task).unwrap();
    let (code, out, err) = harness_run_args(
        tmp.path(),
        &[
            "--task",
            "cartpole-short-budget",
            "--tasks-dir",
            tasks.path().to_str().unwrap(),
            "--policy",
            "heuristic",
        ],
    );
    assert_eq!(code, Some(4), "{out}{err}");
    assert!(out.contains("budget exceeded"), "{out}");
    assert!(
        err.contains("the session's budget ran out before its rollouts were played (exit code 4)"),
        "{err}"
    );
}
