//! An agent that attacks the run beside it, compiled by `tests/run_isolation.rs` with plain
//! `rustc` (std only). It tries one attack, prints `ATTACK <name>: SUCCEEDED|FAILED <detail>`
//! lines and `READY` once it is in position (the test reads both in its `agent.log`), then
//! executes the command after its arguments, so its run still has an ending of its own.
//!
//! Usage: attacker ATTACK ARG COMMAND...
//! Environment: ALE_SUBMISSION_DIR (a batch run's), HOSTILE_STATE_DIR (the evaluator's state dir
//! on the host, for the attacks that look for it).

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

unsafe extern "C" {
    fn fork() -> i32;
    fn kill(pid: i32, signal: i32) -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn unshare(flags: i32) -> i32;
    fn mount(
        source: *const u8,
        target: *const u8,
        fstype: *const u8,
        flags: u64,
        data: *const u8,
    ) -> i32;
    fn _exit(code: i32) -> !;
}

const SIGKILL: i32 = 9;
const CLONE_NEWNS: i32 = 0x0002_0000;
const CLONE_NEWUSER: i32 = 0x1000_0000;
const AGENT_SOCKET: &str = "/run/ale/agent.sock";
const ENTRYPOINT: &str = "policy.safetensors";

fn report(attack: &str, outcome: Result<String, String>) {
    match outcome {
        Ok(detail) => println!("ATTACK {attack}: SUCCEEDED {detail}"),
        Err(detail) => println!("ATTACK {attack}: FAILED {detail}"),
    }
}

fn ready() {
    println!("READY");
    let _ = std::io::stdout().flush();
}

fn submission_dir() -> String {
    std::env::var("ALE_SUBMISSION_DIR").unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let attack = args.get(1).cloned().unwrap_or_default();
    let arg = args.get(2).cloned().unwrap_or_default();
    let then = &args[3.min(args.len())..];
    match attack.as_str() {
        "thief" => thief(&arg),
        "write-and-wait" => write_and_wait(&arg),
        "saboteur" => saboteur(&arg),
        "disk-filler" => disk_filler(&arg),
        "hold-connections" => hold_connections(&arg),
        "hold-for" => return hold_for(&arg, then),
        "fork-bomb" => fork_bomb(),
        "memory-hog" => memory_hog(),
        "own-tmpfs" => own_tmpfs(),
        "spew" => spew(&arg),
        other => println!("unknown attack {other}"),
    }
    let _ = std::io::stdout().flush();
    if let Some((program, rest)) = then.split_first() {
        let error = std::process::Command::new(program).args(rest).exec();
        println!("cannot run {program}: {error}");
        std::process::exit(1);
    }
}

/// Says READY, waits ARG seconds (a run beside it writes its file meanwhile), then looks in its
/// own submission folder, which it never writes: a file there is another run's.
fn thief(seconds: &str) {
    ready();
    std::thread::sleep(Duration::from_secs_f64(seconds.parse().unwrap_or(1.0)));
    let path = format!("{}/{ENTRYPOINT}", submission_dir());
    report(
        "thief",
        if std::path::Path::new(&path).exists() {
            Ok(format!("{path} holds a file it did not write"))
        } else {
            Err(format!("nothing at {path}"))
        },
    );
}

/// Copies the policy file ARG into its own submission folder, says READY, and waits two seconds
/// (so that a run beside it acts while the file is there) before submitting it.
fn write_and_wait(file: &str) {
    let target = format!("{}/{ENTRYPOINT}", submission_dir());
    if let Err(e) = std::fs::copy(file, &target) {
        println!("cannot copy {file} to {target}: {e}");
    }
    ready();
    std::thread::sleep(Duration::from_secs(2));
    match std::fs::read(&target) {
        Ok(bytes) if bytes == std::fs::read(file).unwrap_or_default() => {
            println!("OWN FILE INTACT")
        }
        Ok(_) => println!("OWN FILE CHANGED"),
        Err(e) => println!("OWN FILE GONE: {e}"),
    }
}

