//! The sequence of [`super::build`], run against a recording double: which calls it makes, in
//! which order, without privileges.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use nix::mount::MsFlags;

use super::binds::{Binding, Kind, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use super::syscalls::{EntryKind, HostEntry};
use super::{Syscalls, build};
use crate::limits::{AgentLimits, Enforcement};
use crate::setup::{Failure, Setup};
use crate::{FileId, LaunchSpec, Network, PinnedPath, UserIds};

const READ_ONLY: u64 = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
const WRITABLE: u64 = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

/// One call the sequence made.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    Mount {
        source: Option<PathBuf>,
        target: PathBuf,
        fstype: Option<String>,
        flags: MsFlags,
        data: Option<String>,
    },
    SetAttributes(PathBuf, u64),
    PivotRoot(PathBuf, PathBuf),
    Detach(PathBuf),
    Chdir(PathBuf),
    OpenRoots,
    BindPinned {
        what: String,
        host: PathBuf,
        at: PathBuf,
        kind: Kind,
        attributes: u64,
        may_create: bool,
    },
    CloseRoots,
    CreateDir(PathBuf),
    SetMode(PathBuf, u32),
    CreateFile(PathBuf),
    Symlink(PathBuf, PathBuf),
    Chown(PathBuf, UserIds),
    CheckHiddenInside(PathBuf),
}

/// A machine that answers from what the test put in it and writes every call down.
#[derive(Default)]
struct Recorder {
    calls: Vec<Call>,
    /// The host's top-level entries.
    host_root: Vec<HostEntry>,
    /// Links of the host, and where they lead.
    links: BTreeMap<PathBuf, PathBuf>,
    /// Host files that exist (its devices).
    host_files: BTreeSet<PathBuf>,
    /// Folders, besides those the sequence creates.
    folders: BTreeSet<PathBuf>,
    /// What the host's mount table says of the hidden folders.
    hidden_visible_at: Vec<PathBuf>,
    /// A folder that holds a hidden one.
    holds_hidden: Option<PathBuf>,
    /// Sandbox paths something is at in the new root.
    in_new_root: BTreeSet<PathBuf>,
}

impl Syscalls for Recorder {
    type Roots = ();

    fn mount(
        &mut self,
        source: Option<&Path>,
        target: &Path,
        fstype: Option<&str>,
        flags: MsFlags,
        data: Option<&str>,
    ) -> nix::Result<()> {
        self.calls.push(Call::Mount {
            source: source.map(Path::to_path_buf),
            target: target.to_path_buf(),
            fstype: fstype.map(str::to_string),
            flags,
            data: data.map(str::to_string),
        });
        Ok(())
    }

    fn set_attributes_recursively(&mut self, path: &Path, attributes: u64) -> nix::Result<()> {
        self.calls
            .push(Call::SetAttributes(path.to_path_buf(), attributes));
        Ok(())
    }

    fn pivot_root(&mut self, new_root: &Path, put_old: &Path) -> nix::Result<()> {
        self.calls.push(Call::PivotRoot(
            new_root.to_path_buf(),
            put_old.to_path_buf(),
        ));
        Ok(())
    }

    fn detach(&mut self, target: &Path) -> nix::Result<()> {
        self.calls.push(Call::Detach(target.to_path_buf()));
        Ok(())
    }

    fn chdir(&mut self, path: &Path) -> nix::Result<()> {
        self.calls.push(Call::Chdir(path.to_path_buf()));
        Ok(())
    }

    fn open_roots(&mut self, _host: &Path, _new: &Path) -> Result<(), String> {
        self.calls.push(Call::OpenRoots);
        Ok(())
    }

    fn bind_pinned(&mut self, _: &(), binding: &Binding<'_>) -> Result<(), String> {
        self.calls.push(Call::BindPinned {
            what: binding.what.to_string(),
            host: binding.pinned.path.clone(),
            at: binding.at.to_path_buf(),
            kind: binding.kind,
            attributes: binding.attributes,
            may_create: binding.may_create,
        });
        Ok(())
    }

