//! `ale bench sandbox`: agent start-up with and without the sandbox.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;

/// Median and 90th percentile of `samples`, in milliseconds.
fn median_p90_ms(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(i).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
    };
    (at(0.5), at(0.9))
}

pub(super) fn bench_sandbox(runs: usize) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the ale executable")?;
    let tmp = tempfile_dir()?;
    let state = tmp.join("state");
    std::fs::create_dir(&state)?;
    let socket = state.join("agent.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket)?;
    // The spec the harness would build for an agent `true` on this state dir.
    let command = vec!["true".to_string()];
    let handle = ale_proto::EnvHandle::from_wire("env-bench");
    let hidden = vec![std::fs::canonicalize(&state)?];
    let options = ale_sandbox::SandboxOptions::default();
    // What a run adds before its agent starts: a uid of its own (as root) and the choice of
    // how its limits are enforced; both are held or made once per run, as here.
    let start = Instant::now();
    let agent_user = ale_sandbox::agent_user_for_run(&options)?;
    let (enforcement, _) = ale_sandbox::choose_enforcement(&options)?;
    let per_run = start.elapsed();
    let spec = ale_harness::agent::launch_spec(&ale_harness::agent::AgentLaunch {
        command: &command,
        handle: &handle,
        sandbox: &options,
        agent_socket: &socket,
        submission_dir: None,
        hidden: &hidden,
        agent_user: agent_user.as_ref().map(|u| u.ids),
        limits: ale_sandbox::agent_limits(&options, enforcement, Some(600), None),
    })?;
    let rt = crate::cli::runtime(1)?;
    let (plain, sandboxed, probe) = rt.block_on(async {
        let mut plain = Vec::with_capacity(runs);
        let mut sandboxed = Vec::with_capacity(runs);
        let mut probe = Vec::with_capacity(runs);
        for _ in 0..runs {
            let start = Instant::now();
            let status = tokio::process::Command::new("true")
                .process_group(0)
                .status()
                .await?;
            anyhow::ensure!(status.success(), "true failed");
            plain.push(start.elapsed());

            let start = Instant::now();
            let mut child = ale_sandbox::launcher_command(&exe).spawn()?;
            ale_sandbox::send_spec(&mut child, &spec).await?;
            let status = child.wait().await?;
            anyhow::ensure!(status.success(), "the sandboxed agent failed: {status}");
            sandboxed.push(start.elapsed());

            let start = Instant::now();
            ale_sandbox::probe(&exe, &spec).await?;
            probe.push(start.elapsed());
        }
        Ok::<_, anyhow::Error>((plain, sandboxed, probe))
    })?;
    let _ = std::fs::remove_dir_all(&tmp);
    println!("agent start to exit, {runs} runs each (median / p90):");
    let rows = [
        ("plain process", median_p90_ms(plain)),
        ("sandboxed", median_p90_ms(sandboxed)),
        ("sandbox probe", median_p90_ms(probe)),
    ];
    for (name, (median, p90)) in rows {
        println!("  {name:<14} {median:>7.2} ms  {p90:>7.2} ms");
    }
    let per_run_ms = per_run.as_secs_f64() * 1e3;
    println!(
        "  per run once   {per_run_ms:>7.2} ms  (its uid taken and locked, limits' enforcement chosen: {enforcement:?})"
    );
    let added = (rows[1].1.0 - rows[0].1.0) + rows[2].1.0 + per_run_ms;
    println!(
        "  a run's start-up gains {added:.2} ms (sandboxed − plain + probe + per run, medians)"
    );
    drop(agent_user);
    Ok(ExitCode::SUCCESS)
}

/// A fresh private folder under the system temp dir.
fn tempfile_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(format!("ale-bench-sandbox-{}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}
