//! What an isolated host can reach, checked with a shell in its place: the hidden folder is
//! empty and cannot be uncovered, no network but loopback down, no capability, and its
//! address space bounded. As root, the checks run twice: as root, and again as an
//! unprivileged user (the test binary re-runs itself under uid 65534), the two paths the
//! launcher takes.

use std::os::unix::process::CommandExt;
use std::process::Stdio;

use ale_sims_remote::{HostCommand, IsolatedLauncher, Launcher};

const AS_CHILD: &str = "ALE_ISOLATION_TEST_DIR";

/// Runs `script` as an isolated host hiding `hidden`; returns its stdout.
fn run_isolated(hidden: &std::path::Path, script: &str) -> String {
    let launcher = IsolatedLauncher::hiding(vec![hidden.to_path_buf()]);
    let mut command = launcher
        .prepare(&HostCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![],
            memory_bytes: 512 << 20,
            expose: vec![],
        })
        .unwrap();
    let out = command.stderr(Stdio::inherit()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn check_isolation(dir: &std::path::Path) {
    let secret = dir.join("evaluator.key");
    std::fs::write(&secret, "secret").unwrap();
    let outside_tmp = std::env::temp_dir().join(format!("ale-isolation-{}", std::process::id()));
    std::fs::write(&outside_tmp, "outside").unwrap();
    // A descriptor of the hidden folder the evaluator inherited from its own parent.
    let dir_c = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    // SAFETY: open(2) on a NUL-terminated path; the descriptor is closed below.
    let inherited = unsafe { libc::open(dir_c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
    assert!(inherited > 2);
    let script = format!(
        "cat /proc/self/fd/{inherited}/evaluator.key 2>/dev/null && echo VIA_FD; \
         cat /etc/shadow >/dev/null 2>&1 && echo SHADOW; ls /root >/dev/null 2>&1 && ls -A /root | grep -q . && echo ROOT_HOME; \
         [ \"$(id -u)\" = 0 ] && echo UID0; \
         cat {secret} 2>/dev/null && echo READ; ls -A {dir} 2>/dev/null | grep -q . && echo LISTED; \
         umount {dir} 2>/dev/null && echo UNMOUNTED; \
         for p in /proc/[0-9]*; do cat $p/root{secret} 2>/dev/null && echo VIA_PROC; done; \
         touch /usr/ale-isolation 2>/dev/null && echo WROTE_USR; \
         touch {parent}/ale-isolation 2>/dev/null && echo WROTE_PARENT; \
         echo '|/bin/false' > /proc/sys/kernel/core_pattern 2>/dev/null && echo SYSCTL; \
         cat {outside} 2>/dev/null && echo SAW_TMP; touch /tmp/mine || echo NO_TMP; \
         (sleep 31337 &) ; \
         grep -c : /proc/net/dev; grep CapEff /proc/self/status; ulimit -v; ls /dev | tr '\\n' ' '; echo; \
         ls -d /proc/[0-9]* | wc -l; \
         echo x > /dev/null && head -c 4 /dev/urandom > /tmp/r && echo DEVICES_OK; \
         cat {visible} > /dev/null && echo VISIBLE_OK; echo done",
        secret = secret.display(),
        dir = dir.display(),
        parent = env!("CARGO_MANIFEST_DIR"),
        outside = outside_tmp.display(),
        visible = env!("CARGO_MANIFEST_DIR").to_string() + "/Cargo.toml",
    );
    let out = run_isolated(dir, &script);
    // SAFETY: closing the descriptor opened above.
    unsafe {
        libc::close(inherited);
    }
    let _ = std::fs::remove_file(&outside_tmp);
    for word in [
        "VIA_FD",
        "SHADOW",
        "ROOT_HOME",
        "UID0",
        "READ",
        "LISTED",
        "UNMOUNTED",
        "VIA_PROC",
        "WROTE_USR",
        "WROTE_PARENT",
        "SYSCTL",
        "SAW_TMP",
        "NO_TMP",
    ] {
        assert!(!out.contains(word), "{word}: {out}");
    }
    // The controls: what the attempts above needed (/dev/null, reading a file) works.
    assert!(
        out.contains("DEVICES_OK") && out.contains("VISIBLE_OK"),
        "{out}"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "1", "only the loopback interface: {out}");
    assert_eq!(
        lines[1].split_whitespace().nth(1),
        Some("0000000000000000"),
        "{out}"
    );
    assert_eq!(lines[2], (512 * 1024).to_string(), "{out}");
    assert_eq!(lines[3].trim(), "full null random urandom zero", "{out}");
    let processes: usize = lines[4].trim().parse().unwrap();
    assert!(
        processes <= 6,
        "the host sees only its own processes: {out}"
    );
    assert_eq!(lines.last(), Some(&"done"));
    // What it started died with it.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left = std::process::Command::new("pgrep")
        .args(["-f", "sleep 31337"])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "a host's child outlived it: {left:?}"
    );
    // The evaluator still sees its own files.
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret");
}

#[test]
fn an_isolated_host_sees_no_hidden_folder_no_network_and_holds_no_capability() {
    if let Some(dir) = std::env::var_os(AS_CHILD) {
        // The re-run as an unprivileged user.
        check_isolation(std::path::Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    check_isolation(dir.path());
    // SAFETY: geteuid never fails.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let unprivileged = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(unprivileged.path(), Some(65534), Some(65534)).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut command = std::process::Command::new(exe);
    command
        .args([
            "--exact",
            "an_isolated_host_sees_no_hidden_folder_no_network_and_holds_no_capability",
            "--nocapture",
        ])
        .env(AS_CHILD, unprivileged.path());
    // SAFETY: only set*id calls between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setresgid(65534, 65534, 65534) != 0
                || libc::setresuid(65534, 65534, 65534) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = command.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "as uid 65534:\n{text}"
    );
}
