//! The host's top-level folders and files in the new root: bound read-only, `nosuid`,
//! `nodev`, at their own names; links copied as links. The folders the sandbox replaces with
//! its own (`PRIVATE_TOP_LEVEL`, see `private`) are left out.

use std::ffi::OsStr;
use std::path::Path;

use super::syscalls::EntryKind;
use super::{NEWROOT, OLDROOT, Syscalls};
use crate::PRIVATE_TOP_LEVEL;
use crate::setup::{Setup, fail};

/// Binds the host's top-level entries into the new root, read-only.
pub(super) fn bind_host_top_level(sys: &mut impl Syscalls) -> Setup<()> {
    let oldroot = Path::new(OLDROOT);
    let newroot = Path::new(NEWROOT);
    for entry in sys.read_host_root()? {
        let name = entry.name;
        if PRIVATE_TOP_LEVEL.iter().any(|p| name == OsStr::new(p)) {
            continue;
        }
        let source = oldroot.join(&name);
        let target = newroot.join(&name);
        match entry.kind {
            EntryKind::Link => {
                let link = sys
                    .read_link(&source)
                    .map_err(fail(format!("readlink {}", source.display())))?;
                sys.symlink(&link, &target)
                    .map_err(fail(format!("symlink {}", target.display())))?;
                continue;
            }
            EntryKind::Folder => sys.mkdir(&target, 0o755)?,
            EntryKind::File => sys.touch(&target)?,
        }
        sys.bind(&source, &target)?;
        sys.make_read_only_recursively(&target)?;
    }
    Ok(())
}
