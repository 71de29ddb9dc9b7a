//! Writes a run's hash-chained trajectory: every trusted event reaches the OS before the RPC
//! that caused it answers.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use ale_proto::trajectory::{Chain, EventKind, Level, TRAJECTORY_FILE};
use serde::Serialize;

#[derive(Debug)]
pub struct TrajectoryWriter {
    file: File,
    chain: Chain,
}

fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl TrajectoryWriter {
    /// Starts a new trajectory in `run_dir` (created 0700); fails if one exists there.
    pub fn create(run_dir: &Path) -> std::io::Result<Self> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(run_dir)?;
        let path = run_dir.join(TRAJECTORY_FILE);
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        Ok(TrajectoryWriter {
            file,
            chain: Chain::new(),
        })
    }

    /// Seals and writes one trusted event; returns its hash.
    pub fn append(&mut self, kind: EventKind, data: &impl Serialize) -> std::io::Result<String> {
        let data = serde_json::to_value(data).map_err(std::io::Error::other)?;
        // Seal a copy first so a failed write leaves the chain where the file is.
        let mut chain = self.chain.clone();
        let (mut line, hash) = chain.seal(Level::TrustedEvaluator, kind, now_unix_ms(), data);
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.chain = chain;
        Ok(hash)
    }

    /// Forces everything written so far to stable storage.
    pub fn sync(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    pub fn head(&self) -> String {
        self.chain.head()
    }
}
