//! Disk space set aside ahead of a write, so that a record can be finished on a disk that others
//! have filled meanwhile, and given back once the record is whole.

/// Sets aside `len` bytes of disk for `file` from `offset` on without changing its size
/// (`fallocate(FALLOC_FL_KEEP_SIZE)`): later writes there land in blocks already allocated,
/// so they succeed on a disk that others have filled meanwhile. Fails with the OS's error
/// (`ENOSPC` when the disk cannot hold it; `EOPNOTSUPP` where the filesystem cannot
/// reserve).
pub fn reserve_space(file: &std::fs::File, offset: u64, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let offset = libc::off_t::try_from(offset).map_err(std::io::Error::other)?;
    let len = libc::off_t::try_from(len).map_err(std::io::Error::other)?;
    if len == 0 {
        return Ok(());
    }
    // SAFETY: fallocate reads only its integer arguments; the descriptor is the file's.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, len) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Gives back what [`reserve_space`] set aside past the end of `file` and was not used: the
/// blocks past its end are freed (by a truncate to its own length); its bytes and size do not
/// change.
/// For a file that is written whole.
pub fn release_unused_space(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let metadata = file.metadata()?;
    if metadata.blocks().saturating_mul(512) <= metadata.len() {
        return Ok(());
    }
    // Truncating to its own length frees what lies past the end (ext4, XFS and tmpfs alike);
    // punching a hole there is a no-op on ext4, which keeps such blocks until a truncate.
    file.set_len(metadata.len())
}

#[cfg(test)]
mod tests {
    #[test]
    fn unused_reserved_space_goes_back_on_the_disk_the_tests_run_on() {
        use std::io::Write;
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let mut file = std::fs::File::create(dir.path().join("record")).unwrap();
        file.write_all(&[b'x'; 100]).unwrap();
        super::reserve_space(&file, 0, 1 << 20).unwrap();
        let allocated = |file: &std::fs::File| file.metadata().unwrap().blocks() * 512;
        if allocated(&file) < 1 << 20 {
            eprintln!("skipped: this filesystem reserved no space");
            return;
        }
        super::release_unused_space(&file).unwrap();
        assert!(allocated(&file) <= 4096, "{} bytes kept", allocated(&file));
        assert_eq!(file.metadata().unwrap().len(), 100);
    }
}
