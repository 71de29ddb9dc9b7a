//! `ale harness verify`: a run folder, trajectory or bundle checked against the public keys.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ale_harness::bundle::Bundle;
use ale_harness::scoring::{Faithfulness, score};
use ale_harness::verify::{
    RecordKeys, RunVerdict, RunVerification, verify_run_dir, verify_trajectory_file,
};
use ale_records::signing_keys::{KeyRole, encode_public_key};
use anyhow::Context;

use super::{VerifyArgs, print_table};

/// A public key given on the command line: a file holding it, or the hex itself.
fn public_key_arg(arg: &str) -> anyhow::Result<ed25519_dalek::VerifyingKey> {
    let path = Path::new(arg);
    if path.exists() {
        return Ok(ale_records::signing_keys::read_public_key(path)?);
    }
    Ok(ale_records::signing_keys::parse_public_key(arg)?)
}

/// Where `verify` takes each public key from: its flag, else the state dir's `.pub` file (the
/// one given, or the one a run folder sits in: `<state>/runs/<run_id>`). Each key is read only
/// when needed.
struct KeySource<'a> {
    args: &'a VerifyArgs,
    state_dir: Option<PathBuf>,
    /// The keys came in the bundle the run was unpacked from.
    bundled: bool,
}

impl<'a> KeySource<'a> {
    /// The keys for the run at `path` (the resolved run argument).
    fn new(args: &'a VerifyArgs, path: &Path) -> Self {
        let state_dir = args.state_dir.clone().or_else(|| {
            let run_dir = if path.is_dir() { path } else { path.parent()? };
            run_dir.parent()?.parent().map(Path::to_path_buf)
        });
        KeySource {
            args,
            state_dir,
            bundled: false,
        }
    }

    /// The keys for a run unpacked from a bundle into the state dir `unpacked`: the flags' or
    /// `--state-dir`'s when given, else those the bundle carries.
    fn bundled(args: &'a VerifyArgs, unpacked: &Path) -> Self {
        KeySource {
            args,
            state_dir: Some(args.state_dir.clone().unwrap_or(unpacked.to_path_buf())),
            bundled: args.state_dir.is_none(),
        }
    }

    /// Whether the key of `role` comes from the bundle being checked, not from the verifier.
    fn unpinned(&self, role: KeyRole) -> bool {
        self.bundled && self.flag(role).1.is_none()
    }

    fn flag(&self, role: KeyRole) -> (&'static str, Option<&String>) {
        match role {
            KeyRole::Evaluator => ("--evaluator-key", self.args.evaluator_key.as_ref()),
            KeyRole::Harness => ("--harness-key", self.args.harness_key.as_ref()),
        }
    }

    /// Where the key of `role` comes from, for the output.
    fn origin(&self, role: KeyRole) -> String {
        match (self.flag(role), &self.args.state_dir) {
            ((flag, Some(_)), _) => flag.to_string(),
            _ if self.bundled => format!(
                "{} shipped in the bundle: only as trustworthy as its sender (pin the keys with \
                 --evaluator-key and --harness-key)",
                role.public_key_file()
            ),
            (_, Some(dir)) => dir.join(role.public_key_file()).display().to_string(),
            _ => format!(
                "{} of the state dir the run is in: only as trustworthy as that folder",
                role.public_key_file()
            ),
        }
    }

    fn key(&self, role: KeyRole) -> anyhow::Result<ed25519_dalek::VerifyingKey> {
        if let (flag, Some(arg)) = self.flag(role) {
            return public_key_arg(arg).with_context(|| flag.to_string());
        }
        let dir = self.state_dir.as_deref().context(
            "no public keys to check the signatures with: pass --evaluator-key and --harness-key, or --state-dir",
        )?;
        let file = dir.join(role.public_key_file());
        ale_records::signing_keys::read_public_key(&file).with_context(|| {
            format!(
                "cannot check signatures: no usable {} (pass --evaluator-key / --harness-key, or --state-dir)",
                file.display()
            )
        })
    }
}