    /// Something is at `at` in the new root if the test put it there, or if a folder bound
    /// earlier in the sequence holds it (a host folder's files come with its bind).
    fn exists_in_new_root(&mut self, _: &(), at: &Path, _what: &str) -> Result<bool, String> {
        let under_a_bound_folder = self.calls.iter().any(|c| {
            matches!(c, Call::BindPinned { at: folder, kind: Kind::Folder, .. }
                if at.starts_with(folder) && at != folder)
        });
        Ok(self.in_new_root.contains(at) || under_a_bound_folder)
    }

    fn close_roots(&mut self, (): ()) {
        self.calls.push(Call::CloseRoots);
    }

    fn create_dir(&mut self, path: &Path) -> io::Result<()> {
        self.folders.insert(path.to_path_buf());
        self.calls.push(Call::CreateDir(path.to_path_buf()));
        Ok(())
    }

    fn set_mode(&mut self, path: &Path, mode: u32) -> io::Result<()> {
        self.calls.push(Call::SetMode(path.to_path_buf(), mode));
        Ok(())
    }

    fn create_file(&mut self, path: &Path) -> io::Result<()> {
        self.calls.push(Call::CreateFile(path.to_path_buf()));
        Ok(())
    }

    fn symlink(&mut self, target: &Path, link: &Path) -> io::Result<()> {
        self.calls
            .push(Call::Symlink(target.to_path_buf(), link.to_path_buf()));
        Ok(())
    }

    fn chown(&mut self, path: &Path, owner: UserIds) -> io::Result<()> {
        self.calls.push(Call::Chown(path.to_path_buf(), owner));
        Ok(())
    }

    fn read_host_root(&mut self) -> Setup<Vec<HostEntry>> {
        Ok(self.host_root.clone())
    }

    fn read_link(&mut self, path: &Path) -> io::Result<PathBuf> {
        self.links
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))
    }

    fn exists(&mut self, path: &Path) -> bool {
        self.host_files.contains(path)
    }

    fn is_folder(&mut self, path: &Path) -> bool {
        self.folders.contains(path)
    }

    fn hidden_folder_paths(&mut self, _hidden: &[PathBuf]) -> Setup<Vec<PathBuf>> {
        Ok(self.hidden_visible_at.clone())
    }

    fn refuse_hidden_inside(&mut self, _hidden: &[PathBuf], dir: &Path, what: &str) -> Setup<()> {
        self.calls.push(Call::CheckHiddenInside(dir.to_path_buf()));
        if self.holds_hidden.as_deref() == Some(dir) {
            return Err(Failure(format!(
                "{what} {} holds a hidden folder",
                dir.display()
            )));
        }
        Ok(())
    }
}

fn p(path: &str) -> PathBuf {
    PathBuf::from(path)
}

fn entry(name: &str, kind: EntryKind) -> HostEntry {
    HostEntry {
        name: name.into(),
        kind,
    }
}

/// A host like most: folders, a link, a file and the folders the sandbox replaces at its
/// top level; some of the devices the sandbox binds; `/home` hidden and present.
fn host() -> Recorder {
    let mut host = Recorder {
        host_root: vec![
            entry("usr", EntryKind::Folder),
            entry("bin", EntryKind::Link),
            entry("etc", EntryKind::Folder),
            entry("home", EntryKind::Folder),
            entry("vmlinuz", EntryKind::File),
            entry("proc", EntryKind::Folder),
            entry("dev", EntryKind::Folder),
            entry("tmp", EntryKind::Folder),
            entry("run", EntryKind::Folder),
        ],
        hidden_visible_at: vec![p("/home")],
        ..Recorder::default()
    };
    host.links.insert(p("/oldroot/bin"), p("usr/bin"));
    for device in ["null", "zero", "urandom"] {
        host.host_files
            .insert(Path::new("/oldroot/dev").join(device));
    }
    host
}

fn pinned(path: &str, inode: u64) -> PinnedPath {
    PinnedPath {
        path: p(path),
        id: FileId { device: 1, inode },
    }
}

