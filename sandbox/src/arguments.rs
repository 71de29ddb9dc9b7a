//! The agent command's path arguments: a script handed to an interpreter (`python agent.py`),
//! a config file, a data folder. The sandbox shows the agent a working directory of its own and
//! hides the homes, so a path that names a file here may name nothing in there. Each argument
//! that names an existing host path is checked against what the sandbox will show, and one it
//! will not comes with the `--workdir` or `--expose` that shows it. Arguments are the agent's
//! own business: a path that is not visible is a warning, not a refusal.

use std::fmt;
use std::path::{Path, PathBuf};

use super::program::{SandboxView, Unseen};

/// Why an argument's path is not what the agent will see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgumentProblem {
    /// A relative path, and the agent starts in a fresh empty folder: `--workdir` the harness's
    /// working directory.
    RelativeWithoutWorkdir { cwd: PathBuf },
    /// A relative path that is not in the agent's `--workdir`.
    NotInWorkdir { workdir: PathBuf, cwd: PathBuf },
    /// A path (or what it leads to) the sandbox does not show: `--expose` its folder.
    Unseen { unseen: Unseen, folder: PathBuf },
    /// A path into the state dir, which no agent may see.
    Secret(PathBuf),
}

/// One argument whose path the agent will not find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenArgument {
    /// The argument as given (for `--opt=PATH`, the PATH).
    pub argument: String,
    /// What it names on the host (relative ones against the harness's working directory).
    pub host_path: PathBuf,
    pub problem: ArgumentProblem,
}

impl HiddenArgument {
    /// The `ale harness run` arguments that show the path, if any can.
    pub fn suggestion(&self) -> Option<String> {
        match &self.problem {
            ArgumentProblem::RelativeWithoutWorkdir { cwd }
            | ArgumentProblem::NotInWorkdir { cwd, .. } => {
                Some(format!("--workdir {}", cwd.display()))
            }
            ArgumentProblem::Unseen { folder, .. } => {
                Some(format!("--expose {}", folder.display()))
            }
            ArgumentProblem::Secret(_) => None,
        }
    }
}

impl fmt::Display for HiddenArgument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the agent's argument {} ", self.argument)?;
        match &self.problem {
            ArgumentProblem::RelativeWithoutWorkdir { cwd } => write!(
                f,
                "is relative to {}, but the agent starts in an empty folder of its own",
                cwd.display()
            )?,
            ArgumentProblem::NotInWorkdir { workdir, cwd } => write!(
                f,
                "is in {}, not in the agent's working directory {}",
                cwd.display(),
                workdir.display()
            )?,
            ArgumentProblem::Unseen { unseen, .. } => {
                write!(f, "({}) is {unseen}", self.host_path.display())?
            }
            ArgumentProblem::Secret(dir) => write!(
                f,
                "leads into {}, which the agent must not see",
                dir.display()
            )?,
        }
        match self.suggestion() {
            Some(args) => write!(f, ": add `{args}` to `ale harness run` to show it"),
            None => Ok(()),
        }
    }
}

