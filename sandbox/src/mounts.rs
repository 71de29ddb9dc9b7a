//! The mount table, read to find every path at which a hidden folder is reachable: the harness
//! reads it to refuse a `--workdir` or `--expose` that would lay one bare, and the launcher to
//! mask each such path in the sandbox.

use std::ffi::CString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

/// One line of `/proc/self/mountinfo`: which filesystem (device, type), which folder of it
/// (root), and where it is mounted.
pub(super) struct MountEntry {
    id: u64,
    device: (u64, u64),
    root: PathBuf,
    point: PathBuf,
    fstype: String,
}

/// Filesystems that hold the kernel's and running programs' state (processes, devices, IPC,
/// control files) rather than files.
const RUNTIME_FILESYSTEMS: &[&str] = &[
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "mqueue",
    "cgroup",
    "cgroup2",
    "debugfs",
    "tracefs",
    "securityfs",
    "bpf",
    "configfs",
    "fusectl",
    "pstore",
    "efivarfs",
    "binfmt_misc",
    "nsfs",
];

/// `path` (absolute, without `..`) as seen under `root`: where the host's tree is, for a
/// process whose own root is elsewhere (the launcher, with the host's root at `/oldroot`).
pub(super) fn seen_under(root: &Path, path: &Path) -> Result<PathBuf, String> {
    if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "{} is not an absolute path without `..`",
            path.display()
        ));
    }
    let relative: PathBuf = path
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    Ok(root.join(relative))
}

/// The mounts of this process's mount namespace, as seen from its current root, with the
/// host's `/proc` under `host_root`. Read as bytes: a mount point's name need not be UTF-8.
pub(super) fn read_mounts(host_root: &Path) -> Result<Vec<MountEntry>, String> {
    let file = host_root.join("proc/self/mountinfo");
    let bytes = std::fs::read(&file).map_err(|e| format!("read {}: {e}", file.display()))?;
    Ok(bytes
        .split(|&b| b == b'\n')
        .filter_map(parse_mount_line)
        .collect())
}

fn parse_mount_line(line: &[u8]) -> Option<MountEntry> {
    let mut fields = line.split(|&b| b == b' ');
    let id = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
    let _parent = fields.next()?;
    let (major, minor) = std::str::from_utf8(fields.next()?).ok()?.split_once(':')?;
    let (root, point) = (fields.next()?, fields.next()?);
    // Mount options, optional fields, then `-` and the filesystem's type.
    let fstype = fields.skip_while(|f| *f != b"-").nth(1)?;
    Some(MountEntry {
        id,
        device: (major.parse().ok()?, minor.parse().ok()?),
        root: PathBuf::from(unescape_mount_path(root)),
        point: PathBuf::from(unescape_mount_path(point)),
        fstype: String::from_utf8_lossy(fstype).into_owned(),
    })
}

/// mountinfo writes space, tab, newline and backslash in paths as `\ooo` octal escapes.
fn unescape_mount_path(bytes: &[u8]) -> std::ffi::OsString {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            std::str::from_utf8(d)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    std::ffi::OsString::from_vec(out)
}

