//! A hostile agent, compiled by `tests/hostile_agent.rs` with plain `rustc` (std only). It
//! tries one attack on the evaluator's records, prints what it achieved as
//! `ATTACK <name>: SUCCEEDED|FAILED <detail>` lines, then becomes an honest agent by executing
//! the command after its arguments, so the run still has a session to score.
//!
//! Usage: agent ATTACK MARKER HONEST_AGENT_COMMAND...
//! Environment (passed with `ale harness run --env`): HOSTILE_STATE_DIR, HOSTILE_HARNESS_PID,
//! HOSTILE_TCP_ADDR.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::time::Duration;

unsafe extern "C" {
    fn fork() -> i32;
    fn setsid() -> i32;
    fn getuid() -> u32;
    fn unshare(flags: i32) -> i32;
    fn memfd_create(name: *const u8, flags: u32) -> i32;
    fn write(fd: i32, buf: *const u8, count: usize) -> isize;
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, offset: i64) -> *mut u8;
    fn shmget(key: i32, size: usize, flags: i32) -> i32;
    fn shmat(id: i32, addr: *const u8, flags: i32) -> *mut u8;
    fn shmdt(addr: *const u8) -> i32;
    fn signal(signum: i32, handler: usize) -> usize;
    fn clock_gettime(clock: i32, tp: *mut [i64; 2]) -> i32;
    fn _exit(code: i32) -> !;
    fn mount(
        source: *const u8,
        target: *const u8,
        fstype: *const u8,
        flags: u64,
        data: *const u8,
    ) -> i32;
}

const CLONE_NEWUSER: i32 = 0x1000_0000;
const CLONE_NEWNS: i32 = 0x0002_0000;
const PROT_READ_WRITE: i32 = 0x1 | 0x2;
const MAP_SHARED_ANONYMOUS: i32 = 0x01 | 0x20;
const IPC_CREAT: i32 = 0o1000;
const SIGCHLD: i32 = 17;
const SIG_IGN: usize = 1;
const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;

/// Forks into `n` processes in all; returns in each.
fn fork_into(n: usize) {
    for _ in 1..n {
        // SAFETY: fork in a single-threaded program.
        if unsafe { fork() } == 0 {
            break;
        }
    }
}

/// This process's CPU time, in milliseconds.
fn cpu_ms() -> i64 {
    let mut t = [0i64; 2];
    // SAFETY: clock_gettime writes one timespec (two 64-bit fields on 64-bit Linux).
    unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t[0] * 1000 + t[1] / 1_000_000
}

fn report(attack: &str, outcome: Result<String, String>) {
    match outcome {
        Ok(detail) => println!("ATTACK {attack}: SUCCEEDED {detail}"),
        Err(detail) => println!("ATTACK {attack}: FAILED {detail}"),
    }
}

fn state_dir() -> String {
    std::env::var("HOSTILE_STATE_DIR").unwrap_or_default()
}

