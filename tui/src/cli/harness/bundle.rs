//! `ale harness bundle` and `ale harness keygen`: a run's records in one file, and the age
//! identity that receives encrypted ones.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ale_harness::bundle::Bundle;
use anyhow::Context;

use super::{BundleArgs, KeygenArgs};

pub(super) fn write_bundle(args: &BundleArgs) -> anyhow::Result<ExitCode> {
    let state_dir = args.state_dir.resolve();
    let dir = crate::cli::run_arg::resolve(&args.run, &state_dir)?;
    // `.` or `runs/run-x/..`: the folder's own name is the run's id.
    let dir =
        std::fs::canonicalize(&dir).with_context(|| format!("cannot read {}", dir.display()))?;
    anyhow::ensure!(
        dir.is_dir(),
        "{} is not a run folder (bundle a run id or a run's folder)",
        dir.display()
    );
    // The keys of the state dir the run is in, as `verify` would take them.
    let keys_dir = dir
        .parent()
        .and_then(Path::parent)
        .map_or(state_dir.clone(), Path::to_path_buf);
    let bundle = Bundle::of_run(&keys_dir, &dir)?;
    let plain = bundle.to_bytes();
    let (bytes, suffix) = if args.to.is_empty() {
        (plain, "alebundle")
    } else {
        (
            ale_harness::bundle::encrypt(&plain, &args.to)?,
            "alebundle.age",
        )
    };
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.{suffix}", bundle.run_id)));
    ale_records::private_files::create_private_file(&output, 0o600)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", output.display()))?
        .write_all(&bytes)
        .with_context(|| format!("cannot write {}", output.display()))?;
    let files: Vec<&str> = bundle.files.keys().map(String::as_str).collect();
    println!(
        "wrote {} ({} bytes{}): {} and the public keys; no hidden seed, no agent log",
        output.display(),
        bytes.len(),
        if args.to.is_empty() {
            String::new()
        } else {
            format!(
                ", encrypted for {} recipient{}",
                args.to.len(),
                if args.to.len() == 1 { "" } else { "s" }
            )
        },
        files.join(", ")
    );
    println!(
        "check it: ale harness verify {}{}",
        output.display(),
        if args.to.is_empty() {
            ""
        } else {
            " --identity KEY_FILE"
        }
    );
    Ok(ExitCode::SUCCESS)
}

pub(super) fn keygen(args: &KeygenArgs) -> anyhow::Result<ExitCode> {
    let (identity, recipient) = ale_harness::bundle::new_identity();
    ale_records::private_files::create_private_file(&args.output, 0o600)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", args.output.display()))?
        .write_all(identity.as_bytes())
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    println!(
        "wrote the secret key to {} (keep it)",
        args.output.display()
    );
    println!("public key (give it to whoever sends you bundles): {recipient}");
    Ok(ExitCode::SUCCESS)
}
