//! A cgroup v2 of the sandbox's own, where the harness can make one: a child of a cgroup
//! delegated to it (writable, with the `memory` and `pids` controllers enabled for its
//! children), holding the launcher and so the whole sandbox, with `memory.max`, `pids.max`
//! and `memory.oom.group = 1` (an out-of-memory kill takes the whole sandbox). The kernel then
//! bounds the totals, and `memory.events` / `pids.events` name the limit that was hit.
//!
//! The decisions are pure functions over a [`CgroupFs`], so they are tested with fake files;
//! [`HostCgroupFs`] is the real one.

use std::path::{Path, PathBuf};

use super::limits::{AgentLimits, LimitHit};

/// The cgroup files the harness reads and writes.
pub trait CgroupFs {
    fn read(&self, path: &Path) -> std::io::Result<String>;
    fn write(&self, path: &Path, text: &str) -> std::io::Result<()>;
    fn create_dir(&self, path: &Path) -> std::io::Result<()>;
    fn remove_dir(&self, path: &Path) -> std::io::Result<()>;
    /// Whether this process may create cgroups in `dir` and move processes into them.
    fn may_write(&self, dir: &Path) -> bool;
}

/// The machine's cgroup filesystem.
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
    fn may_write(&self, dir: &Path) -> bool {
        let writable = |p: &Path| nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).is_ok();
        writable(dir) && writable(&dir.join("cgroup.procs"))
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

/// The cgroup under which runs' cgroups are made: this process's own, or its parent (the usual
/// shape of a delegated subtree, whose owner runs in a leaf of it), whichever has the memory
/// and pids controllers enabled for its children and may be written. `Err` says why there is
/// none (the rlimits apply then).
pub fn delegated_parent(
    fs: &impl CgroupFs,
    proc_self_cgroup: &str,
    mountinfo: &str,
) -> Result<PathBuf, String> {
    let mount = cgroup2_mount(mountinfo).ok_or("no cgroup v2 hierarchy is mounted")?;
    let own = own_cgroup(proc_self_cgroup).ok_or("this process is in no cgroup v2")?;
    let own = mount.join(own.strip_prefix("/").unwrap_or(&own));
    let mut reasons = Vec::new();
    for candidate in [Some(own.as_path()), own.parent()].into_iter().flatten() {
        if !candidate.starts_with(&mount) {
            continue;
        }
        let enabled = fs
            .read(&candidate.join("cgroup.subtree_control"))
            .unwrap_or_default();
        let missing: Vec<&str> = CONTROLLERS
            .into_iter()
            .filter(|c| !enabled.split_ascii_whitespace().any(|e| e == *c))
            .collect();
        if !missing.is_empty() {
            reasons.push(format!(
                "{} does not enable {} for its children",
                candidate.display(),
                missing.join(" and ")
            ));
            continue;
        }
        if !fs.may_write(candidate) {
            reasons.push(format!(
                "{} is not delegated to this user",
                candidate.display()
            ));
            continue;
        }
        return Ok(candidate.to_path_buf());
    }
    Err(reasons.join("; "))
}

/// Looks for a delegated parent on this machine.
pub fn detect() -> Result<PathBuf, String> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    delegated_parent(
        &HostCgroupFs,
        &read("/proc/self/cgroup"),
        &read("/proc/self/mountinfo"),
    )
}

/// One sandbox's cgroup.
#[derive(Debug)]
pub struct RunCgroup {
    pub dir: PathBuf,
}

impl RunCgroup {
    /// Makes `<parent>/<name>` with the limits set. Removed again if a limit cannot be set.
    pub fn create(
        fs: &impl CgroupFs,
        parent: &Path,
        name: &str,
        limits: &AgentLimits,
    ) -> std::io::Result<RunCgroup> {
        let dir = parent.join(name);
        fs.create_dir(&dir)?;
        let cgroup = RunCgroup { dir };
        let set = || -> std::io::Result<()> {
            fs.write(
                &cgroup.dir.join("memory.max"),
                &limits.memory_bytes.to_string(),
            )?;
            fs.write(&cgroup.dir.join("pids.max"), &limits.tasks.to_string())?;
            fs.write(&cgroup.dir.join("memory.oom.group"), "1")?;
            // No swap to grow into past memory.max, where the machine has swap accounting.
            let _ = fs.write(&cgroup.dir.join("memory.swap.max"), "0");
            Ok(())
        };
        if let Err(e) = set() {
            let _ = fs.remove_dir(&cgroup.dir);
            return Err(e);
        }
        Ok(cgroup)
    }

    /// Moves process `pid` (the launcher, before it builds the sandbox) into the cgroup.
    pub fn add(&self, fs: &impl CgroupFs, pid: u32) -> std::io::Result<()> {
        fs.write(&self.dir.join("cgroup.procs"), &pid.to_string())
    }

