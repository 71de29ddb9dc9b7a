//! Agents that are more than one file, and `--expose`: a Python venv made from an installation
//! inside a home the sandbox hides runs once that installation is exposed, and keeps its venv;
//! without it, the harness refuses before anything is launched, naming the `--expose` that
//! fixes it; an exposed folder is read-only and lays bare nothing the agent must not see. Each
//! test runs real `ale harness run` processes (which start their own evaluator) and real
//! sandboxes; run as root, the agent is `nobody`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ALE: &str = env!("CARGO_BIN_EXE_ale");
const NOBODY: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A fresh folder under the cargo target dir: not in `/tmp`, which the sandbox replaces with
/// its own, nor (unless the checkout is) in a home. Anyone may enter it.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("expose-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    set_mode(&dir, 0o755);
    std::fs::canonicalize(&dir).unwrap()
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A folder the agent may write to: its own when the harness is root.
fn agent_folder(path: &Path) -> PathBuf {
    std::fs::create_dir_all(path).unwrap();
    if is_root() {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    set_mode(path, 0o755);
    path.to_path_buf()
}

/// A home of the harness's (its `$HOME`, which the sandbox hides), closed to others as homes
/// often are: only the sandbox's mask lets the agent through to what is exposed inside it.
fn home_in(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    std::fs::create_dir(&home).unwrap();
    set_mode(&home, 0o700);
    home
}

/// `ale harness run` on `state` with `flags` (each a flag and its folder), then the agent
/// command, started in the state dir's folder; `home` as the harness's `$HOME` when given.
fn harness_run(
    state: &Path,
    home: Option<&Path>,
    flags: &[(&str, &Path)],
    agent: &[&str],
) -> Output {
    let mut command = Command::new(ALE);
    command
        .current_dir(state.parent().unwrap())
        .args(["harness", "run", "--task", "cartpole-balance"])
        // The folders these tests make writable for the agent are nobody's (a root harness
        // would otherwise give each run a uid of its own).
        .args(["--agent-user", "nobody"])
        .args(["--progress", "json", "--state-dir"])
        .arg(state);
    for (flag, value) in flags {
        command.arg(flag).arg(value);
    }
    command.arg("--").args(agent);
    if let Some(home) = home {
        command.env("HOME", home);
    }
    command.output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

/// The report of a run that went through.
fn report(output: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Exit 3: these agents check what they see and exit without playing their rollouts.
    assert!(
        matches!(output.status.code(), Some(0 | 3)),
        "the harness failed:\n{stdout}\n{}",
        stderr(output)
    );
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "report", "{stdout}");
    last["report"].clone()
}

/// Asserts that the harness refused before it made an official env, and returns its message.
fn refusal(output: &Output, state: &Path) -> String {
    let text = stderr(output);
    assert!(!output.status.success(), "not refused:\n{text}");
    let runs = std::fs::read_dir(state.join("runs")).map_or(0, |d| d.count());
    assert_eq!(
        runs, 0,
        "an official env was made before the refusal:\n{text}"
    );
    text
}

/// `python3` from `PATH`, as an operator would type it.
fn python3() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("python3"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "python3 is not on PATH ({}): these tests need a Python 3 with its venv module",
                path.to_string_lossy()
            )
        })
}

/// A venv at `dir` made by `python3` from `PATH`; returns its `bin/python` and the base
/// installation (`sys.base_prefix`, canonical).
fn make_venv(dir: &Path) -> (PathBuf, PathBuf) {
    let made = Command::new(python3())
        .args(["-m", "venv", "--without-pip"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "python3 -m venv failed: {}",
        stderr(&made)
    );
    let python = dir.join("bin/python");
    let base = Command::new(&python)
        .args(["-c", "import sys; print(sys.base_prefix)"])
        .output()
        .unwrap();
    assert!(base.status.success(), "{}", stderr(&base));
    let base = String::from_utf8_lossy(&base.stdout).trim().to_string();
    (python, std::fs::canonicalize(base).unwrap())
}

/// Whether the sandbox hides `path` from the agent: it is in a home.
fn is_hidden(path: &Path, home: Option<&Path>) -> bool {
    let env_home = std::env::var_os("HOME").map(PathBuf::from);
    [Some(Path::new("/root")), Some(Path::new("/home")), home]
        .into_iter()
        .flatten()
        .chain(env_home.as_deref())
        .filter_map(|h| std::fs::canonicalize(h).ok())
        .any(|h| path.starts_with(h))
}

/// A Python one-liner that writes `sys.prefix` and `sys.base_prefix` into `file`.
fn prefixes_script(file: &Path) -> String {
    format!(
        "import sys; open({:?}, 'w').write(sys.prefix + '\\n' + sys.base_prefix + '\\n')",
        file.to_str().unwrap()
    )
}

fn read_prefixes(file: &Path) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("the agent wrote no {}: {e}", file.display()));
    let mut lines = text.lines().map(PathBuf::from);
    (lines.next().unwrap(), lines.next().unwrap())
}

