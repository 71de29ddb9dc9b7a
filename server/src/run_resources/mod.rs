//! What an official run holds beside its env: its submission folder (batch tasks) and its own
//! agent channel (when the evaluator serves listeners). Both are made before `CreateEnv`
//! answers and released once: when the run ends (its session finished, whichever way), or
//! else when its env is dropped. A run that ends marks its scope ended in the env table, so
//! no practice env is made over its channel while the channel lingers; the channel drops those
//! made again when its listener finally closes. A folder whose removal fails is kept in the
//! evaluator's [`Leftovers`] and removed again later. At start, whatever an earlier evaluator
//! left is removed (see [`remove_stale`]).

pub(crate) mod submission_folder;

use std::path::Path;
use std::sync::{Mutex, Weak};

use ale_proto::RunId;
use ale_records::layout;

use crate::channel::RunScope;
use crate::env_table::EnvTable;
use crate::error::Error;
use crate::sync::lock;
use submission_folder::{Leftovers, SubmissionFolder};

/// A run's own agent channel, as the listeners' side keeps it open.
pub trait RunChannel: Send + Sync {
    /// Stops it: the socket file goes, the listener closes and its connections are dropped.
    /// `run_ended`: the run has ended, so its connections may first finish the answers in
    /// flight and read the final status for the linger time; otherwise (the env is dropped)
    /// at once.
    fn close(&mut self, run_ended: bool);
}

/// Opens runs' agent channels: set by the listeners' side (`serve::start_with`) on the
/// evaluator it serves; an evaluator used in-process has none, and its runs no channel.
pub trait RunChannels: Send + Sync {
    /// Listens on `socket` for `run`'s agent; the listener is bound before this returns. Once
    /// the listener has closed and its connections are gone, the channel tells the evaluator
    /// ([`crate::Evaluator::run_channel_closed`]).
    fn open(&self, run: RunScope, socket: &Path) -> Result<Box<dyn RunChannel>, Error>;
}

/// A run's folder and channel; see the module.
pub struct RunResources {
    run: RunScope,
    run_id: RunId,
    submission: Option<SubmissionFolder>,
    channel: Option<Box<dyn RunChannel>>,
    envs: Weak<Mutex<EnvTable>>,
}

impl std::fmt::Debug for RunResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunResources")
            .field("run", &self.run)
            .field("run_id", &self.run_id)
            .field("submission", &self.submission)
            .field("channel", &self.channel.is_some())
            .finish()
    }
}

/// What [`RunResources::open`] needs.
pub struct RunSetup<'a> {
    pub state_dir: &'a Path,
    pub run: RunScope,
    pub run_id: &'a RunId,
    /// `Some(cap)` for a batch task: its folder is made, sized to the cap.
    pub submission_cap: Option<u64>,
    pub channels: Option<&'a dyn RunChannels>,
    pub envs: Weak<Mutex<EnvTable>>,
    /// Where a folder whose removal fails is kept for another try.
    pub leftovers: &'a Leftovers,
}

impl RunResources {
    /// Makes the run's folder and opens its channel. On failure nothing is left: what was
    /// made is removed again.
    pub fn open(setup: RunSetup<'_>) -> Result<RunResources, Error> {
        let mut resources = RunResources {
            run: setup.run,
            run_id: setup.run_id.clone(),
            submission: None,
            channel: None,
            envs: setup.envs,
        };
        if let Some(cap) = setup.submission_cap {
            let folder =
                SubmissionFolder::create(setup.state_dir, setup.run_id, cap, setup.leftovers)
                    .map_err(|cause| Error::SubmissionFolder {
                        path: layout::run_submission_dir(setup.state_dir, setup.run_id),
                        cause,
                    })?;
            tracing::debug!(run = %setup.run_id, folder = %folder.path().display(), quota = ?folder.quota(), "submission folder made");
            resources.submission = Some(folder);
        }
        if let Some(channels) = setup.channels {
            let socket = layout::run_agent_socket(setup.state_dir, setup.run_id);
            resources.channel = Some(channels.open(setup.run, &socket)?);
        }
        Ok(resources)
    }

    /// Whether the run has its own agent channel.
    pub fn has_channel(&self) -> bool {
        self.channel.is_some()
    }

    /// The run has ended: no practice env is made over its channel from now on and those made
    /// are dropped; its folder goes now (or is kept for another try), its channel after the
    /// linger time.
    pub fn end(mut self) {
        tracing::debug!(run = %self.run_id, "the run ended; releasing its folder and channel");
        if let Some(envs) = self.envs.upgrade() {
            lock(&envs).end_run(self.run);
        }
        self.submission = None;
        if let Some(mut channel) = self.channel.take() {
            channel.close(true);
        }
    }
}

impl Drop for RunResources {
    fn drop(&mut self) {
        // The folder removes itself. The run's practice envs go with its env's slot.
        if let Some(mut channel) = self.channel.take() {
            channel.close(false);
        }
    }
}

/// The one submission folder all batch runs shared in older versions, `<state>/submission`:
/// named here only to remove it.
const OLD_SHARED_SUBMISSION_DIR: &str = "submission";

/// Removes every run's folder and socket an earlier evaluator left (`submissions/*`,
/// `agents/*`) and the shared submission folder of older versions (`submission/`), and makes
/// sure `submissions/` and `agents/` exist (0700). Call it only once this evaluator is the
/// state dir's only one: no run is live then.
pub fn remove_stale(state_dir: &Path) -> Result<(), ale_records::private_files::PrivateFileError> {
    use ale_records::private_files::ensure_private_dir;
    for dir in [
        layout::submissions_dir(state_dir),
        layout::run_agent_sockets_dir(state_dir),
    ] {
        ensure_private_dir(&dir)?;
        match submission_folder::remove_all_entries(&dir) {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(dir = %dir.display(), removed = n, "removed what ended runs left")
            }
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot list ended runs' leftovers")
            }
        }
    }
    let old = state_dir.join(OLD_SHARED_SUBMISSION_DIR);
    if let Err(e) = submission_folder::remove_tree(&old) {
        tracing::warn!(dir = %old.display(), error = %e, "cannot remove the old shared submission folder");
    }
    Ok(())
}
