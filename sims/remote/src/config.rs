//! A task file's `[sim]` table for a sim hosted in a process of its own:
//!
//! ```toml
//! [sim]
//! kind = "process"
//! gymnasium = "gymnasium_robotics:PointMaze_UMaze-v3"   # or command = ["./my-host", "--flag"]
//! python = "/opt/venv/bin/python"                      # for `gymnasium`; default "python3"
//! kwargs = { continuing_task = false }                 # for `gymnasium`: gymnasium.make's
//! counters = ["success", "collisions:sum"]             # for `gymnasium`: info keys to report
//! env = { PYTHONPATH = "/opt/envs" }                   # added to the host's environment
//! expose = ["/home/me/envs"]  # folders in users' homes the host needs (as root; its own Python's found by itself)
//! timeout_seconds = 10        # each call; a host that takes longer has failed
//! start_timeout_seconds = 120 # from start to its first answer (imports, models)
//! memory_mb = 4096            # the host's address space
//! batch = false               # whether batch tasks may roll it out
//! ```

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::process::HostCommand;

/// The Python module that serves any Gymnasium env (shipped by the `ale_client` package).
pub const PYTHON_HOST_MODULE: &str = "ale_client.sim_host";

/// Bounds on the numbers a task file gives, checked at load.
pub mod bounds {
    pub const MAX_TIMEOUT_SECONDS: f64 = 3600.0;
    pub const MIN_MEMORY_MB: u64 = 64;
    pub const MAX_MEMORY_MB: u64 = 1 << 20;
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    kind: Kind,
    #[serde(default)]
    command: Option<Vec<String>>,
    #[serde(default)]
    gymnasium: Option<String>,
    #[serde(default)]
    python: Option<String>,
    #[serde(default)]
    kwargs: Option<Map<String, Value>>,
    #[serde(default)]
    counters: Vec<String>,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    expose: Vec<String>,
    #[serde(default = "default_timeout")]
    timeout_seconds: f64,
    #[serde(default = "default_start_timeout")]
    start_timeout_seconds: f64,
    #[serde(default = "default_memory_mb")]
    memory_mb: u64,
    #[serde(default)]
    batch: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Process,
}

fn default_timeout() -> f64 {
    10.0
}

fn default_start_timeout() -> f64 {
    120.0
}

fn default_memory_mb() -> u64 {
    4096
}

/// A hosted sim, as its task file describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct HostedSimConfig {
    /// The sim's name in records: `gymnasium:<EnvId>` or `process:<program>`.
    pub name: String,
    pub command: HostCommand,
    pub call_timeout: Duration,
    pub start_timeout: Duration,
    pub batch: bool,
}