/// A launch spec as the harness makes one, for an agent `/bin/sh` with nothing but its socket.
fn spec() -> LaunchSpec {
    LaunchSpec {
        program: p("/bin/sh"),
        program_file: None,
        args: vec!["/bin/sh".into()],
        env: Vec::new(),
        workdir: None,
        exposed: Vec::new(),
        agent_socket: pinned("/srv/state/agents/r.sock", 1),
        submission_dir: None,
        hidden: vec![p("/home")],
        parent_pid: 1,
        agent_user: Some(UserIds {
            uid: 200_000,
            gid: 200_000,
        }),
        network: Network::None,
        tmp_bytes: 16 << 20,
        limits: AgentLimits {
            memory_bytes: 1 << 30,
            tasks: 64,
            cpu_seconds: Some(60),
            file_bytes: 1 << 20,
            open_files: 64,
            enforcement: Enforcement::Rlimits,
        },
        report_pipe: false,
        probe: false,
    }
}

/// Runs the sequence on `host`; the calls it made, and what it returned.
fn run(mut host: Recorder, spec: &LaunchSpec) -> (Vec<Call>, Result<PathBuf, String>) {
    let built = build(&mut host, spec).map_err(|Failure(why)| why);
    (host.calls, built)
}

fn built(host: Recorder, spec: &LaunchSpec) -> (Vec<Call>, PathBuf) {
    let (calls, built) = run(host, spec);
    (calls, built.unwrap())
}

fn tmpfs_at(target: &str) -> impl Fn(&Call) -> bool + '_ {
    move |call| {
        matches!(call, Call::Mount { fstype: Some(t), target: at, .. }
            if t == "tmpfs" && at == Path::new(target))
    }
}

fn bound_at(at: &str) -> impl Fn(&Call) -> bool + '_ {
    move |call| matches!(call, Call::BindPinned { at: a, .. } if a == Path::new(at))
}

/// Where the first call `is` is in `calls`; fails the test if none is.
fn position(calls: &[Call], what: &str, is: impl Fn(&Call) -> bool) -> usize {
    calls
        .iter()
        .position(is)
        .unwrap_or_else(|| panic!("no call {what} in {calls:#?}"))
}

fn bind_mount(source: &str, target: &str) -> Call {
    Call::Mount {
        source: Some(p(source)),
        target: p(target),
        fstype: None,
        flags: MsFlags::MS_BIND | MsFlags::MS_REC,
        data: None,
    }
}

#[test]
fn the_sequence_pivots_into_a_staging_root_first_and_into_the_new_root_last() {
    let (calls, _) = built(host(), &spec());
    let staging = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    let tmpfs = |target: &str, flags| Call::Mount {
        source: Some(p("tmpfs")),
        target: p(target),
        fstype: Some("tmpfs".into()),
        flags,
        data: Some("mode=0755,size=1m".into()),
    };
    assert_eq!(
        calls[..10],
        [
            Call::Mount {
                source: None,
                target: p("/"),
                fstype: None,
                flags: MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                data: None,
            },
            tmpfs("/tmp", staging),
            Call::CreateDir(p("/tmp/newroot")),
            Call::SetMode(p("/tmp/newroot"), 0o755),
            Call::CreateDir(p("/tmp/oldroot")),
            Call::SetMode(p("/tmp/oldroot"), 0o755),
            tmpfs("/tmp/newroot", MsFlags::MS_NOSUID),
            Call::PivotRoot(p("/tmp"), p("/tmp/oldroot")),
            Call::Chdir(p("/")),
            Call::OpenRoots,
        ]
    );
    // The host's root leaves after the descriptors close; the root becomes read-only last.
    let closed = position(&calls, "close", |c| *c == Call::CloseRoots);
    assert!(closed < calls.len() - 6);
    assert_eq!(
        calls[calls.len() - 6..],
        [
            Call::Detach(p("/oldroot")),
            Call::Chdir(p("/newroot")),
            Call::PivotRoot(p("."), p(".")),
            Call::Detach(p(".")),
            Call::Chdir(p("/")),
            Call::Mount {
                source: None,
                target: p("/"),
                fstype: None,
                flags: MsFlags::MS_REMOUNT
                    | MsFlags::MS_BIND
                    | MsFlags::MS_RDONLY
                    | MsFlags::MS_NOSUID,
                data: None,
            },
        ]
    );
    assert_eq!(
        calls
            .iter()
            .filter(|c| matches!(c, Call::PivotRoot(..)))
            .count(),
        2
    );
}