pub(super) fn verify_path(args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let lookup = args
        .state_dir
        .clone()
        .unwrap_or_else(ale_server::state_dir::default_state_dir);
    let mut path = crate::cli::run_arg::resolve(&args.path, &lookup)?;
    let mut unpacked = None;
    if path.is_file() {
        let bytes = ale_harness::bundle::read_capped(&path)?;
        if Bundle::looks_like(&bytes) {
            let identity = match &args.identity {
                Some(file) => Some(
                    std::fs::read_to_string(file)
                        .with_context(|| format!("cannot read {}", file.display()))?,
                ),
                None => None,
            };
            let bundle = Bundle::from_bytes(&bytes, identity.as_deref())?;
            let dir = tempfile::Builder::new().prefix("ale-bundle-").tempdir()?;
            path = bundle.unpack(&dir.path().join("state"))?;
            unpacked = Some(dir);
        }
    }
    let path = &path;
    let source = match &unpacked {
        Some(dir) => KeySource::bundled(args, &dir.path().join("state")),
        None => KeySource::new(args, path),
    };
    let evaluator_key = source.key(KeyRole::Evaluator)?;
    let verdict = RunVerdict::from(if path.is_dir() {
        let keys = RecordKeys {
            evaluator: evaluator_key,
            harness: source.key(KeyRole::Harness)?,
        };
        verify_run_dir(path, &keys)
    } else {
        verify_trajectory_file(path, &evaluator_key)
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&verdict)?);
    }
    let verified = match verdict {
        RunVerdict::Verified(v) => *v,
        RunVerdict::Broken(e) => {
            if !args.json {
                println!("BROKEN  {e}");
            }
            return Ok(ExitCode::FAILURE);
        }
    };
    if unpacked.is_some() {
        // A bundle stands for a whole run: finished, signed by both sides, reported.
        let whole = verified.trajectory.signature.is_some()
            && verified.harness_log.as_ref().is_some_and(|l| l.is_signed())
            && verified.report.is_some();
        if !whole {
            println!(
                "BROKEN  the bundle holds no whole run: its session is unfinished, a record is \
                 unsigned, or its report is missing"
            );
            return Ok(ExitCode::FAILURE);
        }
    }
    if !args.json {
        println!("Verified {}", path.display());
        print_table(&verification_rows(&verified, &evaluator_key, &source));
    }
    let unpinned: Vec<&str> = [KeyRole::Evaluator, KeyRole::Harness]
        .into_iter()
        .filter(|&role| source.unpinned(role))
        .map(|role| source.flag(role).0)
        .collect();
    if !unpinned.is_empty() {
        eprintln!(
            "NOT PINNED: the records agree with the keys the bundle itself carries, which anyone \
             can make; nothing ties them to an evaluator you trust. Pass {} (the keys you know \
             the evaluator and its harness by), or --state-dir of that evaluator.",
            unpinned.join(" and ")
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// What `verify` prints of a verified run, a row each.
fn verification_rows(
    verified: &RunVerification,
    evaluator_key: &ed25519_dalek::VerifyingKey,
    source: &KeySource<'_>,
) -> Vec<(String, String)> {
    let trajectory = &verified.trajectory;
    let mut rows = vec![(
        "trajectory".to_string(),
        format!(
            "ok · {} events · head {}",
            trajectory.events, trajectory.head
        ),
    )];
    if let Some(found) = &verified.interrupted {
        rows.push((
            "interrupted".into(),
            format!(
                "the evaluator stopped before the session finished; its restart found {} events \
                 ending at this head. The session's hidden seeds died with it: it cannot be \
                 resumed, and it has no result or signature",
                found.events
            ),
        ));
    }
    rows.push((
        "evaluator signature".into(),
        if trajectory.signature.is_some() {
            format!(
                "ok · key {} · {}",
                encode_public_key(evaluator_key),
                source.origin(KeyRole::Evaluator)
            )
        } else {
            "none yet: the session has not finished".into()
        },
    ));
    match &trajectory.result {
        Some(r) => {
            rows.push((
                "result".into(),
                format!(
                    "{}, {} = {} over {} rollouts",
                    r.status,
                    r.metric_name,
                    r.value,
                    r.episodes.len()
                ),
            ));
            let b = score(
                &trajectory.rules(),
                Some(r.value),
                &r.safety,
                &Faithfulness::Missing,
            );
            let note = if b.faithfulness.required {
                " (faithfulness not re-checked: no verdict given)"
            } else {
                ""
            };
            rows.push((
                "score".into(),
                format!("{:.4} re-derived from the trajectory{note}", b.score),
            ));
        }
        None => rows.push((
            "result".into(),
            "none yet: the session has not finished".into(),
        )),
    }
    if let Some(log) = &verified.harness_log {
        rows.push((
            "harness log".into(),
            format!("ok · {} events · read the result at this head", log.events),
        ));
        rows.push((
            "harness signature".into(),
            if log.is_signed() {
                format!("ok · {}", source.origin(KeyRole::Harness))
            } else {
                "none yet: the run has not been scored".into()
            },
        ));
        rows.push((
            "agent".into(),
            match verified.sandbox() {
                Some(sandbox) => sandbox.describe(),
                None => "unverified: the harness log is not signed, so what it says of the agent \
                         proves nothing"
                    .into(),
            },
        ));
    }
    if let Some(report) = &verified.report {
        rows.push(("report".into(), "agrees with the signed records".into()));
        rows.extend(report.statistics_lines());
    }
    rows
}
