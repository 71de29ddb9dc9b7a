//! A cgroup v2 of the sandbox's own, where the harness can make one: a child of a cgroup
//! delegated to it (see [`delegated_parent`]), with the `memory` and `pids` controllers
//! enabled for its children, holding the launcher and so the whole sandbox, with `memory.max`,
//! `pids.max` and `memory.oom.group = 1` (an out-of-memory kill takes the whole sandbox). The
//! kernel then bounds the totals, `memory.events` / `pids.events` name the limit that was hit,
//! and `cpu.stat` (there without the `cpu` controller) sums the CPU time of every process that
//! ever ran in it.
//!
//! The decisions are pure functions over a [`CgroupFs`], so they are tested with fake files;
//! [`HostCgroupFs`] is the real one.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::limits::{AgentLimits, LimitHit};

/// The cgroup files the harness reads and writes.
pub trait CgroupFs {
    fn read(&self, path: &Path) -> std::io::Result<String>;
    fn write(&self, path: &Path, text: &str) -> std::io::Result<()>;
    fn create_dir(&self, path: &Path) -> std::io::Result<()>;
    fn remove_dir(&self, path: &Path) -> std::io::Result<()>;
    /// The uid that owns `path`.
    fn owner(&self, path: &Path) -> std::io::Result<u32>;
    /// The value of the extended attribute `name` of `path`; `None` if it has none.
    fn xattr(&self, path: &Path, name: &str) -> Option<Vec<u8>>;
}

impl<T: CgroupFs + ?Sized> CgroupFs for &T {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        (**self).read(path)
    }
    fn write(&self, path: &Path, text: &str) -> std::io::Result<()> {
        (**self).write(path, text)
    }
    fn create_dir(&self, path: &Path) -> std::io::Result<()> {
        (**self).create_dir(path)
    }
    fn remove_dir(&self, path: &Path) -> std::io::Result<()> {
        (**self).remove_dir(path)
    }
    fn owner(&self, path: &Path) -> std::io::Result<u32> {
        (**self).owner(path)
    }
    fn xattr(&self, path: &Path, name: &str) -> Option<Vec<u8>> {
        (**self).xattr(path, name)
    }
}

/// The machine's cgroup filesystem.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostCgroupFs;

impl CgroupFs for HostCgroupFs {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(path)
    }
    fn write(&self, path: &Path, text: &str) -> std::io::Result<()> {
        use std::io::Write;
        // One write(2): a cgroup file takes each write as one command.
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)?
            .write_all(text.as_bytes())
    }
    fn create_dir(&self, path: &Path) -> std::io::Result<()> {
        std::fs::create_dir(path)
    }
    fn remove_dir(&self, path: &Path) -> std::io::Result<()> {
        std::fs::remove_dir(path)
    }
    fn owner(&self, path: &Path) -> std::io::Result<u32> {
        use std::os::unix::fs::MetadataExt;
        Ok(std::fs::symlink_metadata(path)?.uid())
    }
    fn xattr(&self, path: &Path, name: &str) -> Option<Vec<u8>> {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
        let name = std::ffi::CString::new(name).ok()?;
        let mut value = [0u8; 64];
        // SAFETY: both strings are NUL-terminated and live; the kernel writes at most
        // `value.len()` bytes into the buffer.
        let n = unsafe {
            libc::lgetxattr(
                path.as_ptr(),
                name.as_ptr(),
                value.as_mut_ptr().cast(),
                value.len(),
            )
        };
        usize::try_from(n).ok().map(|n| value[..n].to_vec())
    }
}

/// The cgroup v2 path of this process, from `/proc/self/cgroup` (its `0::PATH` line).
pub fn own_cgroup(proc_self_cgroup: &str) -> Option<PathBuf> {
    proc_self_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(|path| PathBuf::from(path.trim()))
}

/// Where the cgroup v2 hierarchy is mounted, from `/proc/self/mountinfo`.
pub fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (fields, rest) = line.split_once(" - ")?;
        let fstype = rest.split_ascii_whitespace().next()?;
        let point = fields.split_ascii_whitespace().nth(4)?;
        (fstype == "cgroup2").then(|| PathBuf::from(point))
    })
}