#[test]
fn the_host_s_top_level_is_bound_read_only_but_for_the_folders_the_sandbox_replaces() {
    let (calls, _) = built(host(), &spec());
    for (name, created) in [
        ("usr", Call::CreateDir(p("/newroot/usr"))),
        ("etc", Call::CreateDir(p("/newroot/etc"))),
        ("vmlinuz", Call::CreateFile(p("/newroot/vmlinuz"))),
    ] {
        let target = format!("/newroot/{name}");
        let at = position(&calls, &target, |c| *c == created);
        let bind = bind_mount(&format!("/oldroot/{name}"), &target);
        let read_only = Call::SetAttributes(p(&target), READ_ONLY);
        let rest = &calls[at..];
        let bound = position(rest, "bind", |c| *c == bind);
        assert_eq!(rest[bound + 1], read_only, "{name} is not made read-only");
    }
    // A link stays a link, to where it led.
    assert!(calls.contains(&Call::Symlink(p("usr/bin"), p("/newroot/bin"))));
    for name in ["bin", "proc", "dev", "tmp", "run"] {
        let source = p(&format!("/oldroot/{name}"));
        assert!(
            !calls
                .iter()
                .any(|c| matches!(c, Call::Mount { source: Some(s), .. } if *s == source)),
            "the host's /{name} is bound"
        );
    }
}

#[test]
fn the_sandbox_has_a_proc_dev_tmp_and_run_of_its_own() {
    let (calls, _) = built(host(), &spec());
    let proc = position(&calls, "proc", |c| {
        matches!(c, Call::Mount { fstype: Some(t), target, flags, .. }
            if t == "proc" && *target == p("/newroot/proc") && flags.contains(MsFlags::MS_NOEXEC))
    });
    let dev = position(&calls, "/dev", tmpfs_at("/newroot/dev"));
    position(&calls, "/dev/shm", tmpfs_at("/newroot/dev/shm"));
    let tmp = position(&calls, "/tmp", tmpfs_at("/newroot/tmp"));
    let run = position(&calls, "/run", tmpfs_at("/newroot/run"));
    assert!(proc < dev && dev < tmp);
    // The host's top level is bound before any of these: none of them covers a host bind.
    let usr = position(&calls, "/usr", |c| {
        *c == bind_mount("/oldroot/usr", "/newroot/usr")
    });
    assert!(usr < proc, "the host's top level is bound after /proc");
    // Both come before anything of the host is bound beneath them (the agent socket in /run,
    // a program or a working directory in /tmp), which a later tmpfs would cover.
    let first_bind = position(&calls, "a bind", |c| matches!(c, Call::BindPinned { .. }));
    assert!(
        tmp < first_bind && run < first_bind,
        "/tmp or /run covers a bind"
    );
    let Call::Mount { data, .. } = &calls[tmp] else {
        unreachable!()
    };
    assert_eq!(data.as_deref(), Some("mode=1777,size=16777216"));
    // The host's devices that exist, and only those.
    for device in ["null", "zero", "urandom"] {
        let target = format!("/newroot/dev/{device}");
        let bind = bind_mount(&format!("/oldroot/dev/{device}"), &target);
        assert!(position(&calls, &target, |c| *c == bind) > dev);
    }
    assert!(
        !calls
            .iter()
            .any(|c| matches!(c, Call::Mount { target, .. } if *target == p("/newroot/dev/full")))
    );
    // HOME and the default working directory are the agent's own, closed to others.
    let agent = spec().agent_user.unwrap();
    for dir in ["/newroot/tmp/home", "/newroot/tmp/work"] {
        let at = position(&calls, dir, |c| *c == Call::SetMode(p(dir), 0o700));
        assert!(at > tmp);
        assert!(calls.contains(&Call::Chown(p(dir), agent)));
    }
    // Not root: nothing is handed to another user.
    let mut spec = spec();
    spec.agent_user = None;
    let (calls, _) = built(host(), &spec);
    assert!(!calls.iter().any(|c| matches!(c, Call::Chown(..))));
}

