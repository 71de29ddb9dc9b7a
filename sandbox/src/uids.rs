//! A uid of its own for each run's agent when the harness is root, taken from a range
//! (`--agent-uids START-END`, subuid style): two runs' agents can then neither read each
//! other's files nor signal each other, and `RLIMIT_NPROC` counts one run. The agent's gid is
//! the same number.
//!
//! Harness processes on one machine share the range: a uid is taken by holding an exclusive
//! `flock` on `<lock dir>/<uid>.lock` (by default [`DEFAULT_LOCK_DIR`], on `/run`: one per
//! machine, as uids are, and emptied at boot) for as long as the run lives. The kernel drops
//! the lock when the holder dies, so a harness killed by SIGKILL gives its uid back.
//! A uid some account or group already has (`/etc/passwd`, `/etc/group`), or that lies in a
//! range handed out in `/etc/subuid` or `/etc/subgid`, is never taken.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The agents' uids unless `--agent-uids` says otherwise: above the ids distributions give
/// accounts (and `nobody`, 65534), 65536 of them.
pub const DEFAULT_AGENT_UIDS: &str = "200000-265535";
/// [`DEFAULT_AGENT_UIDS`] as a range.
pub const DEFAULT_AGENT_UID_RANGE: UidRange = UidRange {
    start: 200_000,
    end: 265_535,
};
/// Where the locks of the uids in use live: one folder per machine.
pub const DEFAULT_LOCK_DIR: &str = "/run/ale-uids";

/// A range of uids, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UidRange {
    pub start: u32,
    pub end: u32,
}

impl std::fmt::Display for UidRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.start, self.end)
    }
}

impl std::str::FromStr for UidRange {
    type Err = String;

    /// `START-END`, e.g. `200000-265535`: from 1000 up, below 2^31 (the kernel's overflow and
    /// invalid ids, and `nobody`, are refused).
    fn from_str(text: &str) -> Result<UidRange, String> {
        let bad = |why: &str| format!("--agent-uids {text:?}: {why}");
        let (start, end) = text
            .split_once('-')
            .ok_or_else(|| bad("expected START-END, e.g. 200000-265535"))?;
        let parse = |n: &str| {
            n.trim()
                .parse::<u32>()
                .map_err(|_| bad("expected START-END, two uids, e.g. 200000-265535"))
        };
        let range = UidRange {
            start: parse(start)?,
            end: parse(end)?,
        };
        if range.start > range.end {
            return Err(bad("START is above END"));
        }
        if range.start < 1000 {
            return Err(bad(
                "uids below 1000 belong to the system; start at 1000 or above",
            ));
        }
        if range.end >= 1 << 31 {
            return Err(bad("uids must be below 2147483648"));
        }
        if range.contains(65534) || range.contains(65535) {
            return Err(bad(
                "it holds 65534 (nobody) or 65535 (the kernel's invalid id)",
            ));
        }
        Ok(range)
    }
}

impl UidRange {
    pub fn contains(&self, id: u32) -> bool {
        (self.start..=self.end).contains(&id)
    }
}

/// Ids the range must not hand out: every uid in `passwd`, every gid in `group` (the agent's
/// gid is its uid), and every range in `subuid` / `subgid` (`name:start:count` lines).
#[derive(Debug, Default)]
pub struct TakenIds {
    single: Vec<u32>,
    ranges: Vec<(u64, u64)>,
}

impl TakenIds {
    pub fn parse(passwd: &str, group: &str, subids: &[&str]) -> TakenIds {
        let mut taken = TakenIds::default();
        for (text, field) in [(passwd, 2), (group, 2)] {
            for line in text.lines() {
                if let Some(id) = line.split(':').nth(field).and_then(|f| f.parse().ok()) {
                    taken.single.push(id);
                }
            }
        }
        for text in subids {
            for line in text.lines() {
                let mut fields = line.split(':').skip(1);
                let start = fields.next().and_then(|f| f.trim().parse::<u64>().ok());
                let count = fields.next().and_then(|f| f.trim().parse::<u64>().ok());
                if let (Some(start), Some(count)) = (start, count) {
                    taken.ranges.push((start, start.saturating_add(count)));
                }
            }
        }
        taken
    }

    /// The machine's accounts, groups and subordinate ids.
    pub fn of_this_machine() -> TakenIds {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let (subuid, subgid) = (read("/etc/subuid"), read("/etc/subgid"));
        TakenIds::parse(
            &read("/etc/passwd"),
            &read("/etc/group"),
            &[&subuid, &subgid],
        )
    }

    pub fn is_taken(&self, id: u32) -> bool {
        self.single.contains(&id)
            || self
                .ranges
                .iter()
                .any(|&(start, end)| (start..end).contains(&u64::from(id)))
    }
}

