//! The agent program: the path it is started by in the sandbox, the file that path leads to,
//! and what the sandbox must show for it to run: a self-contained program inside a hidden
//! folder is bound in on its own, but a Python interpreter needs its installation (and a venv's
//! interpreter its venv), which only `--expose` shows.

use std::fmt;
use std::path::{Path, PathBuf};

use super::{PRIVATE_TOP_LEVEL, SandboxError};

/// The agent program of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentProgram {
    /// A bare name, looked up in the agent's `PATH` inside the sandbox.
    OnPath(PathBuf),
    /// A program given with a path.
    File(ProgramFile),
}

/// A program given with a path, both as it is started and as what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramFile {
    /// The path the agent is started by: its folder's canonical path (so no `..` and no link
    /// in any folder of it) and its own name, a link left as it is. Python finds a venv from
    /// the path it was started by, and a venv's `bin/python` is a link to its base interpreter.
    pub invoked: PathBuf,
    /// The file `invoked` leads to, every link resolved: what the safety checks look at.
    pub canonical: PathBuf,
}

/// Resolves a program given with a path (`./agent`, `venv/bin/python`) against the harness's
/// working directory, so that it names the same file inside the sandbox; a bare name is left
/// for the agent's `PATH`.
pub fn resolve_program(program: &str) -> Result<AgentProgram, SandboxError> {
    if !program.contains('/') {
        return Ok(AgentProgram::OnPath(PathBuf::from(program)));
    }
    ProgramFile::resolve(Path::new(program))
        .map(AgentProgram::File)
        .map_err(|problem| SandboxError::Program {
            path: PathBuf::from(program),
            problem,
        })
}

impl ProgramFile {
    /// `path` (relative to the working directory, or absolute) with its folder resolved, and
    /// the file it leads to.
    fn resolve(path: &Path) -> Result<ProgramFile, String> {
        let name = path
            .file_name()
            .ok_or_else(|| "expected the path of a program file".to_string())?;
        let folder = match path.parent() {
            Some(folder) if !folder.as_os_str().is_empty() => folder,
            _ => Path::new("."),
        };
        let folder = std::fs::canonicalize(folder).map_err(|e| e.to_string())?;
        let invoked = folder.join(name);
        let canonical = std::fs::canonicalize(&invoked).map_err(|e| e.to_string())?;
        if !canonical.is_file() {
            return Err(format!("{} is not a file", canonical.display()));
        }
        Ok(ProgramFile { invoked, canonical })
    }

    /// The interpreter a script names on its `#!` line, when that is an absolute path.
    fn script_interpreter(&self) -> Option<PathBuf> {
        use std::io::Read;
        let mut head = [0u8; 256];
        let mut file = std::fs::File::open(&self.canonical).ok()?;
        let read = file.read(&mut head).ok()?;
        let line = head[..read].strip_prefix(b"#!")?;
        let line = line.split(|&b| b == b'\n').next()?;
        let line = std::str::from_utf8(line).ok()?;
        let interpreter = line.split_whitespace().next()?;
        interpreter
            .starts_with('/')
            .then(|| PathBuf::from(interpreter))
    }
}

/// Why the sandbox does not show a host path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unseen {
    /// It is inside a folder the sandbox masks (a home).
    Hidden(PathBuf),
    /// It is inside one of the sandbox's own top-level folders (`/tmp`, `/run`, …).
    Replaced(PathBuf),
}

impl fmt::Display for Unseen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unseen::Hidden(folder) => write!(
                f,
                "inside {}, which the sandbox hides from the agent",
                folder.display()
            ),
            Unseen::Replaced(folder) => write!(
                f,
                "inside {}, which the sandbox replaces with the agent's own",
                folder.display()
            ),
        }
    }
}

/// What of the host's filesystem the sandbox shows: all of it, read-only, but for the masked
/// folders and its own top-level folders, in which only the bound folders appear.
#[derive(Debug, Clone, Copy)]
pub struct SandboxView<'a> {
    /// The folders masked (canonical).
    pub masked: &'a [PathBuf],
    /// The folders bound in at their own paths (canonical): the working directory and the
    /// exposed folders.
    pub bound: &'a [PathBuf],
}