#[test]
fn hidden_folders_are_masked_before_anything_is_bound_and_made_read_only_after() {
    let mut host = host();
    // The state dir, a second mount of it, a folder inside it, and one in the sandbox's /tmp.
    host.hidden_visible_at = vec![
        p("/srv/state"),
        p("/home"),
        p("/mnt/again"),
        p("/srv/state/inside"),
        p("/tmp/gone"),
    ];
    host.folders
        .extend([p("/newroot/srv/state"), p("/newroot/mnt/again")]);
    let mut spec = spec();
    spec.hidden = vec![p("/home"), p("/srv/state")];
    spec.workdir = Some(pinned("/home/u/work", 2));
    let (calls, workdir) = built(host, &spec);
    assert_eq!(workdir, p("/home/u/work"));
    let checked = position(&calls, "the check", |c| {
        *c == Call::CheckHiddenInside(p("/home/u/work"))
    });
    let first_bind = position(&calls, "a bind", |c| matches!(c, Call::BindPinned { .. }));
    let masks = ["/home", "/mnt/again", "/srv/state"];
    let mut masked = Vec::new();
    for mask in masks {
        let at = position(&calls, mask, tmpfs_at(&format!("/newroot{mask}")));
        assert!(checked < at && at < first_bind, "{mask} is masked too late");
        masked.push(at);
    }
    assert!(masked.is_sorted(), "parents are not masked first");
    for not_masked in ["/newroot/srv/state/inside", "/newroot/tmp/gone"] {
        assert!(!calls.iter().any(tmpfs_at(not_masked)), "{not_masked}");
    }
    // Each mask turns read-only once every bind is made and the descriptors are closed, before
    // the host's root leaves.
    let closed = position(&calls, "close", |c| *c == Call::CloseRoots);
    let detached = position(&calls, "detach", |c| *c == Call::Detach(p("/oldroot")));
    for mask in masks {
        let at = position(&calls, mask, |c| {
            matches!(c, Call::Mount { target, flags, .. }
                if *target == p(&format!("/newroot{mask}"))
                    && flags.contains(MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY))
        });
        assert!(
            closed < at && at < detached,
            "{mask} is made read-only out of order"
        );
    }
    // The working directory, inside a mask, gets a mount point there.
    let Call::BindPinned { may_create, .. } =
        &calls[position(&calls, "workdir", bound_at("/home/u/work"))]
    else {
        unreachable!()
    };
    assert!(may_create);
}

#[test]
fn a_hidden_folder_that_is_no_folder_in_the_sandbox_s_view_fails_the_launch() {
    let mut host = host();
    host.hidden_visible_at = vec![p("/srv/state")];
    let (calls, built) = run(host, &spec());
    let why = built.unwrap_err();
    assert!(why.contains("cannot hide /srv/state"), "{why}");
    assert!(!calls.iter().any(|c| matches!(c, Call::BindPinned { .. })));
}

#[test]
fn a_folder_holding_a_hidden_one_is_refused_before_anything_is_masked_or_bound() {
    for holder in ["/srv/work", "/opt/py"] {
        let mut host = host();
        host.holds_hidden = Some(p(holder));
        let mut spec = spec();
        spec.workdir = Some(pinned("/srv/work", 2));
        spec.exposed = vec![pinned("/opt/py", 3)];
        let (calls, built) = run(host, &spec);
        assert!(built.unwrap_err().contains(holder));
        assert!(!calls.iter().any(tmpfs_at("/newroot/home")), "{holder}");
        assert!(!calls.iter().any(|c| matches!(c, Call::BindPinned { .. })));
    }
}