/// Why no uid could be taken.
#[derive(Debug, thiserror::Error)]
pub enum UidError {
    #[error(
        "cannot use {} for the agents' uid locks: {cause}", .dir.display()
    )]
    LockDir { dir: PathBuf, cause: std::io::Error },
    #[error(
        "{} is not a folder of root's own, mode 0700 (found {found}); remove it, it will be made again",
        .dir.display()
    )]
    LockDirUnsafe { dir: PathBuf, found: String },
    #[error(
        "every uid in --agent-uids {range} is in use by another run (or by an account, a group \
         or a subordinate id range); give a larger range, or wait for a run to end"
    )]
    Exhausted { range: UidRange },
}

/// A uid held for one run: its lock is released when this is dropped, or when the process
/// holding it dies.
#[derive(Debug)]
pub struct HeldUid {
    pub uid: u32,
    _lock: File,
}

/// Takes the first uid of `range` that no account, group or subordinate range has and no
/// other run holds, locking it in `lock_dir` (created 0700 if missing).
pub fn take_uid(range: UidRange, lock_dir: &Path, taken: &TakenIds) -> Result<HeldUid, UidError> {
    prepare_lock_dir(lock_dir)?;
    for uid in range.start..=range.end {
        if taken.is_taken(uid) {
            continue;
        }
        if let Some(lock) = try_lock(&lock_dir.join(format!("{uid}.lock")), lock_dir)? {
            return Ok(HeldUid { uid, _lock: lock });
        }
    }
    Err(UidError::Exhausted { range })
}

fn prepare_lock_dir(dir: &Path) -> Result<(), UidError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let err = |cause| UidError::LockDir {
        dir: dir.to_path_buf(),
        cause,
    };
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(err(e)),
    }
    let meta = std::fs::symlink_metadata(dir).map_err(err)?;
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let mode = meta.permissions().mode() & 0o7777;
    if !meta.is_dir() || meta.uid() != euid || mode & 0o077 != 0 {
        let kind = if meta.file_type().is_symlink() {
            "a symbolic link".to_string()
        } else if meta.is_dir() {
            format!("a folder of uid {}, mode {mode:04o}", meta.uid())
        } else {
            "not a folder".to_string()
        };
        return Err(UidError::LockDirUnsafe {
            dir: dir.to_path_buf(),
            found: kind,
        });
    }
    Ok(())
}

/// The lock file, locked, or `None` when another process holds it.
fn try_lock(path: &Path, dir: &Path) -> Result<Option<File>, UidError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|cause| UidError::LockDir {
            dir: dir.to_path_buf(),
            cause,
        })?;
    // SAFETY: flock on a descriptor we own; touches no memory.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(Some(file));
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Ok(None);
    }
    Err(UidError::LockDir {
        dir: dir.to_path_buf(),
        cause: error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_bad_ones_say_why() {
        assert_eq!(
            DEFAULT_AGENT_UIDS.parse::<UidRange>(),
            Ok(DEFAULT_AGENT_UID_RANGE)
        );
        for (bad, why) in [
            ("200000", "START-END"),
            ("300000-200000", "above END"),
            ("10-2000", "below 1000"),
            ("60000-70000", "65534"),
            ("2000000000-3000000000", "below 2147483648"),
        ] {
            let err = bad.parse::<UidRange>().unwrap_err();
            assert!(
                err.contains(why) && err.contains("--agent-uids"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn accounts_groups_and_subordinate_ranges_are_never_handed_out() {
        let taken = TakenIds::parse(
            "root:x:0:0::/root:/bin/sh\nsvc:x:200000:200000::/:/bin/false\n",
            "grp:x:200002:\n",
            &["alice:200010:5\n", "bob:bad\n"],
        );
        for id in [0, 200000, 200002, 200010, 200014] {
            assert!(taken.is_taken(id), "{id}");
        }
        for id in [200001, 200003, 200009, 200015] {
            assert!(!taken.is_taken(id), "{id}");
        }
    }

    #[test]
    fn concurrent_runs_get_different_uids_and_a_released_one_is_taken_again() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("locks");
        let range = UidRange {
            start: 300000,
            end: 300003,
        };
        let taken = TakenIds::parse("a:x:300000:1\n", "", &[]);
        let first = take_uid(range, &dir, &taken).unwrap();
        let second = take_uid(range, &dir, &taken).unwrap();
        assert_eq!((first.uid, second.uid), (300001, 300002));
        let third = take_uid(range, &dir, &taken).unwrap();
        assert_eq!(third.uid, 300003);
        assert!(matches!(
            take_uid(range, &dir, &taken),
            Err(UidError::Exhausted { .. })
        ));
        drop(second);
        assert_eq!(take_uid(range, &dir, &taken).unwrap().uid, 300002);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&dir).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_lock_dir_others_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("locks");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let range = UidRange {
            start: 300000,
            end: 300000,
        };
        let err = take_uid(range, &dir, &TakenIds::default()).unwrap_err();
        assert!(matches!(err, UidError::LockDirUnsafe { .. }), "{err}");
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(matches!(
            take_uid(range, &link, &TakenIds::default()),
            Err(UidError::LockDirUnsafe { .. })
        ));
    }
}