#[test]
fn a_venv_agent_runs_with_its_base_installation_exposed_and_keeps_its_venv() {
    let dir = scratch("venv-runs");
    let work = agent_folder(&dir.join("work"));
    let venv = work.join("venv");
    let (python, base) = make_venv(&venv);
    let state = dir.join("state");
    let out = work.join("prefixes.txt");
    let script = prefixes_script(&out);
    // As an operator types it: relative to where the harness starts, which is not where the
    // agent starts (its working directory).
    assert_eq!(python, dir.join("work/venv/bin/python"));
    let output = harness_run(
        &state,
        None,
        &[("--workdir", &work), ("--expose", &base)],
        &["work/venv/bin/python", "-c", &script],
    );
    let report = report(&output);
    assert_eq!(report["sandbox"]["mode"], "namespaces");
    assert_eq!(report["agent"]["exit"], "exited with status 0", "{report}");
    if is_root() {
        assert_eq!(report["sandbox"]["agent_uid"], NOBODY);
    }
    let (prefix, base_prefix) = read_prefixes(&out);
    assert_eq!(prefix, venv, "the agent's Python lost its venv");
    assert_eq!(base_prefix, base);
    assert_ne!(prefix, base_prefix);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_expose_a_venv_the_sandbox_cannot_show_is_refused_naming_the_fix() {
    let dir = scratch("venv-refused");
    let work = agent_folder(&dir.join("work"));
    let (python, base) = make_venv(&work.join("venv"));
    let resolved = std::fs::canonicalize(&python).unwrap();
    let state = dir.join("state");
    let script = prefixes_script(&work.join("prefixes.txt"));
    let agent = [python.to_str().unwrap(), "-c", &script];
    let workdir = [("--workdir", work.as_path())];

    // The venv's base installation in a home (pyenv's under /root, here).
    if is_hidden(&base, None) {
        let text = refusal(&harness_run(&state, None, &workdir, &agent), &state);
        for part in [
            python.display().to_string(),
            resolved.display().to_string(),
            "which the sandbox hides".to_string(),
            format!("--expose {}`", base.display()),
        ] {
            assert!(text.contains(&part), "{part:?} missing from:\n{text}");
        }
    } else {
        eprintln!(
            "{} is not in a home here: only the venv inside a home is checked",
            base.display()
        );
    }

    // The venv itself in a home: it must be exposed too, and once it is (with the base), the
    // agent reaches it through folders made inside the home's mask.
    let home = home_in(&dir);
    let (python, _) = make_venv(&home.join("venvs/agent"));
    let venv = home.join("venvs/agent");
    let agent = [python.to_str().unwrap(), "-c", &script];
    let text = refusal(&harness_run(&state, Some(&home), &workdir, &agent), &state);
    assert!(
        text.contains(&python.display().to_string())
            && text.contains(&format!(
                "the venv {} is inside {}",
                venv.display(),
                home.display()
            ))
            && text.contains(&format!("--expose {}", venv.display())),
        "{text}"
    );
    let exposed = [
        ("--workdir", &*work),
        ("--expose", &venv),
        ("--expose", &base),
    ];
    let report = report(&harness_run(&state, Some(&home), &exposed, &agent));
    assert_eq!(report["agent"]["exit"], "exited with status 0", "{report}");
    let (prefix, base_prefix) = read_prefixes(&work.join("prefixes.txt"));
    assert_eq!((prefix, base_prefix), (venv, base));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn expose_refuses_the_state_dir_by_any_path_and_homes() {
    let dir = scratch("refusals");
    let state = dir.join("holder/state");
    std::fs::create_dir_all(state.parent().unwrap()).unwrap();
    let link = dir.join("link-to-state");
    std::os::unix::fs::symlink(&state, &link).unwrap();
    let refused = |expose: &Path, why: &str| {
        let output = harness_run(&state, None, &[("--expose", expose)], &["true"]);
        let text = refusal(&output, &state);
        assert!(
            text.contains(&format!("--expose {}", expose.display())) && text.contains(why),
            "--expose {}: {text}",
            expose.display()
        );
    };
    // The first run's evaluator makes the state dir.
    refused(&state, "overlaps");
    refused(state.parent().unwrap(), "overlaps");
    refused(&link, "overlaps");
    if Path::new("/root").is_dir() {
        refused(Path::new("/root"), "which the sandbox hides");
    }
    refused(Path::new("/"), "holds");
    refused(Path::new("/tmp"), "replaces");
    assert!(!state.join("runs").exists() || state.join("runs").read_dir().unwrap().count() == 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Found by thinking as the attacker: the state dir mounted a second time, inside an exposed
/// folder or holding it, is the state dir all the same; and a `proc` mounted inside an exposed
/// folder (a chroot's) would show the host's processes.
#[test]
fn expose_refuses_second_mounts_of_the_state_dir_and_the_hosts_proc() {
    use std::os::unix::process::CommandExt;
    if !is_root() {
        eprintln!("skipped: making the second mount needs root");
        return;
    }
    let dir = scratch("second-mount");
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    let state = dir.join("holder/state");
    std::fs::create_dir_all(&state).unwrap();
    set_mode(&state, 0o700);
    let exposed = dir.join("exposed");
    let alias = exposed.join("alias");
    std::fs::create_dir_all(&alias).unwrap();
    let holder_alias = dir.join("holder-alias");
    std::fs::create_dir(&holder_alias).unwrap();
    let chroot = dir.join("chroot");
    std::fs::create_dir_all(chroot.join("proc")).unwrap();
    let chroot_proc = c(&chroot.join("proc"));
    let (state_c, alias_c) = (c(&state), c(&alias));
    let (holder_c, holder_alias_c) = (c(state.parent().unwrap()), c(&holder_alias));
    // The harness, in a mount namespace where the state dir is also at `exposed/alias`, its
    // parent also at `holder-alias`, and a proc at `chroot/proc`.
    let run = |expose: &Path| {
        let (state_c, alias_c) = (state_c.clone(), alias_c.clone());
        let (holder_c, holder_alias_c) = (holder_c.clone(), holder_alias_c.clone());
        let chroot_proc = chroot_proc.clone();
        let mut command = Command::new(ALE);
        command
            .args([
                "harness",
                "run",
                "--task",
                "cartpole-balance",
                "--state-dir",
            ])
            .arg(&state)
            .arg("--expose")
            .arg(expose)
            .args(["--", "true"]);
        // SAFETY: only raw syscalls on data prepared before the fork.
        unsafe {
            command.pre_exec(move || {
                let null = std::ptr::null();
                let private = libc::MS_REC | libc::MS_PRIVATE;
                let bind = |from: &std::ffi::CStr, to: &std::ffi::CStr| {
                    libc::mount(from.as_ptr(), to.as_ptr(), null, libc::MS_BIND, null.cast()) == 0
                };
                let ok = libc::unshare(libc::CLONE_NEWNS) == 0
                    && libc::mount(null, c"/".as_ptr(), null, private, null.cast()) == 0
                    && bind(&state_c, &alias_c)
                    && bind(&holder_c, &holder_alias_c)
                    && libc::mount(
                        c"proc".as_ptr(),
                        chroot_proc.as_ptr(),
                        c"proc".as_ptr(),
                        0,
                        null.cast(),
                    ) == 0;
                if ok {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        command.output().unwrap()
    };
    let text = refusal(&run(&exposed), &state);
    assert!(
        text.contains(&format!("--expose {}", exposed.display()))
            && text.contains(&format!(
                "where {} is mounted a second time",
                state.display()
            )),
        "{text}"
    );
    let inside = holder_alias.join("state");
    let text = refusal(&run(&inside), &state);
    assert!(
        text.contains(&format!("--expose {}", inside.display())) && text.contains("overlaps"),
        "{text}"
    );
    let text = refusal(&run(&chroot), &state);
    assert!(
        text.contains(&format!("--expose {}", chroot.display())) && text.contains("a proc mount"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_exposed_folder_inside_a_hidden_home_is_read_only_and_its_links_lead_nowhere_hidden() {
    let dir = scratch("read-only");
    let home = home_in(&dir);
    let state = dir.join("state");
    // Writable by the agent's user but for the mount: only read-only-ness can stop it.
    let exposed = agent_folder(&home.join("tools/python"));
    set_mode(&exposed, 0o777);
    let data = exposed.join("data.txt");
    std::fs::write(&data, "exposed data\n").unwrap();
    set_mode(&data, 0o666);
    std::os::unix::fs::symlink(&state, exposed.join("state")).unwrap();
    let work = agent_folder(&dir.join("work"));
    let (e, w) = (exposed.display(), work.display());
    let script = format!(
        "try() {{ if eval \"$2\" >/dev/null 2>&1; then echo \"$1: SUCCEEDED\"; else echo \"$1: FAILED\"; fi; }}
         cat {e}/data.txt > {w}/read.txt
         {{
           try create 'touch {e}/new'
           try write 'echo changed > {e}/data.txt'
           try mkdir 'mkdir {e}/dir'
           try remove 'rm -f {e}/data.txt'
           try chmod 'chmod 600 {e}/data.txt'
           try key 'cat {e}/state/evaluator.key'
           try runs 'ls {e}/state/runs'
         }} > {w}/attempts.txt"
    );
    let report = report(&harness_run(
        &state,
        Some(&home),
        &[("--workdir", &work), ("--expose", &exposed)],
        &["sh", "-c", &script],
    ));
    assert_eq!(report["agent"]["exit"], "exited with status 0", "{report}");
    assert_eq!(
        std::fs::read_to_string(work.join("read.txt")).unwrap(),
        "exposed data\n",
        "the exposed folder was not visible inside the hidden home"
    );
    let attempts = std::fs::read_to_string(work.join("attempts.txt")).unwrap();
    assert_eq!(attempts.lines().count(), 7, "{attempts}");
    for line in attempts.lines() {
        assert!(line.ends_with(": FAILED"), "{line}\n{attempts}");
    }
    assert!(!exposed.join("new").exists() && !exposed.join("dir").exists());
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "exposed data\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program that is one file needs no `--expose`: started by a path inside a hidden home (its
/// own, or a link there), it is bound in on its own at that path. A link in a folder the
/// sandbox shows, to a file in a home, is refused naming the `--expose` that shows it: whoever
/// placed the link (an earlier agent, in its working directory) would otherwise pick which
/// hidden file the agent sees. The link's folder is shown as the working directory: a folder
/// of the scratch dir would not be where the checkout (so the scratch dir) lies under `/tmp`,
/// which the sandbox replaces with its own.
#[test]
fn a_plain_program_inside_a_hidden_home_still_runs_on_its_own() {
    let dir = scratch("plain-program");
    let home = home_in(&dir);
    let bin = home.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let program = bin.join("say");
    std::fs::copy("/bin/echo", &program).unwrap();
    set_mode(&program, 0o755);
    let home_link = home.join("say-link");
    std::os::unix::fs::symlink(&program, &home_link).unwrap();
    let visible = dir.join("visible");
    std::fs::create_dir(&visible).unwrap();
    set_mode(&visible, 0o755);
    let visible_link = visible.join("say-link");
    std::os::unix::fs::symlink(&program, &visible_link).unwrap();
    let state = dir.join("state");
    let says = |started_by: &Path, flags: &[(&str, &Path)], word: &str| {
        let output = harness_run(
            &state,
            Some(&home),
            flags,
            &[started_by.to_str().unwrap(), word],
        );
        let report = report(&output);
        assert_eq!(report["agent"]["exit"], "exited with status 0", "{report}");
        let run_dir = state.join("runs").join(report["run_id"].as_str().unwrap());
        let log = std::fs::read_to_string(run_dir.join("agent.log")).unwrap();
        assert_eq!(log, format!("{word}\n"));
    };
    says(&program, &[], "by-its-path");
    says(&home_link, &[], "by-a-link-in-the-home");

    let refused = harness_run(
        &state,
        Some(&home),
        &[("--workdir", &visible)],
        &[visible_link.to_str().unwrap()],
    );
    let text = stderr(&refused);
    assert!(!refused.status.success(), "{text}");
    assert!(
        text.contains(&format!("which is {}", program.display()))
            && text.contains(&format!("--expose {}`", bin.display())),
        "{text}"
    );
    says(
        &visible_link,
        &[("--workdir", &visible), ("--expose", &bin)],
        "by-a-visible-link",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A folder's name need not be UTF-8: such a folder inside a hidden home is exposed like any
/// other (the launch spec carries the name as bytes).
#[test]
fn a_folder_whose_name_is_not_utf8_is_exposed() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("not-utf8");
    let home = home_in(&dir);
    let exposed = home.join(std::ffi::OsStr::from_bytes(b"py\xff"));
    std::fs::create_dir(&exposed).unwrap();
    set_mode(&exposed, 0o755);
    std::fs::write(exposed.join("marker"), "exposed\n").unwrap();
    set_mode(&exposed.join("marker"), 0o644);
    let work = agent_folder(&dir.join("work"));
    let state = dir.join("state");
    let script = format!(
        "cat {}/py*/marker > {}/read.txt",
        home.display(),
        work.display()
    );
    let report = report(&harness_run(
        &state,
        Some(&home),
        &[("--workdir", &work), ("--expose", &exposed)],
        &["sh", "-c", &script],
    ));
    assert_eq!(report["agent"]["exit"], "exited with status 0", "{report}");
    assert_eq!(
        std::fs::read_to_string(work.join("read.txt")).unwrap(),
        "exposed\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Found by an attacker helper: a subfolder one may enter but not list (mode 0311) was passed
/// over by the check, so a harness running as an ordinary user exposed a hard link to its own
/// `evaluator.key` kept there, which the agent (of the same user) opened by name. The harness
/// now refuses a tree it cannot list whole. Run as `nobody`, the harness meets the folder as
/// such a harness would.
#[test]
fn an_unprivileged_harness_refuses_an_exposed_folder_it_cannot_list_whole() {
    use std::os::unix::process::CommandExt;
    if !is_root() {
        eprintln!("skipped: needs root to run the harness as another user");
        return;
    }
    let dir = scratch("unlistable");
    let state = agent_folder(&dir.join("state"));
    set_mode(&state, 0o700);
    let key = state.join("evaluator.key");
    std::fs::write(&key, [7u8; 32]).unwrap();
    set_mode(&key, 0o600);
    std::os::unix::fs::chown(&key, Some(NOBODY), Some(NOBODY)).unwrap();
    let exposed = agent_folder(&dir.join("lib"));
    let vault = agent_folder(&exposed.join("vault"));
    std::fs::hard_link(&key, vault.join("libfoo.so")).unwrap();
    set_mode(&vault, 0o311);
    let home = agent_folder(&dir.join("home"));

    // The harness as `nobody`, exposing the tree.
    let harness_as_nobody = || {
        Command::new(ALE)
            .uid(NOBODY)
            .gid(NOBODY)
            .current_dir(&dir)
            .env("HOME", &home)
            .args([
                "harness",
                "run",
                "--task",
                "cartpole-balance",
                "--state-dir",
            ])
            .arg(&state)
            .arg("--expose")
            .arg(&exposed)
            .args(["--", "/bin/true"])
            .output()
            .unwrap()
    };
    let output = harness_as_nobody();
    let text = refusal(&output, &state);
    assert!(
        text.contains(&format!(
            "holds {}, which the harness cannot list",
            vault.display()
        )),
        "{text}"
    );

    // Listable, the same tree is refused for the link it holds.
    set_mode(&vault, 0o711);
    let output = harness_as_nobody();
    let text = refusal(&output, &state);
    assert!(
        text.contains("a hard link to an evaluator's secret"),
        "{text}"
    );

    // A folder the harness may not even enter is passed over: the agent, of the same user,
    // cannot enter it either.
    std::fs::remove_file(vault.join("libfoo.so")).unwrap();
    let sealed = agent_folder(&exposed.join("sealed"));
    set_mode(&sealed, 0o000);
    let output = harness_as_nobody();
    assert!(
        matches!(output.status.code(), Some(0 | 3)),
        "{}",
        stderr(&output)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