#[test]
fn the_agent_socket_and_the_submission_folder_are_bound_where_the_agent_finds_them() {
    let mut spec = spec();
    spec.submission_dir = Some(pinned("/srv/state/submissions/r", 4));
    let (calls, _) = built(host(), &spec);
    let socket = position(&calls, "socket", bound_at("/run/ale/agent.sock"));
    let submission = position(&calls, "submission", bound_at("/run/ale/submission"));
    assert!(socket < submission);
    assert_eq!(
        calls[socket],
        Call::BindPinned {
            what: "the agent socket".into(),
            host: p("/srv/state/agents/r.sock"),
            at: p("/run/ale/agent.sock"),
            kind: Kind::File,
            attributes: 0,
            may_create: true,
        }
    );
    // The one host folder the agent may write to.
    assert_eq!(
        calls[submission],
        Call::BindPinned {
            what: "the submission folder".into(),
            host: p("/srv/state/submissions/r"),
            at: p("/run/ale/submission"),
            kind: Kind::Folder,
            attributes: WRITABLE,
            may_create: true,
        }
    );
    let (calls, _) = built(host(), &self::spec());
    assert!(!calls.iter().any(bound_at("/run/ale/submission")));
}

#[test]
fn exposed_folders_are_read_only_and_the_working_directory_writable_outer_ones_first() {
    let mut spec = spec();
    spec.exposed = vec![pinned("/opt/py/lib/site", 5), pinned("/opt/py", 6)];
    spec.workdir = Some(pinned("/opt/py/work", 7));
    let (calls, workdir) = built(host(), &spec);
    assert_eq!(workdir, p("/opt/py/work"));
    let folders: Vec<(&Path, u64, bool)> = calls
        .iter()
        .filter_map(|c| match c {
            Call::BindPinned {
                at,
                kind: Kind::Folder,
                attributes,
                may_create,
                ..
            } => Some((at.as_path(), *attributes, *may_create)),
            _ => None,
        })
        .collect();
    assert_eq!(
        folders,
        [
            (Path::new("/opt/py"), READ_ONLY, false),
            (Path::new("/opt/py/work"), WRITABLE, false),
            (Path::new("/opt/py/lib/site"), READ_ONLY, false),
        ]
    );
    // Without one, the agent starts in its own.
    let (_, workdir) = built(host(), &self::spec());
    assert_eq!(workdir, p("/tmp/work"));
}

#[test]
fn a_program_where_the_sandbox_has_folders_of_its_own_is_bound_there_read_only() {
    let mut spec = spec();
    spec.program = p("/tmp/agent");
    spec.program_file = Some(pinned("/srv/agents/agent", 8));
    let (calls, _) = built(host(), &spec);
    let bound = &calls[position(&calls, "program", bound_at("/tmp/agent"))];
    assert_eq!(
        *bound,
        Call::BindPinned {
            what: "the agent program".into(),
            host: p("/srv/agents/agent"),
            at: p("/tmp/agent"),
            kind: Kind::File,
            attributes: READ_ONLY,
            may_create: true,
        }
    );
    // There already (inside a bound folder): not bound again.
    let mut host = host();
    host.in_new_root.insert(p("/tmp/agent"));
    let (calls, _) = built(host, &spec);
    assert!(!calls.iter().any(bound_at("/tmp/agent")));
    // Inside the working directory, bound before it: there already, only if the folders are
    // bound first (the program's check asks the new root what the folders brought).
    let mut in_workdir = spec.clone();
    in_workdir.workdir = Some(pinned("/tmp/work", 9));
    in_workdir.program = p("/tmp/work/agent");
    let (calls, _) = built(self::host(), &in_workdir);
    position(&calls, "the working directory", bound_at("/tmp/work"));
    assert!(
        !calls.iter().any(bound_at("/tmp/work/agent")),
        "bound twice"
    );
    // In a host folder, where nothing may be created: not bound.
    spec.program = p("/usr/local/bin/agent");
    let (calls, _) = built(self::host(), &spec);
    assert!(!calls.iter().any(bound_at("/usr/local/bin/agent")));
}
