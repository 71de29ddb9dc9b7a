//! The launcher binds what the harness checked, or nothing. Whoever may write the folder an
//! exposed folder (or working directory, socket, program) sits in (a concurrent agent whose
//! working directory it is) can swap its path between the harness's check and the launcher's
//! bind: for another folder, or for a link to the state dir. These tests start the real
//! launcher (`ale-sandbox-test sandbox-exec`, which is `ale sandbox-exec`) with launch specs
//! made as the harness makes them, swap a pinned path after the spec was made (once, and by a
//! racer thread while launching again and again), and check the agent never sees what was
//! swapped in. The state dir is left readable by anyone, as it would be to an agent of the
//! harness's own user: only the masks and the binds stand in the way.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ale_sandbox::{LaunchSpec, Network, PinnedPath};

/// The launcher, as `ale sandbox-exec` runs it.
const LAUNCHER: &str = env!("CARGO_BIN_EXE_ale-sandbox-test");

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The folders of one test, under the cargo target dir (not in `/tmp`, which the sandbox
/// replaces, nor in a home); anyone may enter them.
struct Scene {
    dir: PathBuf,
    /// The state dir, with a key in it.
    state: PathBuf,
    key: String,
    /// The folder someone else may write, holding `py` (checked, exposed) and swap material.
    race: PathBuf,
    py: PathBuf,
    /// The agent socket, pinned.
    socket: PinnedPath,
    _listener: std::os::unix::net::UnixListener,
}

impl Drop for Scene {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn scene(name: &str) -> Scene {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("race-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dir = std::fs::canonicalize(&dir).unwrap();
    let state = dir.join("state");
    let race = dir.join("race");
    let py = race.join("py");
    for folder in [&dir, &state, &race, &py, &race.join("decoy")] {
        std::fs::create_dir_all(folder).unwrap();
        set_mode(folder, 0o755);
    }
    let key = format!("KEY-{name}-{}", std::process::id());
    std::fs::write(state.join(ale_records::layout::EVALUATOR_KEY_FILE), &key).unwrap();
    std::fs::write(py.join("marker"), "checked\n").unwrap();
    std::fs::write(race.join("decoy/marker"), "decoy\n").unwrap();
    // The attacker's link: relative, so that it leads to the state dir beside it both on the
    // host and under the launcher's new root.
    std::os::unix::fs::symlink("../state", race.join("link")).unwrap();
    let socket_path = dir.join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    Scene {
        socket: PinnedPath::of(&socket_path).unwrap(),
        _listener: listener,
        dir,
        state,
        key,
        race,
        py,
    }
}

/// A launch spec as the harness makes it, for an agent running `script` in `sh`.
fn spec(scene: &Scene, script: &str) -> LaunchSpec {
    let agent_user =
        ale_sandbox::running_as_root().then(|| ale_sandbox::resolve_user("nobody").unwrap());
    LaunchSpec {
        program: PathBuf::from("/bin/sh"),
        program_file: None,
        args: vec!["/bin/sh".into(), "-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        workdir: None,
        exposed: Vec::new(),
        agent_socket: scene.socket.clone(),
        submission_dir: None,
        hidden: vec![scene.state.clone()],
        parent_pid: std::process::id(),
        agent_user,
        network: Network::None,
        tmp_bytes: 16 << 20,
        limits: ale_sandbox::agent_limits(
            &ale_sandbox::SandboxOptions::default(),
            ale_sandbox::Enforcement::Rlimits,
            Some(60),
            None,
        ),
        report_pipe: false,
        probe: false,
    }
}

/// Runs the launcher on `spec`, as the harness does.
fn launch(spec: &LaunchSpec) -> Output {
    launch_as(spec, None)
}

/// Runs the launcher on `spec` as the harness running as `uid` (its own by default) does.
fn launch_as(spec: &LaunchSpec, uid: Option<u32>) -> Output {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(LAUNCHER);
    if let Some(uid) = uid {
        command.uid(uid).gid(uid);
    }
    let mut child = command
        .arg(ale_sandbox::LAUNCHER_SUBCOMMAND)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = ale_sandbox::spec_bytes(spec).unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    child.wait_with_output().unwrap()
}

/// Swaps two paths at once: `renameat2(RENAME_EXCHANGE)`.
fn exchange(a: &Path, b: &Path) {
    try_exchange(a, b).unwrap();
}

fn try_exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    let (a, b) = (c(a), c(b));
    // SAFETY: two valid C strings.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// What the agent prints: the exposed folder's marker, and the key wherever it might be.
fn peek(scene: &Scene) -> String {
    let (py, state) = (scene.py.display(), scene.state.display());
    format!("cat {py}/marker {py}/evaluator.key {state}/evaluator.key 2>/dev/null; true")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts the launcher refused `spec` before the agent ran, saying why, and returns its
/// message.
fn refused(output: &Output, scene: &Scene, why: &str) -> String {
    let (out, err) = (text(&output.stdout), text(&output.stderr));
    assert!(
        !out.contains(&scene.key) && !out.contains("decoy"),
        "the agent saw what was swapped in:\n{out}"
    );
    assert_eq!(
        output.status.code(),
        Some(ale_sandbox::SETUP_FAILED),
        "not refused:\n{out}\n{err}"
    );
    assert!(err.contains(why), "{err}");
    err
}

#[test]
fn the_checked_folder_is_exposed() {
    let scene = scene("control");
    let mut spec = spec(&scene, &peek(&scene));
    spec.exposed = vec![PinnedPath::of(&scene.py).unwrap()];
    let output = launch(&spec);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "checked\n");
}

/// The swap as the attacker made it, done once between the harness's pin and the launch.
#[test]
fn a_folder_swapped_for_a_link_to_the_state_dir_after_the_check_is_not_bound() {
    let scene = scene("link");
    let mut spec = spec(&scene, &peek(&scene));
    spec.exposed = vec![PinnedPath::of(&scene.py).unwrap()];
    exchange(&scene.py, &scene.race.join("link"));
    let err = refused(&launch(&spec), &scene, "is a link");
    assert!(
        err.contains(&format!("the exposed folder {}", scene.py.display())),
        "{err}"
    );
}

#[test]
fn a_folder_swapped_for_another_folder_after_the_check_is_not_bound() {
    let scene = scene("folder");
    let mut spec = spec(&scene, &peek(&scene));
    spec.exposed = vec![PinnedPath::of(&scene.py).unwrap()];
    exchange(&scene.py, &scene.race.join("decoy"));
    refused(&launch(&spec), &scene, "replaced after the check");
}

/// One host path of a launch spec, and a link to swap it for.
struct Case<'a> {
    what: &'a str,
    path: &'a Path,
    link: &'a Path,
    set: fn(&mut LaunchSpec, PinnedPath),
}

/// Every host path the launcher binds is pinned: the working directory (writable), the
/// submission folder (writable), the agent socket and a program bound on its own.
#[test]
fn every_bound_host_path_swapped_for_a_link_is_refused() {
    let scene = scene("every");
    let key_link = scene.race.join("key-link");
    std::os::unix::fs::symlink("../state/evaluator.key", &key_link).unwrap();
    let socket = scene.race.join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let program = scene.race.join("agent");
    std::fs::copy("/bin/true", &program).unwrap();
    set_mode(&program, 0o755);
    let link = scene.race.join("link");
    let cases = [
        Case {
            what: "the working directory",
            path: &scene.py,
            link: &link,
            set: |s, p| s.workdir = Some(p),
        },
        Case {
            what: "the submission folder",
            path: &scene.py,
            link: &link,
            set: |s, p| s.submission_dir = Some(p),
        },
        Case {
            what: "the agent socket",
            path: &socket,
            link: &key_link,
            set: |s, p| s.agent_socket = p,
        },
        Case {
            what: "the agent program",
            path: &program,
            link: &key_link,
            set: |s, p| {
                // Started by a path in the sandbox's own /tmp: bound there on its own.
                s.program = PathBuf::from("/tmp/agent");
                s.args = vec!["/tmp/agent".into()];
                s.program_file = Some(p);
            },
        },
    ];
    for Case {
        what,
        path,
        link,
        set,
    } in cases
    {
        let mut spec = spec(&scene, &peek(&scene));
        set(&mut spec, PinnedPath::of(path).unwrap());
        let output = launch(&spec);
        assert!(
            output.status.success(),
            "{what}, not swapped: {}",
            text(&output.stderr)
        );
        exchange(path, link);
        let err = refused(&launch(&spec), &scene, "is a link");
        assert!(err.contains(what), "{err}");
        exchange(path, link);
    }
}

/// The worse case of the attack: a harness run by an unprivileged user, whose agent runs as
/// that same user (here `nobody`) and so could read the state dir but for the masks. Its
/// launcher builds the sandbox in a user namespace of its own, and refuses the swap all the
/// same.
#[test]
fn an_unprivileged_launcher_refuses_the_swap_too() {
    if !ale_sandbox::running_as_root() {
        eprintln!("skipped: unprivileged already, the other tests run this path");
        return;
    }
    let scene = scene("unprivileged");
    let mut spec = spec(&scene, &peek(&scene));
    spec.agent_user = None;
    spec.exposed = vec![PinnedPath::of(&scene.py).unwrap()];
    let nobody = ale_sandbox::resolve_user("nobody").unwrap().uid;
    let output = launch_as(&spec, Some(nobody));
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "checked\n");
    exchange(&scene.py, &scene.race.join("link"));
    refused(&launch_as(&spec, Some(nobody)), &scene, "is a link");
}

/// The attack as it was found: a racer swaps the exposed folder with a relative link to the
/// state dir every millisecond while the launcher starts again and again. Each launch either
/// shows the folder that was checked (or, swapped after the bind, nothing) or refuses; none
/// shows the state dir.
#[test]
fn a_racer_swapping_the_exposed_folder_never_shows_the_state_dir() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let scene = scene("racer");
    let mut spec = spec(&scene, &peek(&scene));
    spec.exposed = vec![PinnedPath::of(&scene.py).unwrap()];
    let stop = Arc::new(AtomicBool::new(false));
    let racer = {
        let (stop, py, link) = (Arc::clone(&stop), scene.py.clone(), scene.race.join("link"));
        std::thread::spawn(move || {
            // Until told to stop (or the scene is gone: the test failed).
            while !stop.load(Ordering::Relaxed) && try_exchange(&py, &link).is_ok() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    };
    let (mut shown, mut refusals) = (0, 0);
    for _ in 0..40 {
        let output = launch(&spec);
        let (out, err) = (text(&output.stdout), text(&output.stderr));
        assert!(!out.contains(&scene.key), "the agent read the key:\n{out}");
        if output.status.success() {
            // Swapped again once the sandbox was built, the folder's mount leaves with its
            // name (the kernel detaches a mount whose mount point is renamed elsewhere), and
            // the agent sees what the host shows there: the link, into the state dir's mask.
            assert!(out == "checked\n" || out.is_empty(), "{out}\n{err}");
            shown += usize::from(!out.is_empty());
        } else {
            assert_eq!(
                output.status.code(),
                Some(ale_sandbox::SETUP_FAILED),
                "{err}"
            );
            assert!(
                err.contains("is a link") || err.contains("replaced after the check"),
                "{err}"
            );
            refusals += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    racer.join().unwrap();
    eprintln!("of 40 launches, {shown} showed the checked folder, {refusals} were refused");
}