/// The controllers a run's cgroup needs from its parent.
const CONTROLLERS: [&str; 2] = ["memory", "pids"];

/// The extended attributes systemd sets to `1` on the cgroup of a unit with `Delegate=yes`
/// (`trusted.` by the system manager, `user.` by a user's manager).
const DELEGATE_XATTRS: [&str; 2] = ["trusted.delegate", "user.delegate"];

/// The controllers of [`CONTROLLERS`] that `dir` does not enable for its children.
fn missing_controllers(fs: &impl CgroupFs, dir: &Path) -> Vec<&'static str> {
    let enabled = fs
        .read(&dir.join("cgroup.subtree_control"))
        .unwrap_or_default();
    CONTROLLERS
        .into_iter()
        .filter(|c| !enabled.split_ascii_whitespace().any(|e| e == *c))
        .collect()
}

/// Whether `dir` (in the hierarchy mounted at `mount`) was delegated to a process of `euid`,
/// and if not, why. Delegation gives a user the folder and its `cgroup.procs` (systemd's
/// `Delegate=yes` chowns them to the unit's user), so an unprivileged harness needs both to be
/// its own. Root may write anywhere, so its own uid proves nothing: a root harness needs the
/// mark systemd leaves on a delegated subtree (the delegate extended attribute, on `dir` or a
/// cgroup above it), or an operator's explicit `--cgroup-parent`; otherwise it would make
/// cgroups in a slice that systemd manages.
fn why_not_delegated(fs: &impl CgroupFs, dir: &Path, mount: &Path, euid: u32) -> Option<String> {
    if euid != 0 {
        let owned = |p: &Path| fs.owner(p).is_ok_and(|owner| owner == euid);
        return (!(owned(dir) && owned(&dir.join("cgroup.procs"))))
            .then(|| format!("{} is not delegated to uid {euid}", dir.display()));
    }
    let marked = dir
        .ancestors()
        .take_while(|d| d.starts_with(mount))
        .any(|d| {
            DELEGATE_XATTRS
                .iter()
                .any(|name| fs.xattr(d, name).is_some_and(|v| v == b"1"))
        });
    (!marked).then(|| {
        format!(
            "{} is not a delegated cgroup (no trusted.delegate attribute on it or above it); \
             give a cgroup of the harness's own with --cgroup-parent",
            dir.display()
        )
    })
}

/// The cgroup under which runs' cgroups are made: this process's own, or its parent (the usual
/// shape of a delegated subtree, whose owner runs in a leaf of it), whichever has the memory
/// and pids controllers enabled for its children and was delegated to this process's `euid`
/// (see `why_not_delegated`). `Err` says why there is none (the rlimits apply then).
pub fn delegated_parent(
    fs: &impl CgroupFs,
    proc_self_cgroup: &str,
    mountinfo: &str,
    euid: u32,
) -> Result<PathBuf, String> {
    let mount = cgroup2_mount(mountinfo).ok_or("no cgroup v2 hierarchy is mounted")?;
    let own = own_cgroup(proc_self_cgroup).ok_or("this process is in no cgroup v2")?;
    let own = mount.join(own.strip_prefix("/").unwrap_or(&own));
    let mut reasons = Vec::new();
    for candidate in [Some(own.as_path()), own.parent()].into_iter().flatten() {
        if !candidate.starts_with(&mount) {
            continue;
        }
        let missing = missing_controllers(fs, candidate);
        if !missing.is_empty() {
            reasons.push(format!(
                "{} does not enable {} for its children",
                candidate.display(),
                missing.join(" and ")
            ));
            continue;
        }
        if let Some(why) = why_not_delegated(fs, candidate, &mount, euid) {
            reasons.push(why);
            continue;
        }
        return Ok(candidate.to_path_buf());
    }
    Err(reasons.join("; "))
}

