//! A batch run's own submission folder, `<state>/submissions/<run_id>/`: made with the run's
//! official env, read only by that env's `SubmitBatchEval`, removed when the run ends.
//!
//! When the evaluator runs as root the folder is a tmpfs of its own, sized to the submission
//! cap plus [`QUOTA_SLACK_BYTES`] with at most [`QUOTA_INODES`] files, so the filesystem
//! enforces the quota: an agent writing past it gets `ENOSPC` and nothing outside its run
//! notices. Otherwise it is a plain 0700 folder on the state dir's disk, and what an agent may
//! write there is bounded only by what the harness sets on the agent (`RLIMIT_FSIZE` bounds
//! each file, not their number); docs/batch.md says what that leaves open.
//!
//! A folder whose removal fails (an agent still alive, creating files in it as it goes) is
//! kept in the evaluator's [`Leftovers`] and removed again later: by the evaluator's periodic
//! sweep, when an env is dropped or reclaimed, and at the next start.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ale_proto::RunId;
use ale_records::layout;
use ale_records::private_files::{PrivateFileError, create_private_dir, ensure_private_dir};

/// What a submission tmpfs holds beyond the submission cap: the folder's own metadata, and
/// room for an agent to write its file beside a half-written one.
pub const QUOTA_SLACK_BYTES: u64 = 1 << 20;

/// The files and folders a submission tmpfs may hold: a policy file and what writing it takes,
/// never a million empty files eating the evaluator's memory.
pub const QUOTA_INODES: u64 = 1024;

/// How the folder's size is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quota {
    /// A tmpfs of its own: the filesystem refuses writes past the cap.
    Tmpfs,
    /// A plain folder on the state dir's disk (the evaluator is not root, or could not mount).
    PlainFolder,
}

/// Run folders whose removal failed, kept to be removed again; shared by every run's
/// [`SubmissionFolder`] and the evaluator that retries them.
#[derive(Debug, Clone, Default)]
pub struct Leftovers(Arc<Mutex<Vec<PathBuf>>>);

impl Leftovers {
    fn keep(&self, path: PathBuf) {
        crate::sync::lock(&self.0).push(path);
    }

    /// Tries again to remove every folder kept; those that still resist stay kept. Returns
    /// how many went. Does nothing (and no I/O) when none is kept.
    pub fn retry(&self) -> usize {
        let kept = std::mem::take(&mut *crate::sync::lock(&self.0));
        if kept.is_empty() {
            return 0;
        }
        let mut removed = 0;
        let mut still = Vec::new();
        for path in kept {
            match remove_tree(&path) {
                Ok(()) => {
                    tracing::info!(folder = %path.display(), "removed a run's submission folder on retry");
                    removed += 1;
                }
                Err(e) => {
                    tracing::debug!(folder = %path.display(), error = %e, "a run's submission folder still resists removal");
                    still.push(path);
                }
            }
        }
        crate::sync::lock(&self.0).extend(still);
        removed
    }

    /// The folders kept for another try.
    #[cfg(test)]
    pub fn kept(&self) -> Vec<PathBuf> {
        crate::sync::lock(&self.0).clone()
    }
}

/// A run's submission folder; removed when dropped, or kept in its [`Leftovers`] for another
/// try if that fails.
#[derive(Debug)]
pub struct SubmissionFolder {
    path: PathBuf,
    quota: Quota,
    leftovers: Leftovers,
}

/// Whether this process may mount (a root evaluator).
fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