/// Plants the policy file ARG wherever another run's submission could be, renames and empties
/// every folder it can find that is not its own, for a few seconds.
fn saboteur(file: &str) {
    let bytes = std::fs::read(file).unwrap_or_default();
    let own = submission_dir();
    let state = std::env::var("HOSTILE_STATE_DIR").unwrap_or_default();
    ready();
    let deadline = Instant::now() + Duration::from_secs(4);
    let mut found = Vec::new();
    while Instant::now() < deadline {
        let mut candidates = vec![format!("{state}/submission")];
        for parent in [format!("{state}/submissions"), "/run/ale".to_string()] {
            if let Ok(entries) = std::fs::read_dir(&parent) {
                for entry in entries.flatten() {
                    candidates.push(entry.path().to_string_lossy().to_string());
                }
            }
        }
        for dir in candidates {
            if dir == own || !std::path::Path::new(&dir).is_dir() {
                continue;
            }
            let planted = std::fs::write(format!("{dir}/{ENTRYPOINT}"), &bytes).is_ok();
            let renamed = std::fs::rename(&dir, format!("{dir}.gone")).is_ok();
            if planted || renamed {
                found.push(format!("{dir} (planted {planted}, renamed {renamed})"));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Its own folder gets the zero policy, which is its own business.
    let _ = std::fs::write(format!("{own}/{ENTRYPOINT}"), &bytes);
    found.dedup();
    report(
        "saboteur",
        if found.is_empty() {
            Err("reached no other run's folder".into())
        } else {
            Ok(found.join(", "))
        },
    );
}

/// Writes into `dir/fill` until the write fails or `cap` bytes are written; what it wrote and
/// the error that stopped it.
fn fill(dir: &str, cap: u64) -> (u64, String) {
    let path = format!("{dir}/fill");
    let mut file = match std::fs::File::create(&path) {
        Ok(file) => file,
        Err(e) => return (0, format!("{path}: {e}")),
    };
    let chunk = vec![0x5au8; 1 << 20];
    let mut written = 0u64;
    while written < cap {
        match file.write(&chunk) {
            Ok(0) => return (written, "wrote nothing".into()),
            Ok(n) => written += n as u64,
            Err(e) => return (written, e.to_string()),
        }
    }
    (written, "no error".into())
}

/// Fills its submission folder, `/tmp` and `HOME` until each refuses, leaves the files there,
/// and holds ARG seconds (4 if none; the test's honest run plays meanwhile).
fn disk_filler(seconds: &str) {
    let home = std::env::var("HOME").unwrap_or_default();
    for (what, dir) in [("submission", submission_dir()), ("home", home)] {
        let (written, error) = fill(&dir, 4 << 30);
        let detail = format!("{what}: wrote {} MiB, then: {error}", written >> 20);
        report(
            "disk-filler",
            if error == "no error" {
                Ok(detail)
            } else {
                Err(detail)
            },
        );
    }
    ready();
    std::thread::sleep(Duration::from_secs_f64(seconds.parse().unwrap_or(4.0)));
}

/// Prints ARG bytes of output in lines; exits 3 if a write fails (its log must never make it).
fn spew(bytes: &str) {
    let total: usize = bytes.parse().unwrap_or(1 << 20);
    let line = [b"spew ".as_slice(), &[b'.'; 250], b"\n"].concat();
    let mut out = std::io::stdout().lock();
    let mut written = 0;
    while written < total {
        if let Err(e) = out.write_all(&line) {
            eprintln!("SPEW FAILED after {written} bytes: {e}");
            std::process::exit(3);
        }
        written += line.len();
    }
    let _ = writeln!(out, "SPEWED {written} bytes");
}

/// Opens up to ARG HTTP/2 connections to its agent socket, counts those the evaluator keeps,
/// and keeps them alive with a PING every second for eight seconds.
fn hold_connections(count: &str) {
    use std::os::unix::net::UnixStream;
    let count: usize = count.parse().unwrap_or(300);
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    let mut held = Vec::new();
    for _ in 0..count {
        let Ok(mut stream) = UnixStream::connect(AGENT_SOCKET) else {
            break;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        if stream.write_all(preface).is_err() {
            continue;
        }
        // A connection the evaluator keeps answers with its SETTINGS; one over the cap is
        // closed at once.
        let mut first = [0u8; 9];
        if matches!(stream.read(&mut first), Ok(n) if n > 0) {
            held.push(stream);
        }
    }
    let kept = held.len();
    report(
        "hold-connections",
        if kept >= count {
            Ok(format!("holds all {kept} connections"))
        } else {
            Err(format!("the evaluator kept {kept} of {count}"))
        },
    );
    ready();
    let ping = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00pingping";
    let mut sink = [0u8; 4096];
    for _ in 0..8 {
        for stream in &mut held {
            let _ = stream.write_all(ping);
            let _ = stream.read(&mut sink);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Runs COMMAND for ARG seconds, then kills it and exits 0.
fn hold_for(seconds: &str, command: &[String]) {
    let Some((program, rest)) = command.split_first() else {
        return;
    };
    let mut child = match std::process::Command::new(program).args(rest).spawn() {
        Ok(child) => child,
        Err(e) => return println!("cannot run {program}: {e}"),
    };
    std::thread::sleep(Duration::from_secs(seconds.parse().unwrap_or(8)));
    let _ = child.kill();
    let _ = child.wait();
}

/// Forks sleeping children until the kernel refuses; reports how many, kills them all.
fn fork_bomb() {
    let mut children = Vec::new();
    let mut error = String::from("no error");
    while children.len() < 4096 {
        // SAFETY: the child only sleeps and exits, touching nothing the parent holds.
        let pid = unsafe { fork() };
        if pid == 0 {
            std::thread::sleep(Duration::from_secs(30));
            // SAFETY: ends the forked child without running the parent's destructors.
            unsafe { _exit(0) }
        }
        if pid < 0 {
            error = std::io::Error::last_os_error().to_string();
            break;
        }
        children.push(pid);
    }
    let forked = children.len();
    report(
        "fork-bomb",
        if forked >= 4096 {
            Ok(format!("forked {forked} processes"))
        } else {
            Err(format!("forked {forked}, then: {error}"))
        },
    );
    ready();
    std::thread::sleep(Duration::from_secs(3));
    for pid in children {
        // SAFETY: signalling and reaping our own children.
        unsafe {
            kill(pid, SIGKILL);
            waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
}

/// Eight processes each touch 1 GiB, 16 MiB at a time; says whether all of them got there.
fn memory_hog() {
    ready();
    let mut children = Vec::new();
    for _ in 0..8 {
        // SAFETY: the child allocates and exits.
        let pid = unsafe { fork() };
        if pid == 0 {
            let mut held: Vec<Vec<u8>> = Vec::new();
            for _ in 0..64 {
                held.push(vec![1u8; 16 << 20]);
            }
            std::thread::sleep(Duration::from_secs(2));
            // SAFETY: ends the child; 0 says it held its gigabyte.
            unsafe { _exit(if held.len() == 64 { 0 } else { 1 }) }
        }
        if pid > 0 {
            children.push(pid);
        }
    }
    let mut whole = 0;
    for pid in &children {
        let mut status = 0;
        // SAFETY: reaping our own child.
        unsafe { waitpid(*pid, &mut status, 0) };
        if status == 0 {
            whole += 1;
        }
    }
    report(
        "memory-hog",
        if whole == 8 {
            Ok("8 processes held 1 GiB each".into())
        } else {
            Err(format!("{whole} of 8 processes held their 1 GiB"))
        },
    );
}

/// Tries to mount a tmpfs of its own (a user namespace of its own first) and fill it; says
/// first how ready the kernel is to kill it when memory runs out.
fn own_tmpfs() {
    let score = std::fs::read_to_string("/proc/self/oom_score_adj").unwrap_or_default();
    println!("OOM_SCORE_ADJ {}", score.trim());
    // SAFETY: raw syscalls on constant strings.
    let outcome = unsafe {
        if unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0 {
            Err(format!(
                "unshare: {}",
                std::io::Error::last_os_error()
            ))
        } else if mount(
            c"none".as_ptr().cast(),
            c"/tmp".as_ptr().cast(),
            c"tmpfs".as_ptr().cast(),
            0,
            c"size=8g".as_ptr().cast(),
        ) != 0
        {
            Err(format!("mount: {}", std::io::Error::last_os_error()))
        } else {
            let (written, error) = fill("/tmp", 2 << 30);
            Ok(format!("wrote {} MiB into its own tmpfs ({error})", written >> 20))
        }
    };
    report("own-tmpfs", outcome);
    let (written, error) = fill("/tmp", 4 << 30);
    report(
        "fill-tmp",
        if error == "no error" {
            Ok(format!("wrote {} MiB", written >> 20))
        } else {
            Err(format!("wrote {} MiB, then: {error}", written >> 20))
        },
    );
    let _ = std::fs::remove_file("/tmp/fill");
    ready();
    std::thread::sleep(Duration::from_secs(2));
}