    /// The limit the sandbox hit, from the cgroup's event counters: an out-of-memory kill, or
    /// a fork refused at `pids.max`.
    pub fn limit_hit(&self, fs: &impl CgroupFs) -> Option<LimitHit> {
        let count = |file: &str, keys: &[&str]| -> u64 {
            fs.read(&self.dir.join(file))
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
        None
    }

    /// Kills everything in the cgroup (`cgroup.kill`).
    pub fn kill(&self, fs: &impl CgroupFs) {
        let _ = fs.write(&self.dir.join("cgroup.kill"), "1");
    }

    /// Removes the cgroup once it is empty.
    pub fn remove(&self, fs: &impl CgroupFs) {
        if let Err(e) = fs.remove_dir(&self.dir) {
            tracing::warn!(cgroup = %self.dir.display(), error = %e, "cannot remove the sandbox's cgroup");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::{BTreeMap, BTreeSet};

    /// Files as a map; `writable` lists the folders this process may write.
    #[derive(Default)]
    struct FakeFs {
        files: RefCell<BTreeMap<PathBuf, String>>,
        dirs: RefCell<BTreeSet<PathBuf>>,
        writable: BTreeSet<PathBuf>,
        refuse: Option<&'static str>,
    }

    impl CgroupFs for FakeFs {
        fn read(&self, path: &Path) -> std::io::Result<String> {
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
            self.dirs.borrow_mut().remove(path);
            Ok(())
        }
        fn may_write(&self, dir: &Path) -> bool {
            self.writable.contains(dir)
        }
    }

    const MOUNTINFO: &str = "25 1 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n\
                             26 1 0:23 / /proc rw - proc proc rw\n";
    const SERVICE: &str = "/sys/fs/cgroup/system.slice/ale.service";

    fn fs_with(subtree: &[(&str, &str)], writable: &[&str]) -> FakeFs {
        let fs = FakeFs {
            writable: writable.iter().map(PathBuf::from).collect(),
            ..FakeFs::default()
        };
        for (dir, controllers) in subtree {
            fs.files.borrow_mut().insert(
                Path::new(dir).join("cgroup.subtree_control"),
                controllers.to_string(),
            );
        }
        fs
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
            delegated_parent(&fs, cgroup, MOUNTINFO),
            Ok(PathBuf::from(SERVICE))
        );
        // Controllers enabled, but not ours to write.
        let fs = fs_with(&[(SERVICE, "memory pids")], &[]);
        let why = delegated_parent(&fs, cgroup, MOUNTINFO).unwrap_err();
        assert!(why.contains("not delegated"), "{why}");
        // Ours, but without the pids controller.
        let fs = fs_with(&[(SERVICE, "memory")], &[SERVICE]);
        let why = delegated_parent(&fs, cgroup, MOUNTINFO).unwrap_err();
        assert!(why.contains("does not enable pids"), "{why}");
        // Cgroup v1 only, as on a machine without the unified hierarchy.
        let why = delegated_parent(
            &fs,
            "4:memory:/x\n",
            "26 1 0:23 / /proc rw - proc proc rw\n",
        )
        .unwrap_err();
        assert!(why.contains("no cgroup v2"), "{why}");
    }

    #[test]
    fn a_run_cgroup_gets_its_limits_and_names_what_was_hit() {
        let fs = FakeFs::default();
        let limits = AgentLimits {
            memory_bytes: 1 << 30,
            tasks: 64,
            cpu_seconds: None,
            file_bytes: 1 << 30,
            open_files: 1024,
            enforcement: super::super::limits::Enforcement::CgroupV2,
        };
        let run = RunCgroup::create(&fs, Path::new(SERVICE), "ale-run-1", &limits).unwrap();
        let file = |name: &str| fs.read(&run.dir.join(name)).unwrap();
        assert_eq!(file("memory.max"), "1073741824");
        assert_eq!(file("pids.max"), "64");
        assert_eq!(file("memory.oom.group"), "1");
        run.add(&fs, 4242).unwrap();
        assert_eq!(file("cgroup.procs"), "4242");

        assert_eq!(run.limit_hit(&fs), None);
        fs.write(&run.dir.join("pids.events"), "max 0\n").unwrap();
        fs.write(
            &run.dir.join("memory.events"),
            "low 0\nhigh 0\nmax 12\noom 1\noom_kill 0\noom_group_kill 0\n",
        )
        .unwrap();
        // Reclaim at memory.max is no stop; a kill is.
        assert_eq!(run.limit_hit(&fs), None);
        fs.write(&run.dir.join("pids.events"), "max 3\n").unwrap();
        assert_eq!(run.limit_hit(&fs), Some(LimitHit::Processes));
        fs.write(&run.dir.join("memory.events"), "oom_group_kill 1\n")
            .unwrap();
        assert_eq!(run.limit_hit(&fs), Some(LimitHit::Memory));

        // A limit that cannot be set leaves no cgroup behind.
        let refusing = FakeFs {
            refuse: Some("pids.max"),
            ..FakeFs::default()
        };
        assert!(RunCgroup::create(&refusing, Path::new(SERVICE), "ale-run-2", &limits).is_err());
        assert!(refusing.dirs.borrow().is_empty());
    }
}