/// Checks an operator's `--cgroup-parent`: a cgroup v2 folder with the memory and pids
/// controllers enabled for its children. That it is the harness's to use is the operator's
/// word.
pub fn explicit_parent(fs: &impl CgroupFs, dir: &Path) -> Result<PathBuf, String> {
    if fs.read(&dir.join("cgroup.subtree_control")).is_err() {
        return Err("not a cgroup v2 folder (it has no cgroup.subtree_control)".into());
    }
    let missing = missing_controllers(fs, dir);
    if !missing.is_empty() {
        return Err(format!(
            "it does not enable {} for its children (write `+memory +pids` to its \
             cgroup.subtree_control)",
            missing.join(" and ")
        ));
    }
    Ok(dir.to_path_buf())
}

/// Looks for a delegated parent on this machine.
pub fn detect() -> Result<PathBuf, String> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    delegated_parent(
        &HostCgroupFs,
        &read("/proc/self/cgroup"),
        &read("/proc/self/mountinfo"),
        nix::unistd::geteuid().as_raw(),
    )
}

/// How long a run's cgroup gets to empty after `cgroup.kill` before it is removed.
const EMPTY_TIMEOUT: Duration = Duration::from_secs(1);

/// One sandbox's cgroup. Dropping it kills whatever is still in it, waits (at most
/// `EMPTY_TIMEOUT`) for it to empty, and removes it.
#[derive(Debug)]
pub struct RunCgroup<F: CgroupFs = HostCgroupFs> {
    pub dir: PathBuf,
    fs: F,
}

impl<F: CgroupFs> RunCgroup<F> {
    /// Makes `<parent>/<name>` with the limits set. Removed again if a limit cannot be set.
    pub fn create(
        fs: F,
        parent: &Path,
        name: &str,
        limits: &AgentLimits,
    ) -> std::io::Result<RunCgroup<F>> {
        let dir = parent.join(name);
        fs.create_dir(&dir)?;
        // From here on, dropping it removes it.
        let cgroup = RunCgroup { dir, fs };
        let fs = &cgroup.fs;
        fs.write(
            &cgroup.dir.join("memory.max"),
            &limits.memory_bytes.to_string(),
        )?;
        fs.write(&cgroup.dir.join("pids.max"), &limits.tasks.to_string())?;
        fs.write(&cgroup.dir.join("memory.oom.group"), "1")?;
        // No swap to grow into past memory.max, where the machine has swap accounting.
        let _ = fs.write(&cgroup.dir.join("memory.swap.max"), "0");
        Ok(cgroup)
    }

    /// Moves process `pid` (the launcher, before it builds the sandbox) into the cgroup.
    pub fn add(&self, pid: u32) -> std::io::Result<()> {
        self.fs
            .write(&self.dir.join("cgroup.procs"), &pid.to_string())
    }

    /// The limit the sandbox hit: an out-of-memory kill, a fork refused at `pids.max`, or its
    /// CPU time (every process that ran in the cgroup, however it ended) at `limits`'s.
    pub fn limit_hit(&self, limits: &AgentLimits) -> Option<LimitHit> {
        let count = |file: &str, keys: &[&str]| -> u64 {
            self.fs
                .read(&self.dir.join(file))
                .unwrap_or_default()
                .lines()
                .filter_map(|line| line.split_once(' '))
                .filter(|(key, _)| keys.contains(key))
                .filter_map(|(_, n)| n.trim().parse::<u64>().ok())
                .sum()
        };
        if count("memory.events", &["oom_kill", "oom_group_kill"]) > 0 {
            return Some(LimitHit::Memory);
        }
        if count("pids.events", &["max"]) > 0 {
            return Some(LimitHit::Processes);
        }
        let cpu_usec = count("cpu.stat", &["usage_usec"]);
        if limits
            .cpu_seconds
            .is_some_and(|max| cpu_usec >= max.saturating_mul(1_000_000))
        {
            return Some(LimitHit::CpuTime);
        }
        None
    }

    /// Kills everything in the cgroup (`cgroup.kill`).
    pub fn kill(&self) {
        let _ = self.fs.write(&self.dir.join("cgroup.kill"), "1");
    }