/// The words of the agent command that may be paths: every argument after the program, the
/// value of `--opt=VALUE`, and, for `sh -c LINE` (or bash, dash, zsh), each word of LINE.
fn candidate_words(command: &[String]) -> Vec<String> {
    let mut words = Vec::new();
    let Some((program, args)) = command.split_first() else {
        return words;
    };
    let shell = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| ["sh", "bash", "dash", "zsh"].contains(&n));
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if shell && arg == "-c" {
            if let Some(line) = rest.next() {
                words.extend(
                    line.split_whitespace()
                        .map(|w| w.trim_matches(|c| c == '\'' || c == '"').to_string()),
                );
            }
            continue;
        }
        words.push(arg.clone());
    }
    words
        .into_iter()
        .filter_map(|w| match w.strip_prefix('-') {
            Some(option) => option.split_once('=').map(|(_, value)| value.to_string()),
            None => Some(w),
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// Checks each argument of `command` that names an existing host path (relative ones against
/// `cwd`, the harness's working directory) against what the sandbox shows: its `workdir` (or
/// a fresh empty folder when none), the `view`, and the `secret` folders.
pub fn check_arguments(
    command: &[String],
    cwd: &Path,
    workdir: Option<&Path>,
    secret: &[PathBuf],
    view: &SandboxView<'_>,
) -> Vec<HiddenArgument> {
    let mut hidden = Vec::new();
    for word in candidate_words(command) {
        let given = Path::new(&word);
        let host_path = cwd.join(given);
        let Ok(canonical) = std::fs::canonicalize(&host_path) else {
            continue; // names nothing here: an output file, a word, not ours to judge
        };
        let problem = |problem| HiddenArgument {
            argument: word.clone(),
            host_path: host_path.clone(),
            problem,
        };
        if let Some(dir) = secret.iter().find(|s| canonical.starts_with(s)) {
            hidden.push(problem(ArgumentProblem::Secret(dir.clone())));
            continue;
        }
        if given.is_relative() {
            match workdir {
                None => hidden.push(problem(ArgumentProblem::RelativeWithoutWorkdir {
                    cwd: cwd.to_path_buf(),
                })),
                Some(w) if !w.join(given).exists() => {
                    hidden.push(problem(ArgumentProblem::NotInWorkdir {
                        workdir: w.to_path_buf(),
                        cwd: cwd.to_path_buf(),
                    }))
                }
                Some(w) => {
                    if let Some(found) = unseen_folder(&w.join(given), view) {
                        hidden.push(problem(found));
                    }
                }
            }
            continue;
        }
        if let Some(found) = unseen_folder(given, view) {
            hidden.push(problem(found));
        }
    }
    hidden
}

/// Why `path` (absolute), or the file it leads to, is not shown, and the folder to expose.
fn unseen_folder(path: &Path, view: &SandboxView<'_>) -> Option<ArgumentProblem> {
    let canonical = std::fs::canonicalize(path).ok()?;
    let unseen = view.unseen(path).or_else(|| view.unseen(&canonical))?;
    let folder = if canonical.is_dir() {
        canonical
    } else {
        canonical.parent()?.to_path_buf()
    };
    Some(ArgumentProblem::Unseen { unseen, folder })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &[&str]) -> Vec<String> {
        candidate_words(&command.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_words_that_may_be_paths_include_a_shell_lines() {
        assert_eq!(
            words(&["python", "-u", "agent.py", "--config=c.toml", "--fast"]),
            ["agent.py", "c.toml"]
        );
        assert_eq!(
            words(&["/bin/sh", "-c", "venv/bin/python 'agent.py' -v"]),
            ["venv/bin/python", "agent.py"]
        );
    }

    #[test]
    fn a_script_beside_the_harness_needs_a_workdir_and_a_hidden_one_an_expose() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let cwd = root.join("project");
        let home = root.join("home");
        let state = root.join("state");
        for dir in [&cwd, &home.join("data"), &state] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(cwd.join("agent.py"), "").unwrap();
        std::fs::write(home.join("data/weights.bin"), "").unwrap();
        std::fs::write(state.join("evaluator.key"), "").unwrap();
        let masked = [home.clone()];
        // The temporary folder is in /tmp, which the sandbox replaces: `bin` stands for a
        // visible folder.
        let bound = [root.join("bin")];
        let view = SandboxView {
            masked: &masked,
            bound: &bound,
        };
        let command: Vec<String> = [
            "python3".to_string(),
            "agent.py".into(),
            home.join("data/weights.bin").display().to_string(),
            state.join("evaluator.key").display().to_string(),
            "out.json".into(),
        ]
        .into();
        let found = check_arguments(&command, &cwd, None, std::slice::from_ref(&state), &view);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(
            found[0].suggestion(),
            Some(format!("--workdir {}", cwd.display()))
        );
        assert_eq!(
            found[1].suggestion(),
            Some(format!("--expose {}", home.join("data").display()))
        );
        assert!(found[1].to_string().contains("hides"), "{}", found[1]);
        assert_eq!(found[2].problem, ArgumentProblem::Secret(state.clone()));
        assert_eq!(found[2].suggestion(), None);

        // With the working directory and the folder shown, nothing is left but the state dir.
        let bound = [cwd.clone(), home.join("data")];
        let view = SandboxView {
            masked: &masked,
            bound: &bound,
        };
        let found = check_arguments(
            &command,
            &cwd,
            Some(&cwd),
            std::slice::from_ref(&state),
            &view,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        // Another working directory does not hold the script.
        let elsewhere = root.join("bin");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let found = check_arguments(&command[..2], &cwd, Some(&elsewhere), &[], &view);
        assert!(
            matches!(found[0].problem, ArgumentProblem::NotInWorkdir { .. }),
            "{found:?}"
        );
    }
}
