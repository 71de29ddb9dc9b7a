//! [`ChainWriter`]: appends sealed events to a chained file on disk.

use serde::Serialize;

use super::canonical::PreparedData;
use super::chain::Chain;
use super::event::{EventKind, Level};
use crate::disk_space::{release_unused_space, reserve_space};

/// Appends sealed events of one level to a chained file, each reaching the OS before `append`
/// returns.
///
/// The file only ever ends on a whole line: a write the disk refuses part-way (full, over a
/// size limit) is cut back to the last line that was written whole, so what stays on disk is a
/// valid prefix of the chain, never a torn line.
#[derive(Debug)]
pub struct ChainWriter {
    file: std::fs::File,
    /// Sealed lines not yet handed to the OS (only while buffered).
    pending: Vec<u8>,
    /// How many bytes of the file are whole lines handed to the OS.
    written: u64,
    /// Whether lines may wait in memory (see [`ChainWriter::set_buffered`]).
    buffered: bool,
    /// A write or flush failed: what reached the file is a valid prefix of the chain, and
    /// nothing more is written (a retry could put a line twice).
    failed: bool,
    chain: Chain,
    level: Level,
    /// A signed event was written: the record is closed.
    signed: bool,
}

/// How many sealed bytes a buffered writer keeps in memory before it hands them to the OS.
const BUFFER_BYTES: usize = 64 << 10;

impl ChainWriter {
    /// Starts a new chained file at `path` (0600); fails if anything, even a link, is there
    /// (see [`crate::private_files::create_private_file`]).
    pub fn create(path: &std::path::Path, level: Level) -> std::io::Result<ChainWriter> {
        let file = crate::private_files::create_private_file(path, 0o600)?;
        Ok(ChainWriter {
            file,
            pending: Vec::with_capacity(BUFFER_BYTES),
            written: 0,
            buffered: false,
            failed: false,
            chain: Chain::new(),
            level,
            signed: false,
        })
    }

    /// Seals and writes one event; returns its hash. A failed write or flush ends the record:
    /// the chain does not advance, and every later append or flush fails, so no line can be
    /// written twice.
    pub fn append(&mut self, kind: EventKind, data: &impl Serialize) -> std::io::Result<String> {
        self.append_with(kind, data, None)
    }

    /// Seals, signs and writes the record's last event; returns its hash. Nothing can be
    /// appended after it.
    pub fn append_signed(
        &mut self,
        kind: EventKind,
        data: &impl Serialize,
        key: &ed25519_dalek::SigningKey,
    ) -> std::io::Result<String> {
        self.append_with(kind, data, Some(key))
    }

    /// Seals and writes one event whose data was serialised beforehand; returns its hash.
    pub fn append_prepared(
        &mut self,
        kind: EventKind,
        data: &PreparedData,
    ) -> std::io::Result<String> {
        self.append_data(kind, data, None)
    }

    /// [`ChainWriter::append_signed`] of data serialised beforehand.
    pub fn append_signed_prepared(
        &mut self,
        kind: EventKind,
        data: &PreparedData,
        key: &ed25519_dalek::SigningKey,
    ) -> std::io::Result<String> {
        self.append_data(kind, data, Some(key))
    }

    fn append_with(
        &mut self,
        kind: EventKind,
        data: &impl Serialize,
        key: Option<&ed25519_dalek::SigningKey>,
    ) -> std::io::Result<String> {
        let data = PreparedData::new(data).map_err(std::io::Error::other)?;
        self.append_data(kind, &data, key)
    }

    fn append_data(
        &mut self,
        kind: EventKind,
        data: &PreparedData,
        key: Option<&ed25519_dalek::SigningKey>,
    ) -> std::io::Result<String> {
        if self.signed {
            return Err(std::io::Error::other(
                "the record is signed and closed; nothing can be appended to it",
            ));
        }
        self.check_not_failed()?;
        let mut chain = self.chain.clone();
        let (line, hash) = chain.seal_with(self.level, kind, crate::now_unix_ms(), data, key);
        self.pending.extend_from_slice(line.as_bytes());
        self.pending.push(b'\n');
        if !self.buffered || key.is_some() || self.pending.len() >= BUFFER_BYTES {
            self.flush()?;
        }
        self.chain = chain;
        self.signed = key.is_some();
        Ok(hash)
    }

    /// Whether appended lines may wait in memory until [`ChainWriter::flush`], a full buffer
    /// or the signed last event: for a writer that appends thousands of events a second that
    /// no RPC waits for (a batch run's rollouts). Unbuffered, the default, every line reaches
    /// the OS before `append` returns.
    pub fn set_buffered(&mut self, buffered: bool) -> std::io::Result<()> {
        self.buffered = buffered;
        self.flush()
    }

    /// Hands every line written so far to the OS. If the OS takes only part of them, the file
    /// is cut back to the lines it held before, and the record is closed.
    pub fn flush(&mut self) -> std::io::Result<()> {
        use std::io::Write;
        self.check_not_failed()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        match (&self.file).write_all(&self.pending) {
            Ok(()) => {
                self.written += self.pending.len() as u64;
                self.pending.clear();
                Ok(())
            }
            Err(e) => {
                self.failed = true;
                self.pending.clear();
                // Shrinking needs no space, so it works on a full disk too. Should it fail
                // anyway, the torn line stays and verification reports it.
                let _ = self.file.set_len(self.written);
                Err(e)
            }
        }
    }

    fn check_not_failed(&self) -> std::io::Result<()> {
        if self.failed {
            return Err(std::io::Error::other(
                "an earlier write of this record failed; nothing more is written to it",
            ));
        }
        Ok(())
    }

    /// Sets aside `bytes` of disk past what the file holds now, without changing its size
    /// (`fallocate(FALLOC_FL_KEEP_SIZE)`): later appends land in blocks already allocated, so
    /// they succeed on a disk that others have filled meanwhile. Fails with the OS's error
    /// (`ENOSPC` when the disk cannot hold it; `EOPNOTSUPP` where the filesystem cannot
    /// reserve).
    pub fn reserve(&self, bytes: u64) -> std::io::Result<()> {
        reserve_space(&self.file, self.written, bytes)
    }

    /// Gives back the disk [`ChainWriter::reserve`] set aside and the record did not use: for
    /// a file whose last event is written (see [`release_unused_space`]).
    pub fn release_reserve(&mut self) -> std::io::Result<()> {
        self.flush()?;
        release_unused_space(&self.file)
    }

    /// Forces everything written so far to stable storage.
    pub fn sync(&mut self) -> std::io::Result<()> {
        self.flush()?;
        self.file.sync_data()
    }

    pub fn head(&self) -> String {
        self.chain.head()
    }
}