    /// Whether a process is still in the cgroup (`populated 1` in `cgroup.events`).
    fn is_populated(&self) -> bool {
        self.fs
            .read(&self.dir.join("cgroup.events"))
            .is_ok_and(|events| events.lines().any(|line| line.trim() == "populated 1"))
    }
}

impl<F: CgroupFs> Drop for RunCgroup<F> {
    fn drop(&mut self) {
        self.kill();
        // The killed tasks leave the cgroup as they die; until then rmdir fails (EBUSY).
        let deadline = Instant::now() + EMPTY_TIMEOUT;
        while self.is_populated() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Err(e) = self.fs.remove_dir(&self.dir) {
            tracing::warn!(cgroup = %self.dir.display(), error = %e, "cannot remove the sandbox's cgroup");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};
    use std::collections::{BTreeMap, BTreeSet};

    /// Files as a map; `owners` and `xattrs` as given; `busy_reads`: how many more reads of a
    /// `cgroup.events` say `populated 1` (and make `remove_dir` fail with EBUSY).
    #[derive(Default)]
    struct FakeFs {
        files: RefCell<BTreeMap<PathBuf, String>>,
        dirs: RefCell<BTreeSet<PathBuf>>,
        owners: BTreeMap<PathBuf, u32>,
        xattrs: BTreeMap<(PathBuf, &'static str), &'static str>,
        refuse: Option<&'static str>,
        busy_reads: Cell<u32>,
    }

    impl CgroupFs for FakeFs {
        fn read(&self, path: &Path) -> std::io::Result<String> {
            if path.ends_with("cgroup.events") {
                let busy = self.busy_reads.get();
                self.busy_reads.set(busy.saturating_sub(1));
                return Ok(format!("populated {}\nfrozen 0\n", u32::from(busy > 0)));
            }
            self.files
                .borrow()
                .get(path)
                .cloned()
                .ok_or_else(|| std::io::ErrorKind::NotFound.into())
        }
        fn write(&self, path: &Path, text: &str) -> std::io::Result<()> {
            if self.refuse.is_some_and(|f| path.ends_with(f)) {
                return Err(std::io::ErrorKind::PermissionDenied.into());
            }
            self.files.borrow_mut().insert(path.into(), text.into());
            Ok(())
        }
        fn create_dir(&self, path: &Path) -> std::io::Result<()> {
            self.dirs.borrow_mut().insert(path.into());
            Ok(())
        }
        fn remove_dir(&self, path: &Path) -> std::io::Result<()> {
            if self.busy_reads.get() > 0 {
                return Err(std::io::ErrorKind::ResourceBusy.into());
            }
            self.dirs.borrow_mut().remove(path);
            Ok(())
        }
        fn owner(&self, path: &Path) -> std::io::Result<u32> {
            Ok(self.owners.get(path).copied().unwrap_or(0))
        }
        fn xattr(&self, path: &Path, name: &str) -> Option<Vec<u8>> {
            self.xattrs
                .iter()
                .find(|((p, n), _)| p == path && *n == name)
                .map(|(_, v)| v.as_bytes().to_vec())
        }
    }

    const MOUNTINFO: &str = "25 1 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n\
                             26 1 0:23 / /proc rw - proc proc rw\n";
    const SERVICE: &str = "/sys/fs/cgroup/system.slice/ale.service";
    const HARNESS_UID: u32 = 1000;

    /// `subtree` enables controllers; `owned` folders (and their `cgroup.procs`) are the
    /// harness user's.
    fn fs_with(subtree: &[(&str, &str)], owned: &[&str]) -> FakeFs {
        let mut fs = FakeFs::default();
        for dir in owned {
            fs.owners.insert(PathBuf::from(dir), HARNESS_UID);
            fs.owners
                .insert(Path::new(dir).join("cgroup.procs"), HARNESS_UID);
        }
        for (dir, controllers) in subtree {
            fs.files.borrow_mut().insert(
                Path::new(dir).join("cgroup.subtree_control"),
                controllers.to_string(),
            );
        }
        fs
    }

    fn limits() -> AgentLimits {
        AgentLimits {
            memory_bytes: 1 << 30,
            tasks: 64,
            cpu_seconds: Some(2),
            file_bytes: 1 << 30,
            open_files: 1024,
            enforcement: super::super::limits::Enforcement::CgroupV2,
        }
    }

    #[test]
    fn the_own_cgroup_and_the_mount_are_read() {
        assert_eq!(
            own_cgroup("12:pids:/x\n0::/system.slice/ale.service\n"),
            Some(PathBuf::from("/system.slice/ale.service"))
        );
        assert_eq!(own_cgroup("4:memory:/x\n"), None);
        assert_eq!(
            cgroup2_mount(MOUNTINFO),
            Some(PathBuf::from("/sys/fs/cgroup"))
        );
        assert_eq!(cgroup2_mount("26 1 0:23 / /proc rw - proc proc rw\n"), None);
    }

    #[test]
    fn a_delegated_subtree_is_used_and_anything_less_is_refused_with_the_reason() {
        let cgroup = "0::/system.slice/ale.service/harness\n";
        // A delegated service whose harness runs in a leaf: the service's folder is the parent.
        let fs = fs_with(&[(SERVICE, "cpu memory pids")], &[SERVICE]);
        assert_eq!(
            delegated_parent(&fs, cgroup, MOUNTINFO, HARNESS_UID),
            Ok(PathBuf::from(SERVICE))
        );
        // Controllers enabled, but not ours.
        let fs = fs_with(&[(SERVICE, "memory pids")], &[]);
        let why = delegated_parent(&fs, cgroup, MOUNTINFO, HARNESS_UID).unwrap_err();
        assert!(why.contains("not delegated to uid 1000"), "{why}");
        // Ours, but without the pids controller.
        let fs = fs_with(&[(SERVICE, "memory")], &[SERVICE]);
        let why = delegated_parent(&fs, cgroup, MOUNTINFO, HARNESS_UID).unwrap_err();
        assert!(why.contains("does not enable pids"), "{why}");
        // Cgroup v1 only, as on a machine without the unified hierarchy.
        let why = delegated_parent(
            &fs,
            "4:memory:/x\n",
            "26 1 0:23 / /proc rw - proc proc rw\n",
            HARNESS_UID,
        )
        .unwrap_err();
        assert!(why.contains("no cgroup v2"), "{why}");
    }

    /// Root may write every cgroup: only systemd's delegation mark (on the folder or above it)
    /// makes one the harness's.
    #[test]
    fn a_root_harness_takes_only_a_cgroup_marked_as_delegated() {
        let cgroup = "0::/system.slice/ale.service/harness\n";
        // Writable by root and root's own, as all of system.slice is: not delegated.
        let fs = fs_with(&[(SERVICE, "memory pids")], &[]);
        let why = delegated_parent(&fs, cgroup, MOUNTINFO, 0).unwrap_err();
        assert!(why.contains("not a delegated cgroup"), "{why}");
        assert!(why.contains("--cgroup-parent"), "{why}");
        for name in DELEGATE_XATTRS {
            let mut fs = fs_with(&[(SERVICE, "memory pids")], &[]);
            fs.xattrs.insert((PathBuf::from(SERVICE), name), "1");
            assert_eq!(
                delegated_parent(&fs, cgroup, MOUNTINFO, 0),
                Ok(PathBuf::from(SERVICE))
            );
        }
        // A mark above the candidate delegates the subtree it is in.
        let mut fs = fs_with(&[(SERVICE, "memory pids")], &[]);
        fs.xattrs.insert(
            (
                PathBuf::from("/sys/fs/cgroup/system.slice"),
                "trusted.delegate",
            ),
            "1",
        );
        assert!(delegated_parent(&fs, cgroup, MOUNTINFO, 0).is_ok());
        // Any other value is no mark.
        let mut fs = fs_with(&[(SERVICE, "memory pids")], &[]);
        fs.xattrs
            .insert((PathBuf::from(SERVICE), "trusted.delegate"), "0");
        assert!(delegated_parent(&fs, cgroup, MOUNTINFO, 0).is_err());

        // The operator's --cgroup-parent needs only the controllers.
        let fs = fs_with(&[(SERVICE, "memory pids")], &[]);
        assert_eq!(
            explicit_parent(&fs, Path::new(SERVICE)),
            Ok(PathBuf::from(SERVICE))
        );
        let fs = fs_with(&[(SERVICE, "pids")], &[]);
        let why = explicit_parent(&fs, Path::new(SERVICE)).unwrap_err();
        assert!(why.contains("does not enable memory"), "{why}");
        let why = explicit_parent(&fs, Path::new("/tmp")).unwrap_err();
        assert!(why.contains("not a cgroup v2 folder"), "{why}");
    }

    #[test]
    fn a_run_cgroup_gets_its_limits_and_names_what_was_hit() {
        let fs = FakeFs::default();
        let limits = limits();
        let run = RunCgroup::create(&fs, Path::new(SERVICE), "ale-run-1", &limits).unwrap();
        let file = |name: &str| fs.read(&run.dir.join(name)).unwrap();
        assert_eq!(file("memory.max"), "1073741824");
        assert_eq!(file("pids.max"), "64");
        assert_eq!(file("memory.oom.group"), "1");
        run.add(4242).unwrap();
        assert_eq!(file("cgroup.procs"), "4242");

        assert_eq!(run.limit_hit(&limits), None);
        fs.write(
            &run.dir.join("cpu.stat"),
            "usage_usec 1999999\nuser_usec 5\n",
        )
        .unwrap();
        fs.write(&run.dir.join("pids.events"), "max 0\n").unwrap();
        fs.write(
            &run.dir.join("memory.events"),
            "low 0\nhigh 0\nmax 12\noom 1\noom_kill 0\noom_group_kill 0\n",
        )
        .unwrap();
        // Reclaim at memory.max is no stop; a kill is.
        assert_eq!(run.limit_hit(&limits), None);
        // Every process's CPU time, however it ended, is in cpu.stat.
        fs.write(
            &run.dir.join("cpu.stat"),
            "usage_usec 2000000\nuser_usec 5\n",
        )
        .unwrap();
        assert_eq!(run.limit_hit(&limits), Some(LimitHit::CpuTime));
        fs.write(&run.dir.join("pids.events"), "max 3\n").unwrap();
        assert_eq!(run.limit_hit(&limits), Some(LimitHit::Processes));
        fs.write(&run.dir.join("memory.events"), "oom_group_kill 1\n")
            .unwrap();
        assert_eq!(run.limit_hit(&limits), Some(LimitHit::Memory));
        drop(run);
        assert!(fs.dirs.borrow().is_empty());

        // A limit that cannot be set leaves no cgroup behind.
        let refusing = FakeFs {
            refuse: Some("pids.max"),
            ..FakeFs::default()
        };
        assert!(RunCgroup::create(&refusing, Path::new(SERVICE), "ale-run-2", &limits).is_err());
        assert!(refusing.dirs.borrow().is_empty());
    }

    /// A dropped cgroup is killed, waited for until its tasks are gone, then removed; one
    /// that never empties is given up on after a bounded wait.
    #[test]
    fn a_dropped_run_cgroup_is_killed_emptied_and_removed() {
        let fs = FakeFs::default();
        let run = RunCgroup::create(&fs, Path::new(SERVICE), "ale-run-3", &limits()).unwrap();
        let dir = run.dir.clone();
        // Its tasks take three looks to die.
        fs.busy_reads.set(3);
        drop(run);
        assert_eq!(
            fs.files.borrow().get(&dir.join("cgroup.kill")).unwrap(),
            "1"
        );
        assert!(
            !fs.dirs.borrow().contains(&dir),
            "the cgroup was left behind"
        );

        let stuck = FakeFs::default();
        let run = RunCgroup::create(&stuck, Path::new(SERVICE), "ale-run-4", &limits()).unwrap();
        stuck.busy_reads.set(u32::MAX);
        let started = Instant::now();
        drop(run);
        assert!(started.elapsed() >= EMPTY_TIMEOUT);
        assert!(
            stuck
                .dirs
                .borrow()
                .contains(&Path::new(SERVICE).join("ale-run-4"))
        );
    }
}