impl HostedSimConfig {
    /// Reads a task's `[sim]` table; the error names the key.
    pub fn from_table(table: &Map<String, Value>) -> Result<HostedSimConfig, String> {
        let t: Table = serde_json::from_value(Value::Object(table.clone()))
            .map_err(|e| format!("[sim]: {e}"))?;
        let seconds = |key: &str, value: f64| {
            if value.is_finite() && value > 0.0 && value <= bounds::MAX_TIMEOUT_SECONDS {
                Ok(Duration::from_secs_f64(value))
            } else {
                Err(format!(
                    "[sim].{key} must be a number of seconds in (0, {}], got {value}",
                    bounds::MAX_TIMEOUT_SECONDS
                ))
            }
        };
        let call_timeout = seconds("timeout_seconds", t.timeout_seconds)?;
        let start_timeout = seconds("start_timeout_seconds", t.start_timeout_seconds)?;
        if !(bounds::MIN_MEMORY_MB..=bounds::MAX_MEMORY_MB).contains(&t.memory_mb) {
            return Err(format!(
                "[sim].memory_mb must be within {}..={}, got {}",
                bounds::MIN_MEMORY_MB,
                bounds::MAX_MEMORY_MB,
                t.memory_mb
            ));
        }
        for key in t.env.keys() {
            let valid = !key.is_empty()
                && !key.starts_with(|c: char| c.is_ascii_digit())
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!("[sim].env: {key:?} is not a variable name"));
            }
        }
        let (name, program, args) = match (t.command, t.gymnasium) {
            (Some(_), Some(_)) => {
                return Err("[sim] gives both `command` and `gymnasium`; give one".into());
            }
            (None, None) => {
                return Err(
                    "[sim] needs `command = [\"program\", ...]` or `gymnasium = \"module:EnvId\"`"
                        .into(),
                );
            }
            (Some(command), None) => {
                if t.python.is_some() || t.kwargs.is_some() || !t.counters.is_empty() {
                    return Err("[sim].python, kwargs and counters go with `gymnasium`; a \
                                `command` host takes its own arguments"
                        .into());
                }
                let Some((program, args)) = command.split_first() else {
                    return Err("[sim].command is empty; give the program and its arguments".into());
                };
                if program.is_empty() {
                    return Err("[sim].command's program is empty".into());
                }
                let base = program.rsplit('/').next().unwrap_or(program);
                (format!("process:{base}"), program.clone(), args.to_vec())
            }
            (None, Some(env)) => {
                let env_id = env.rsplit(':').next().unwrap_or(&env).to_string();
                if env_id.is_empty() || env.split(':').count() > 2 {
                    return Err(format!(
                        "[sim].gymnasium must be \"EnvId\" or \"module:EnvId\", got {env:?}"
                    ));
                }
                let mut args = vec![
                    "-m".to_string(),
                    PYTHON_HOST_MODULE.to_string(),
                    "--env".to_string(),
                    env.clone(),
                ];
                if let Some(kwargs) = &t.kwargs {
                    args.push("--kwargs".into());
                    args.push(Value::Object(kwargs.clone()).to_string());
                }
                for counter in &t.counters {
                    args.push("--counter".into());
                    args.push(counter.clone());
                }
                let python = t.python.unwrap_or_else(|| "python3".into());
                (format!("gymnasium:{env_id}"), python, args)
            }
        };
        // A path to the program is taken from where the evaluator runs, once: hosts start in
        // `/`. Links are kept (a venv's `python` is a link, and Python finds its venv by it).
        let program = if program.contains('/') {
            std::path::absolute(&program)
                .map_err(|e| format!("[sim]: the program {program:?}: {e}"))?
                .to_string_lossy()
                .into_owned()
        } else {
            program
        };
        let mut expose = Vec::new();
        for folder in &t.expose {
            let path = std::path::Path::new(folder);
            if !path.is_absolute() {
                return Err(format!("[sim].expose: {folder:?} is not an absolute path"));
            }
            expose.push(path.to_path_buf());
        }
        Ok(HostedSimConfig {
            name,
            command: HostCommand {
                program,
                args,
                env: t.env.into_iter().collect(),
                memory_bytes: t.memory_mb << 20,
                expose,
            },
            call_timeout,
            start_timeout,
            batch: t.batch,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(toml_text: &str) -> Map<String, Value> {
        let value: Value = serde_json::from_str(toml_text).unwrap();
        value.as_object().unwrap().clone()
    }

    #[test]
    fn the_gymnasium_shorthand_runs_the_python_host() {
        let c = HostedSimConfig::from_table(&table(
            r#"{"kind": "process", "gymnasium": "gymnasium_robotics:PointMaze_UMaze-v3",
                "python": "/venv/bin/python", "kwargs": {"continuing_task": false},
                "counters": ["success"]}"#,
        ))
        .unwrap();
        assert_eq!(c.name, "gymnasium:PointMaze_UMaze-v3");
        assert_eq!(c.command.program, "/venv/bin/python");
        assert_eq!(
            c.command.args,
            [
                "-m",
                PYTHON_HOST_MODULE,
                "--env",
                "gymnasium_robotics:PointMaze_UMaze-v3",
                "--kwargs",
                r#"{"continuing_task":false}"#,
                "--counter",
                "success"
            ]
        );
        assert_eq!(c.call_timeout, Duration::from_secs(10));
        assert!(!c.batch);
    }

    #[test]
    fn a_command_host_runs_as_given() {
        let c = HostedSimConfig::from_table(&table(
            r#"{"kind": "process", "command": ["/opt/hosts/my-host", "--fast"], "timeout_seconds": 0.5, "batch": true}"#,
        ))
        .unwrap();
        assert_eq!(c.name, "process:my-host");
        assert_eq!(c.command.args, ["--fast"]);
        assert_eq!(c.call_timeout, Duration::from_millis(500));
        assert!(c.batch);
    }

    #[test]
    fn bad_tables_are_refused_naming_the_key() {
        for (text, expected) in [
            (r#"{"kind": "docker", "command": ["x"]}"#, "unknown variant"),
            (r#"{"kind": "process"}"#, "needs `command"),
            (r#"{"kind": "process", "command": []}"#, "empty"),
            (
                r#"{"kind": "process", "command": ["x"], "gymnasium": "A-v0"}"#,
                "both",
            ),
            (
                r#"{"kind": "process", "command": ["x"], "kwargs": {}}"#,
                "go with `gymnasium`",
            ),
            (
                r#"{"kind": "process", "gymnasium": "a:b:C-v0"}"#,
                "module:EnvId",
            ),
            (
                r#"{"kind": "process", "gymnasium": "A-v0", "timeout_seconds": 0}"#,
                "timeout_seconds",
            ),
            (
                r#"{"kind": "process", "gymnasium": "A-v0", "memory_mb": 1}"#,
                "memory_mb",
            ),
            (
                r#"{"kind": "process", "gymnasium": "A-v0", "env": {"1X": "y"}}"#,
                "variable name",
            ),
            (
                r#"{"kind": "process", "gymnasium": "A-v0", "colour": 3}"#,
                "unknown field",
            ),
        ] {
            let e = HostedSimConfig::from_table(&table(text)).unwrap_err();
            assert!(e.contains(expected), "{text}: {e}");
        }
    }
}
