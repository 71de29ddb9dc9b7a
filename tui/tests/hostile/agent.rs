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
        other => report(other, Err("unknown attack".into())),
    }
    if honest.is_empty() {
        return;
    }
    let error = std::process::Command::new(&honest[0]).args(&honest[1..]).exec();
    eprintln!("cannot run the honest agent {honest:?}: {error}");
    std::process::exit(127);
}