impl SandboxView<'_> {
    /// Why `path` (canonical) is not visible in the sandbox, if it is not.
    pub fn unseen(&self, path: &Path) -> Option<Unseen> {
        if self.bound.iter().any(|b| path.starts_with(b)) {
            return None;
        }
        if let Some(folder) = self.masked.iter().find(|m| path.starts_with(m)) {
            return Some(Unseen::Hidden(folder.clone()));
        }
        PRIVATE_TOP_LEVEL
            .iter()
            .map(|top| Path::new("/").join(top))
            .find(|top| path.starts_with(top))
            .map(Unseen::Replaced)
    }
}

/// One folder a program needs that the sandbox does not show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingFolder {
    /// What it is to the program ("the venv's base installation").
    pub what: String,
    pub path: PathBuf,
    pub unseen: Unseen,
}

/// A program that cannot run in the sandbox unless folders are exposed to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenProgram {
    /// The program as started.
    pub program: PathBuf,
    /// The file it leads to.
    pub resolved: PathBuf,
    /// What it needs, outer folders only.
    pub missing: Vec<MissingFolder>,
}

impl HiddenProgram {
    /// The `ale harness run` arguments that make the program runnable.
    pub fn expose_args(&self) -> String {
        self.missing
            .iter()
            .map(|m| format!("--expose {}", m.path.display()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl fmt::Display for HiddenProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the agent program {}", self.program.display())?;
        if self.resolved != self.program {
            write!(f, " (which is {})", self.resolved.display())?;
        }
        write!(f, " cannot run in the sandbox: ")?;
        let missing: Vec<String> = self
            .missing
            .iter()
            .map(|m| format!("{} {} is {}", m.what, m.path.display(), m.unseen))
            .collect();
        write!(f, "{}", missing.join("; "))?;
        let them = if self.missing.len() == 1 {
            "it"
        } else {
            "them"
        };
        write!(
            f,
            ". To let the agent see {them}, read-only, add `{}` to `ale harness run`",
            self.expose_args()
        )
    }
}

/// A Python venv: `pyvenv.cfg` in the folder above the program's.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PythonVenv {
    dir: PathBuf,
    /// The base installation: the folder above the `home =` folder `pyvenv.cfg` names
    /// (canonical), if that exists.
    base: Option<PathBuf>,
}

impl PythonVenv {
    fn of(program: &Path) -> Option<PythonVenv> {
        let dir = program.parent()?.parent()?;
        let config = std::fs::read_to_string(dir.join("pyvenv.cfg")).ok()?;
        let home = config.lines().find_map(|line| {
            let (key, value) = line.split_once('=')?;
            key.trim()
                .eq_ignore_ascii_case("home")
                .then(|| PathBuf::from(value.trim()))
        });
        let base = home
            .and_then(|home| std::fs::canonicalize(home).ok())
            .and_then(|home| home.parent().map(Path::to_path_buf));
        Some(PythonVenv {
            dir: dir.to_path_buf(),
            base,
        })
    }
}

/// The prefix of the Python installation `interpreter` (canonical) is part of:
/// `<prefix>/bin/<interpreter>` with a standard library in `<prefix>/lib/pythonX.Y` (or
/// `lib64`). pyenv, conda and uv install Python so.
fn python_installation(interpreter: &Path) -> Option<PathBuf> {
    let bin = interpreter.parent()?;
    if bin.file_name()? != "bin" {
        return None;
    }
    let prefix = bin.parent()?;
    let has_stdlib = |lib: &str| {
        std::fs::read_dir(prefix.join(lib)).is_ok_and(|entries| {
            entries.flatten().any(|entry| {
                entry.file_name().to_string_lossy().starts_with("python")
                    && entry.path().join("os.py").is_file()
            })
        })
    };
    (has_stdlib("lib") || has_stdlib("lib64")).then(|| prefix.to_path_buf())
}

/// A folder a program needs visible, and what it is to the program ("the venv").
struct NeededFolder {
    what: String,
    path: PathBuf,
}

impl NeededFolder {
    fn new(what: impl Into<String>, path: PathBuf) -> NeededFolder {
        NeededFolder {
            what: what.into(),
            path,
        }
    }
}

/// The folders the Python interpreter `file` needs besides itself (a venv's interpreter: its
/// venv and base installation); none for a program that is not a Python interpreter.
fn python_folders(file: &ProgramFile) -> Vec<NeededFolder> {
    let mut needed = Vec::new();
    let installation = python_installation(&file.canonical);
    if let Some(venv) = PythonVenv::of(&file.invoked) {
        needed.push(NeededFolder::new("the venv", venv.dir.clone()));
        let base_holds_interpreter = venv
            .base
            .as_ref()
            .is_some_and(|base| file.canonical.starts_with(base));
        if let Some(base) = venv.base {
            needed.push(NeededFolder::new("the venv's base installation", base));
        }
        if !base_holds_interpreter {
            let interpreter =
                installation.or_else(|| file.canonical.parent().map(Path::to_path_buf));
            needed.extend(
                interpreter
                    .map(|dir| NeededFolder::new("the venv's interpreter's installation", dir)),
            );
        }
    } else if let Some(prefix) = installation {
        needed.push(NeededFolder::new("the Python installation", prefix));
    }
    needed
}

/// Refuses a program (or interpreter) that leads into a `secret` folder.
fn refuse_secret(file: &ProgramFile, secret: &[PathBuf]) -> Result<(), SandboxError> {
    match secret
        .iter()
        .find(|s| file.invoked.starts_with(s) || file.canonical.starts_with(s))
    {
        Some(s) => Err(SandboxError::Program {
            path: file.invoked.clone(),
            problem: format!("leads into {}, which the agent must not see", s.display()),
        }),
        None => Ok(()),
    }
}

/// Decides how the sandbox shows `file`: `Ok(None)` when it (and what it needs) is visible as
/// it is; `Ok(Some(file))`, the file to bind in on its own at the path it is started by, for a
/// self-contained program started by a path the sandbox does not show; an error naming the
/// `--expose` arguments for a Python interpreter (or a venv's, or a script's interpreter) that
/// needs folders the sandbox does not show, and for a link the sandbox shows to a file it does
/// not. A program leading into a `secret` folder (the state dir) is refused outright.
pub fn program_binding(
    file: &ProgramFile,
    secret: &[PathBuf],
    view: &SandboxView<'_>,
) -> Result<Option<PathBuf>, SandboxError> {
    refuse_secret(file, secret)?;
    let mut needed = python_folders(file);
    // A script's interpreter is not bound on its own: it is started by the path the script
    // names, which must be visible, and so must what it needs.
    if let Some(interpreter) = file
        .script_interpreter()
        .and_then(|path| ProgramFile::resolve(&path).ok())
    {
        refuse_secret(&interpreter, secret)?;
        let named = interpreter.invoked.display().to_string();
        let its_own = python_folders(&interpreter);
        for path in [&interpreter.invoked, &interpreter.canonical] {
            if !its_own.iter().any(|n| path.starts_with(&n.path)) {
                needed.extend(path.parent().map(|dir| {
                    NeededFolder::new(format!("the folder of its interpreter {named}"), dir.into())
                }));
            }
        }
        needed.extend(
            its_own.into_iter().map(|n| {
                NeededFolder::new(format!("{} of its interpreter {named}", n.what), n.path)
            }),
        );
    }
    // A link in a folder the sandbox shows, to a file it does not: binding that file in would
    // let whoever placed the link (an earlier agent, in its working directory, say) pick a
    // hidden file to show. Its folder must be exposed, deliberately.
    if view.unseen(&file.invoked).is_none()
        && !needed.iter().any(|n| file.canonical.starts_with(&n.path))
    {
        needed.extend(
            file.canonical
                .parent()
                .map(|dir| NeededFolder::new("the folder of the file it leads to", dir.into())),
        );
    }
    let mut missing: Vec<MissingFolder> = needed
        .into_iter()
        .filter_map(|n| {
            let unseen = view.unseen(&n.path)?;
            Some(MissingFolder {
                what: n.what,
                path: n.path,
                unseen,
            })
        })
        .collect();
    // An outer folder shows the ones inside it.
    missing.sort_by(|a, b| a.path.cmp(&b.path));
    let mut outer: Vec<MissingFolder> = Vec::new();
    for m in missing {
        if !outer.iter().any(|o| m.path.starts_with(&o.path)) {
            outer.push(m);
        }
    }
    if !outer.is_empty() {
        return Err(SandboxError::ProgramHidden(HiddenProgram {
            program: file.invoked.clone(),
            resolved: file.canonical.clone(),
            missing: outer,
        }));
    }
    Ok(view.unseen(&file.invoked).map(|_| file.canonical.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake Python installation under `prefix`: an interpreter and an `os.py`.
    fn python_at(prefix: &Path) -> PathBuf {
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::create_dir_all(prefix.join("lib/python3.11")).unwrap();
        std::fs::write(prefix.join("lib/python3.11/os.py"), "").unwrap();
        let interpreter = prefix.join("bin/python3.11");
        std::fs::write(&interpreter, "").unwrap();
        interpreter
    }

    fn venv_at(dir: &Path, base: &Path) -> PathBuf {
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(
            dir.join("pyvenv.cfg"),
            format!("home = {}\nversion = 3.11.7\n", base.join("bin").display()),
        )
        .unwrap();
        let python = dir.join("bin/python");
        std::os::unix::fs::symlink(base.join("bin/python3.11"), &python).unwrap();
        python
    }

    fn file_of(program: &Path) -> ProgramFile {
        match resolve_program(program.to_str().unwrap()).unwrap() {
            AgentProgram::File(file) => file,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_program_keeps_the_name_it_was_given_and_its_target_is_resolved() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let base = root.join("home/.pyenv/versions/3.11.7");
        let interpreter = python_at(&base);
        let python = venv_at(&root.join("work/venv"), &base);
        let file = file_of(&root.join("work/venv/bin/../bin/python"));
        assert_eq!(file.invoked, python);
        assert_eq!(file.canonical, interpreter);
        assert_eq!(
            resolve_program("python3").unwrap(),
            AgentProgram::OnPath("python3".into())
        );
        assert!(resolve_program(&format!("{}/..", root.display())).is_err());
        assert!(resolve_program(&format!("{}/missing", root.display())).is_err());
    }

    #[test]
    fn a_venv_whose_base_is_hidden_names_the_expose_that_shows_it() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let home = root.join("home");
        let base = home.join(".pyenv/versions/3.11.7");
        python_at(&base);
        let python = venv_at(&root.join("work/venv"), &base);
        let file = file_of(&python);
        let masked = [home.clone()];
        // The temporary folder is in /tmp, which the sandbox replaces: its `work` folder
        // stands for a visible one.
        let visible = [root.join("work")];
        let view = SandboxView {
            masked: &masked,
            bound: &visible,
        };
        let Err(SandboxError::ProgramHidden(hidden)) = program_binding(&file, &[], &view) else {
            panic!("a hidden base installation was not refused");
        };
        assert_eq!(hidden.expose_args(), format!("--expose {}", base.display()));
        let text = hidden.to_string();
        for part in [
            python.display().to_string(),
            base.join("bin/python3.11").display().to_string(),
            home.display().to_string(),
            format!("--expose {}", base.display()),
        ] {
            assert!(text.contains(&part), "{part} missing from: {text}");
        }
        // Exposed, the venv runs as it is: nothing bound on its own.
        let bound = [root.join("work"), base.clone()];
        let view = SandboxView {
            masked: &masked,
            bound: &bound,
        };
        assert_eq!(program_binding(&file, &[], &view).unwrap(), None);
    }

    #[test]
    fn a_venv_inside_a_hidden_folder_needs_itself_and_its_base_exposed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let home = root.join("home");
        let base = home.join(".pyenv/versions/3.12.1");
        python_at(&base);
        let venv = home.join("venvs/agent");
        let file = file_of(&venv_at(&venv, &base));
        let masked = [home.clone()];
        let view = SandboxView {
            masked: &masked,
            bound: &[],
        };
        let Err(SandboxError::ProgramHidden(hidden)) = program_binding(&file, &[], &view) else {
            panic!("a hidden venv was not refused");
        };
        assert_eq!(
            hidden.expose_args(),
            format!("--expose {} --expose {}", base.display(), venv.display())
        );
        // A venv inside its base installation (pyenv-virtualenv) needs the base alone.
        let inner = base.join("envs/agent");
        let file = file_of(&venv_at(&inner, &base));
        let Err(SandboxError::ProgramHidden(hidden)) = program_binding(&file, &[], &view) else {
            panic!("a hidden venv was not refused");
        };
        assert_eq!(hidden.expose_args(), format!("--expose {}", base.display()));
    }

    #[test]
    fn a_hidden_interpreter_needs_its_installation_and_a_plain_program_is_bound_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let home = root.join("home");
        let prefix = home.join("miniconda3");
        let interpreter = python_at(&prefix);
        let masked = [home.clone()];
        // The temporary folder is in /tmp, which the sandbox replaces: its `bin` folder stands
        // for a visible one.
        let visible = [root.join("bin")];
        let view = SandboxView {
            masked: &masked,
            bound: &visible,
        };
        let Err(SandboxError::ProgramHidden(hidden)) =
            program_binding(&file_of(&interpreter), &[], &view)
        else {
            panic!("a hidden interpreter was not refused");
        };
        assert_eq!(
            hidden.expose_args(),
            format!("--expose {}", prefix.display())
        );

        // A program that is not Python's, started by a path the sandbox does not show (its
        // own, or a link beside it): bound on its own there.
        let agent = home.join("src/agent/target/release/agent");
        std::fs::create_dir_all(agent.parent().unwrap()).unwrap();
        std::fs::write(&agent, "").unwrap();
        let hidden_link = home.join("bin/agent");
        std::fs::create_dir_all(hidden_link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&agent, &hidden_link).unwrap();
        for program in [&agent, &hidden_link] {
            assert_eq!(
                program_binding(&file_of(program), &[], &view).unwrap(),
                Some(agent.clone())
            );
        }
        // A link the sandbox shows, to a file it hides: whoever placed the link would pick
        // what the agent sees, so the file's folder must be exposed.
        let link = root.join("bin/agent");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&agent, &link).unwrap();
        let Err(SandboxError::ProgramHidden(hidden)) = program_binding(&file_of(&link), &[], &view)
        else {
            panic!("a visible link to a hidden file was not refused");
        };
        assert_eq!(
            hidden.expose_args(),
            format!("--expose {}", agent.parent().unwrap().display())
        );
        // A script whose `#!` names a hidden interpreter: the interpreter's installation.
        let script = root.join("bin/agent.py");
        std::fs::write(
            &script,
            format!("#!{} -u\nprint()\n", interpreter.display()),
        )
        .unwrap();
        let Err(SandboxError::ProgramHidden(hidden)) =
            program_binding(&file_of(&script), &[], &view)
        else {
            panic!("a script with a hidden interpreter was not refused");
        };
        assert_eq!(
            hidden.expose_args(),
            format!("--expose {}", prefix.display())
        );
        assert!(
            hidden.to_string().contains("of its interpreter"),
            "{hidden}"
        );
        // The state dir is never bound in, as a program or as an interpreter.
        let state = [home.clone()];
        assert!(matches!(
            program_binding(&file_of(&agent), &state, &view),
            Err(SandboxError::Program { .. })
        ));
        assert!(matches!(
            program_binding(&file_of(&script), &state, &view),
            Err(SandboxError::Program { .. })
        ));

        // Visible as it is: nothing to bind.
        let visible = [root.join("bin"), home.clone()];
        let view = SandboxView {
            masked: &[],
            bound: &visible,
        };
        assert_eq!(program_binding(&file_of(&link), &[], &view).unwrap(), None);
    }
}