fn read_file(path: &str) -> Result<String, String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map(|n| format!("read {n} bytes of {path}"))
        .map_err(|e| format!("{path}: {e}"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let attack = args.get(1).cloned().unwrap_or_default();
    let honest = &args[3.min(args.len())..];
    let state = state_dir();
    match attack.as_str() {
        "read-secrets" => {
            for file in ["evaluator.secret", "evaluator.key", "harness.key"] {
                report(&attack, read_file(&format!("{state}/{file}")));
            }
        }
        "list-state-dir" => report(
            &attack,
            std::fs::read_dir(&state)
                .map_err(|e| format!("{state}: {e}"))
                .and_then(|entries| {
                    let names: Vec<String> = entries
                        .filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().to_string())
                        .collect();
                    if names.is_empty() {
                        Err(format!("{state} looks empty"))
                    } else {
                        Ok(names.join(","))
                    }
                }),
        ),
        "harness-socket" => report(
            &attack,
            std::os::unix::net::UnixStream::connect(format!("{state}/harness.sock"))
                .map(|_| "connected to the harness socket".to_string())
                .map_err(|e| e.to_string()),
        ),
        "write-runs" => report(
            &attack,
            std::fs::write(format!("{state}/runs/forged.txt"), b"forged")
                .map(|()| "wrote runs/forged.txt".to_string())
                .map_err(|e| e.to_string()),
        ),
        "proc-cmdline" => {
            let pid = std::env::var("HOSTILE_HARNESS_PID").unwrap_or_default();
            report(&attack, read_file(&format!("/proc/{pid}/cmdline")).and_then(|_| {
                let text = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let text = String::from_utf8_lossy(&text).replace('\0', " ");
                if text.contains(&state) {
                    Ok(format!("the harness's command line names the state dir: {text}"))
                } else {
                    Err(format!("/proc/{pid} is not the harness (it is {text:?})"))
                }
            }));
            // Any process at all that names the state dir.
            let mut found = Vec::new();
            if let Ok(entries) = std::fs::read_dir("/proc") {
                for entry in entries.filter_map(|e| e.ok()) {
                    let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                    if String::from_utf8_lossy(&cmdline).contains(&state) {
                        found.push(entry.file_name().to_string_lossy().to_string());
                    }
                }
            }
            report(
                "proc-scan",
                if found.is_empty() {
                    Err("no visible process names the state dir".into())
                } else {
                    Ok(format!("processes naming the state dir: {found:?}"))
                },
            );
        }
        "tcp" => {
            let addr = std::env::var("HOSTILE_TCP_ADDR").unwrap_or_default();
            report(
                &attack,
                addr.parse()
                    .map_err(|e| format!("{addr:?}: {e}"))
                    .and_then(|a| {
                        std::net::TcpStream::connect_timeout(&a, Duration::from_secs(2))
                            .map(|_| format!("connected to {addr}"))
                            .map_err(|e| format!("{addr}: {e}"))
                    }),
            );
        }
        "daemon" => {
            // The classic double fork: the grandchild leads its own session and its parent
            // is gone, so it escapes a process-group kill.
            // SAFETY: fork in a single-threaded program.
            match unsafe { fork() } {
                0 => {
                    unsafe { setsid() };
                    if unsafe { fork() } == 0 {
                        loop {
                            std::thread::sleep(Duration::from_secs(1));
                        }
                    }
                    std::process::exit(0);
                }
                pid if pid > 0 => report(&attack, Ok(format!("left a daemon (marker {})", args[2]))),
                _ => report(&attack, Err("fork failed".into())),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        "env" => {
            for (key, value) in std::env::vars() {
                println!("ENV {key}={value}");
            }
        }
        "userns" => {
            // A user namespace of its own would let it mount a tmpfs past its caps.
            // SAFETY: raw syscalls on static strings.
            let made = unsafe { unshare(CLONE_NEWUSER) } == 0;
            report(
                &attack,
                if made {
                    Ok("created a user namespace".into())
                } else {
                    Err(format!("unshare(CLONE_NEWUSER): {}", std::io::Error::last_os_error()))
                },
            );
            let mounted = unsafe {
                unshare(CLONE_NEWNS) == 0
                    && mount(
                        c"none".as_ptr().cast(),
                        c"/tmp".as_ptr().cast(),
                        c"tmpfs".as_ptr().cast(),
                        0,
                        c"size=4g".as_ptr().cast(),
                    ) == 0
            };
            report(
                "mount-tmpfs",
                if mounted {
                    Ok("mounted a tmpfs of 4 GiB on /tmp".into())
                } else {
                    Err(format!("{}", std::io::Error::last_os_error()))
                },
            );
        }
        "uid" => {
            // SAFETY: getuid has no preconditions.
            println!("UID {}", unsafe { getuid() });
            // Long enough for a second run to start beside this one.
            std::thread::sleep(Duration::from_secs(2));
        }
        "fork-bomb" => {
            println!("FORK-BOMB started");
            loop {
                // SAFETY: fork in a single-threaded program; children loop the same way.
                unsafe { fork() };
            }
        }
        "memory-hog" => {
            // Eight processes, each well under the per-process bounds, together far over.
            println!("MEMORY-HOG started");
            for _ in 0..7 {
                // SAFETY: fork in a single-threaded program.
                if unsafe { fork() } == 0 {
                    break;
                }
            }
            let mut held: Vec<Vec<u8>> = Vec::new();
            for _ in 0..10 {
                let mut chunk = vec![0u8; 16 << 20];
                for page in chunk.chunks_mut(4096) {
                    page[0] = 1;
                }
                held.push(chunk);
            }
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        "memfd-hog" => {
            // Memory no process maps: written into memfd files, counted in no process's RSS.
            // SAFETY: a static name; no flags.
            let fd = unsafe { memfd_create(c"hog".as_ptr().cast(), 0) };
            if fd < 0 {
                report(
                    &attack,
                    Err(format!("memfd_create: {}", std::io::Error::last_os_error())),
                );
            } else {
                let chunk = vec![1u8; 1 << 20];
                let mut written = 0usize;
                // SAFETY: writes from a live buffer to our own descriptor.
                while written < 512 << 20 && unsafe { write(fd, chunk.as_ptr(), chunk.len()) } > 0 {
                    written += chunk.len();
                }
                report(&attack, Ok(format!("wrote {written} bytes into a memfd")));
            }
        }
        "shared-anon-hog" => {
            // MAP_SHARED | MAP_ANONYMOUS memory is "shared" in statm: eight processes, each
            // under every per-process bound, together far over.
            println!("SHARED-ANON-HOG started");
            fork_into(8);
            let len = 100usize << 20;
            // SAFETY: a fresh mapping of our own; the result is checked.
            let map = unsafe {
                mmap(std::ptr::null_mut(), len, PROT_READ_WRITE, MAP_SHARED_ANONYMOUS, -1, 0)
            };
            if map as isize == -1 {
                report(&attack, Err(format!("mmap: {}", std::io::Error::last_os_error())));
            } else {
                for offset in (0..len).step_by(4096) {
                    // SAFETY: inside the mapping.
                    unsafe { map.add(offset).write_volatile(1) };
                }
            }
            std::thread::sleep(Duration::from_secs(30));
            report(&attack, Ok("held 800 MiB of shared anonymous memory for 30 s".into()));
        }
        "shm-hog" => {
            // System V segments, each touched and then detached: held by no process.
            let mut held = 0usize;
            let size = 64usize << 20;
            let outcome = loop {
                if held >= 1 << 30 {
                    break Ok(format!("held {held} bytes of detached System V shared memory"));
                }
                // SAFETY: a private segment of our own; results are checked.
                let id = unsafe { shmget(0, size, IPC_CREAT | 0o600) };
                if id < 0 {
                    break Err(format!(
                        "shmget refused after {held} bytes: {}",
                        std::io::Error::last_os_error()
                    ));
                }
                let addr = unsafe { shmat(id, std::ptr::null(), 0) };
                if addr as isize == -1 {
                    break Err(format!("shmat: {}", std::io::Error::last_os_error()));
                }
                for offset in (0..size).step_by(4096) {
                    // SAFETY: inside the attached segment.
                    unsafe { addr.add(offset).write_volatile(1) };
                }
                unsafe { shmdt(addr) };
                held += size;
            };
            report(&attack, outcome);
        }
        "autoreap-spin" => {
            // Children the kernel reaps (SIGCHLD ignored) leave their CPU time in nobody's
            // cutime: a loop of short burners.
            println!("AUTOREAP-SPIN started");
            // SAFETY: setting a signal disposition.
            unsafe { signal(SIGCHLD, SIG_IGN) };
            let start = std::time::Instant::now();
            while start.elapsed() < Duration::from_secs(60) {
                // SAFETY: fork in a single-threaded program.
                if unsafe { fork() } == 0 {
                    let mut x: u64 = 0;
                    while cpu_ms() < 300 {
                        x = std::hint::black_box(x.wrapping_add(1));
                    }
                    // SAFETY: ends the child.
                    unsafe { _exit(0) };
                }
                std::thread::sleep(Duration::from_millis(300));
            }
            report(&attack, Ok("burned 60 s of CPU in reaped children".into()));
        }
        "spin" => {
            println!("SPIN started");
            let mut x: u64 = 0;
            loop {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        other => report(other, Err("unknown attack".into())),
    }
    if honest.is_empty() {
        return;
    }
    let error = std::process::Command::new(&honest[0]).args(&honest[1..]).exec();
    eprintln!("cannot run the honest agent {honest:?}: {error}");
    std::process::exit(127);
}