impl SubmissionFolder {
    /// Creates `<state>/submissions/<run_id>/` (0700, never reused, through no link), as a
    /// tmpfs of `max_submission_bytes` + slack when root. Fails, leaving nothing, if the
    /// folder cannot be made. A removal that fails when it is dropped keeps the folder in
    /// `leftovers`.
    pub fn create(
        state_dir: &Path,
        run_id: &RunId,
        max_submission_bytes: u64,
        leftovers: &Leftovers,
    ) -> Result<SubmissionFolder, PrivateFileError> {
        ensure_private_dir(&layout::submissions_dir(state_dir))?;
        let path = layout::run_submission_dir(state_dir, run_id);
        create_private_dir(&path)?;
        let quota = if is_root() {
            match mount_quota(&path, max_submission_bytes) {
                Ok(()) => Quota::Tmpfs,
                Err(e) => {
                    tracing::warn!(
                        folder = %path.display(),
                        error = %e,
                        "cannot mount a tmpfs on a submission folder; its size is not bounded \
                         by the filesystem"
                    );
                    Quota::PlainFolder
                }
            }
        } else {
            Quota::PlainFolder
        };
        Ok(SubmissionFolder {
            path,
            quota,
            leftovers: leftovers.clone(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn quota(&self) -> Quota {
        self.quota
    }
}

impl Drop for SubmissionFolder {
    fn drop(&mut self) {
        if let Err(e) = remove_tree(&self.path) {
            tracing::warn!(
                folder = %self.path.display(),
                error = %e,
                "cannot remove a run's submission folder yet (its agent may still be writing); \
                 it is removed again later"
            );
            self.leftovers.keep(std::mem::take(&mut self.path));
        }
    }
}

fn mount_quota(path: &Path, max_submission_bytes: u64) -> nix::Result<()> {
    use nix::mount::{MsFlags, mount};
    let size = max_submission_bytes.saturating_add(QUOTA_SLACK_BYTES);
    let options = format!("size={size},nr_inodes={QUOTA_INODES},mode=0700,uid=0,gid=0");
    mount(
        Some("ale-submission"),
        path,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some(options.as_str()),
    )
}

/// Whether `path` (a directory, not followed if a link) is a mount point: it lies on another
/// filesystem than its parent.
fn is_mount_point(path: &Path, metadata: &std::fs::Metadata) -> io::Result<bool> {
    let Some(parent) = path.parent() else {
        return Ok(false);
    };
    Ok(std::fs::symlink_metadata(parent)?.dev() != metadata.dev())
}

/// Removes what is at `path`, through no link: a link or a file is unlinked, a folder is
/// unmounted first if a filesystem is mounted on it (lazily, so an agent still inside cannot
/// keep it), then removed with all it holds (`remove_dir_all` follows no link inside).
/// Nothing there is not an error.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !metadata.file_type().is_dir() {
        return std::fs::remove_file(path);
    }
    if is_mount_point(path, &metadata)? {
        use nix::mount::{MntFlags, umount2};
        umount2(path, MntFlags::MNT_DETACH | MntFlags::UMOUNT_NOFOLLOW).map_err(io::Error::from)?;
    }
    match remove_dir_flat(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// The most entries [`remove_dir_flat`] unlinks or moves in one call: a folder an agent is
/// still filling is left for a retry rather than chased for ever.
const MAX_REMOVAL_STEPS: u64 = 10_000_000;

/// Removes the folder `path` and everything in it, through no link, whatever its depth: with
/// two descriptors at a time and no recursion (a folder nested 30,000 deep overflowed the
/// stack of `std::fs::remove_dir_all` and took the evaluator with it). Files go at once; a
/// subfolder that is not empty has its entries moved up into `path` under fresh names, so each
/// pass takes one level off every branch.
fn remove_dir_flat(path: &Path) -> io::Result<()> {
    use nix::dir::{Dir, Type};
    use nix::errno::Errno;
    use nix::fcntl::{AtFlags, OFlag, RenameFlags, openat, renameat2};
    use nix::sys::stat::{Mode, SFlag, fstatat};
    use nix::unistd::{UnlinkatFlags, unlinkat};
    use std::os::fd::{AsFd, AsRawFd};

    let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    let mut top = Dir::open(path, flags, Mode::empty()).map_err(io::Error::from)?;
    let top_fd = top.as_raw_fd();
    // SAFETY: the descriptor is `top`'s, which outlives every use of this borrow.
    let top_dir = unsafe { std::os::fd::BorrowedFd::borrow_raw(top_fd) };
    let is_dir = |dir: std::os::fd::BorrowedFd<'_>, name: &std::ffi::CStr, t: Option<Type>| match t
    {
        Some(t) => Ok(t == Type::Directory),
        None => fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)
            .map(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR),
    };
    let mut steps = 0u64;
    let mut fresh = 0u64;
    loop {
        let mut subfolders = Vec::new();
        for entry in top.iter() {
            let entry = entry.map_err(io::Error::from)?;
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            steps += 1;
            if is_dir(top_dir, name, entry.file_type()).map_err(io::Error::from)? {
                subfolders.push(name.to_owned());
            } else {
                match unlinkat(top_dir, name, UnlinkatFlags::NoRemoveDir) {
                    Ok(()) | Err(Errno::ENOENT) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        if subfolders.is_empty() {
            break;
        }
        for name in subfolders {
            match unlinkat(top_dir, name.as_c_str(), UnlinkatFlags::RemoveDir) {
                Ok(()) | Err(Errno::ENOENT) => continue,
                Err(Errno::ENOTEMPTY | Errno::EEXIST) => {}
                Err(e) => return Err(e.into()),
            }
            let sub_fd =
                openat(top_dir, name.as_c_str(), flags, Mode::empty()).map_err(io::Error::from)?;
            let mut sub = Dir::from_fd(sub_fd).map_err(io::Error::from)?;
            let names: Vec<std::ffi::CString> = sub
                .iter()
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_owned())
                .filter(|n| n.as_c_str() != c"." && n.as_c_str() != c"..")
                .collect();
            for inner in names {
                steps += 1;
                loop {
                    let target = std::ffi::CString::new(format!(".ale-removing-{fresh}"))
                        .expect("no NUL in a formatted number");
                    fresh += 1;
                    match renameat2(
                        sub.as_fd(),
                        inner.as_c_str(),
                        top_dir,
                        target.as_c_str(),
                        RenameFlags::RENAME_NOREPLACE,
                    ) {
                        Ok(()) | Err(Errno::ENOENT) => break,
                        Err(Errno::EEXIST) => continue,
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        if steps > MAX_REMOVAL_STEPS {
            return Err(io::Error::other(format!(
                "{} still changes after {MAX_REMOVAL_STEPS} removals; left for a retry",
                path.display()
            )));
        }
    }
    drop(top);
    std::fs::remove_dir(path)
}

/// Removes every entry of `dir` (see [`remove_tree`]); at start, when no run is live. A
/// missing `dir` is nothing to do. Returns how many entries went.
pub fn remove_all_entries(dir: &Path) -> io::Result<usize> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries {
        let path = entry?.path();
        match remove_tree(&path) {
            Ok(()) => removed += 1,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove a stale entry")
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::seeds::random_id_bytes;

    fn state() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        ensure_private_dir(&state).unwrap();
        (tmp, state)
    }

    /// Regression: `remove_dir_all` recursed, and a submission nested 30,000 folders deep
    /// overflowed the stack of the thread that ended its run, aborting the evaluator.
    #[test]
    fn a_folder_nested_deeper_than_any_stack_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("deep");
        std::fs::create_dir(&top).unwrap();
        // Built with *at calls: the path grows past PATH_MAX long before the bottom.
        let mut fd = nix::fcntl::open(
            &top,
            nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_RDONLY,
            nix::sys::stat::Mode::empty(),
        )
        .unwrap();
        for level in 0..30_000 {
            nix::sys::stat::mkdirat(&fd, "d", nix::sys::stat::Mode::from_bits_truncate(0o700))
                .unwrap();
            if level % 1000 == 0 {
                std::fs::write(
                    format!("/proc/self/fd/{}/f", std::os::fd::AsRawFd::as_raw_fd(&fd)),
                    b"x",
                )
                .unwrap();
            }
            fd = nix::fcntl::openat(
                &fd,
                "d",
                nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_RDONLY,
                nix::sys::stat::Mode::empty(),
            )
            .unwrap();
        }
        drop(fd);
        // On a small stack, as the batch threads have.
        let path = top.clone();
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || remove_tree(&path).unwrap())
            .unwrap()
            .join()
            .unwrap();
        assert!(!top.exists());
    }

    #[test]
    fn a_tree_with_links_files_and_folders_goes_and_no_link_is_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), b"not the run's").unwrap();
        let top = tmp.path().join("tree");
        std::fs::create_dir_all(top.join("a/b/c")).unwrap();
        std::fs::create_dir_all(top.join("x")).unwrap();
        std::fs::write(top.join("a/b/c/file"), b"1").unwrap();
        std::fs::write(top.join("a/.ale-removing-0"), b"a name the removal uses").unwrap();
        std::os::unix::fs::symlink(&outside, top.join("a/b/link")).unwrap();
        std::os::unix::fs::symlink(&outside, top.join("x/link")).unwrap();
        remove_tree(&top).unwrap();
        assert!(!top.exists());
        assert!(outside.join("keep").exists(), "a link was followed");
    }

    #[test]
    fn a_folder_is_private_never_reused_and_gone_when_dropped() {
        let (_tmp, state) = state();
        let run = RunId::from_random(random_id_bytes());
        let folder =
            SubmissionFolder::create(&state, &run, 1 << 20, &Leftovers::default()).unwrap();
        let path = folder.path().to_path_buf();
        assert_eq!(path, layout::run_submission_dir(&state, &run));
        assert_eq!(
            std::fs::metadata(&path).unwrap().mode() & 0o777,
            0o700,
            "{path:?}"
        );
        assert!(SubmissionFolder::create(&state, &run, 1 << 20, &Leftovers::default()).is_err());
        std::fs::write(path.join("policy.safetensors"), b"x").unwrap();
        std::fs::create_dir(path.join("sub")).unwrap();
        std::fs::write(path.join("sub/deeper"), b"y").unwrap();
        drop(folder);
        assert!(!path.exists());
    }

    #[test]
    fn removal_follows_no_link() {
        let (tmp, state) = state();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), b"k").unwrap();
        let run = RunId::from_random(random_id_bytes());
        let folder =
            SubmissionFolder::create(&state, &run, 1 << 20, &Leftovers::default()).unwrap();
        std::os::unix::fs::symlink(&outside, folder.path().join("link")).unwrap();
        drop(folder);
        assert!(outside.join("keep").exists());

        // A link in place of an entry is unlinked, never followed.
        let link = tmp.path().join("entry");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        remove_tree(&link).unwrap();
        assert!(outside.join("keep").exists());
        assert!(std::fs::symlink_metadata(&link).is_err());
    }

    /// Regression: a folder whose removal failed (an agent still creating files in it) stayed
    /// on the state disk until the next start.
    #[test]
    fn a_folder_that_resists_removal_is_kept_and_goes_on_retry() {
        let (_tmp, state) = state();
        let run = RunId::from_random(random_id_bytes());
        let leftovers = Leftovers::default();
        let folder = SubmissionFolder::create(&state, &run, 1 << 20, &leftovers).unwrap();
        let path = folder.path().to_path_buf();
        std::fs::write(path.join("policy.safetensors"), b"x").unwrap();
        // What makes one removal fail: as root, a second filesystem stacked on the folder (one
        // unmount leaves a mount point, which rmdir refuses); otherwise a folder inside whose
        // entries this user may not remove, until it may.
        let sub = path.join("sub");
        let stacked = folder.quota() == Quota::Tmpfs
            && nix::mount::mount(
                Some("ale-test"),
                &path,
                Some("tmpfs"),
                nix::mount::MsFlags::empty(),
                Some("size=64k"),
            )
            .is_ok();
        if !stacked && is_root() {
            eprintln!("root, but this machine refused the mount: nothing to test");
            return;
        }
        if !stacked {
            std::fs::create_dir(&sub).unwrap();
            std::fs::write(sub.join("file"), b"x").unwrap();
            std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o500)).unwrap();
        }
        drop(folder);
        assert!(path.exists(), "the removal failed");
        assert_eq!(leftovers.kept(), vec![path.clone()]);
        if !stacked {
            assert_eq!(leftovers.retry(), 0, "it still resists");
            assert_eq!(leftovers.kept(), vec![path.clone()]);
            std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        assert_eq!(leftovers.retry(), 1);
        assert!(std::fs::symlink_metadata(&path).is_err(), "gone");
        assert!(leftovers.kept().is_empty());
        assert_eq!(leftovers.retry(), 0);
    }

    #[test]
    fn as_root_the_filesystem_enforces_the_quota() {
        if !is_root() {
            eprintln!("not root: the submission folder is a plain folder, no tmpfs to test");
            return;
        }
        let (_tmp, state) = state();
        let run = RunId::from_random(random_id_bytes());
        let cap = 256 << 10;
        let folder = SubmissionFolder::create(&state, &run, cap, &Leftovers::default()).unwrap();
        if folder.quota() != Quota::Tmpfs {
            eprintln!("root, but this machine refused the mount: nothing to test");
            return;
        }
        let path = folder.path().to_path_buf();
        use std::io::Write;
        let mut file = std::fs::File::create(path.join("filler")).unwrap();
        let chunk = vec![7u8; 64 << 10];
        let mut written = 0u64;
        let err = loop {
            match file.write_all(&chunk) {
                Ok(()) => written += chunk.len() as u64,
                Err(e) => break e,
            }
            assert!(written <= cap + QUOTA_SLACK_BYTES, "wrote {written} bytes");
        };
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
        assert!(written >= cap, "the cap itself fits: {written}");
        drop(file);
        drop(folder);
        assert!(!path.exists(), "unmounted and removed");
    }
}