/// The id of the mount `path` is on (mountinfo's first field), from statx(2).
fn mount_id(path: &Path) -> Result<u64, String> {
    let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|e| format!("path: {e}"))?;
    // SAFETY: statx is plain data; all-zero is a valid value.
    let mut buf: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a properly sized statx buffer.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c_path.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_MNT_ID,
            &mut buf,
        )
    };
    if rc != 0 {
        return Err(format!(
            "statx {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    if buf.stx_mask & libc::STATX_MNT_ID == 0 {
        return Err(format!(
            "cannot tell which mount {} is on (statx without STATX_MNT_ID: Linux < 5.8)",
            path.display()
        ));
    }
    Ok(buf.stx_mnt_id)
}

/// The paths under `within` (as this process sees them) at which the hidden `folder` (seen at
/// `seen`, under the host root the mounts were read with) is reachable, found through the
/// mounts of its filesystem: a mount whose root holds the folder shows it at the matching path
/// (checked by device and inode); a mount whose root lies inside the folder shows part of it
/// at its mount point.
pub(super) fn reachable_paths(
    folder: &Path,
    seen: &Path,
    meta: &std::fs::Metadata,
    mounts: &[MountEntry],
    within: &Path,
) -> Result<Vec<PathBuf>, String> {
    use std::os::unix::fs::MetadataExt;
    let id = mount_id(seen)?;
    let containing = mounts.iter().rev().find(|m| m.id == id).ok_or_else(|| {
        format!(
            "cannot hide {}: its mount is missing from the mount table",
            folder.display()
        )
    })?;
    let inside_mount = seen.strip_prefix(&containing.point).map_err(|_| {
        format!(
            "cannot hide {}: it is not under its own mount point",
            folder.display()
        )
    })?;
    let in_filesystem = containing.root.join(inside_mount);
    let mut paths = Vec::new();
    for m in mounts.iter().filter(|m| m.device == containing.device) {
        if let Ok(rest) = in_filesystem.strip_prefix(&m.root) {
            let candidate = m.point.join(rest);
            let same = std::fs::symlink_metadata(&candidate)
                .is_ok_and(|found| found.dev() == meta.dev() && found.ino() == meta.ino());
            if same && candidate.starts_with(within) {
                paths.push(candidate);
            }
        } else if m.root.starts_with(&in_filesystem) && m.point.starts_with(within) {
            if !std::fs::symlink_metadata(&m.point).is_ok_and(|found| found.is_dir()) {
                return Err(format!(
                    "cannot hide {}: a file inside it is mounted at {}",
                    folder.display(),
                    m.point.display()
                ));
            }
            paths.push(m.point.clone());
        }
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Every path at which `folder` (a host path, or a part of it) is reachable in this process's
/// own view of the filesystem: the folder itself and its other mounts. Empty when it does not
/// exist.
pub(super) fn aliases(folder: &Path, mounts: &[MountEntry]) -> Result<Vec<PathBuf>, String> {
    let meta = match std::fs::symlink_metadata(folder) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot inspect {}: {e}", folder.display())),
    };
    let mut paths = reachable_paths(folder, folder, &meta, mounts, Path::new("/"))?;
    paths.push(folder.to_path_buf());
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// A mount strictly inside `dir` of a filesystem of the kernel's or running programs' state
/// (a `proc` mounted in a chroot, say), and its type.
pub(super) fn runtime_mount_within(mounts: &[MountEntry], dir: &Path) -> Option<(PathBuf, String)> {
    mounts
        .iter()
        .find(|m| {
            m.point.starts_with(dir)
                && m.point != dir
                && RUNTIME_FILESYSTEMS.contains(&m.fstype.as_str())
        })
        .map(|m| (m.point.clone(), m.fstype.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_are_read_with_their_escapes() {
        let line =
            b"36 35 98:0 /mnt\\0401 /new\\134root/srv rw,noatime master:1 - ext3 /dev/root rw";
        let entry = parse_mount_line(line).unwrap();
        assert_eq!(entry.id, 36);
        assert_eq!(entry.device, (98, 0));
        assert_eq!(entry.root, Path::new("/mnt 1"));
        assert_eq!(entry.point, Path::new("/new\\root/srv"));
        assert_eq!(entry.fstype, "ext3");
        assert!(parse_mount_line(b"garbage").is_none());
        // A name that is not UTF-8 is kept as bytes.
        let entry = parse_mount_line(b"7 1 0:5 / /newroot/x\xff rw - tmpfs t rw").unwrap();
        assert_eq!(entry.point.as_os_str().as_bytes(), b"/newroot/x\xff");
    }

    #[test]
    fn paths_are_seen_under_another_root_only_without_dot_dot() {
        assert_eq!(
            seen_under(Path::new("/oldroot"), Path::new("/a/b")).unwrap(),
            Path::new("/oldroot/a/b")
        );
        assert!(seen_under(Path::new("/"), Path::new("/a/../b")).is_err());
        assert!(seen_under(Path::new("/"), Path::new("a")).is_err());
    }
}
