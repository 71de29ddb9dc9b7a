//! Where things live in an evaluator's state directory. The evaluator creates them; the harness
//! finds them.

use std::path::{Path, PathBuf};

use ale_proto::RunId;

/// The harness channel's Unix socket.
pub const HARNESS_SOCKET: &str = "harness.sock";
/// The 32-byte secret mixed into seed commitments.
pub const SECRET_FILE: &str = "evaluator.secret";
/// One folder per official run: `runs/<run_id>/`.
pub const RUNS_DIR: &str = "runs";
/// The batch submission folders, one per official batch run: `submissions/<run_id>/`. A batch
/// run reads only its own folder's entrypoint file; the folder is gone when its run ends.
pub const SUBMISSIONS_DIR: &str = "submissions";
/// The per-run agent sockets, one per official run: `agents/<run_id>.sock`, bound into that
/// run's sandbox alone; gone when its run ends.
pub const RUN_AGENT_SOCKETS_DIR: &str = "agents";
/// The agent channel's URLs, present while an evaluator serves the state dir: see
/// [`AgentEndpoints`].
pub const AGENT_ENDPOINT_FILE: &str = "agent.endpoint";
/// The agent channel's Unix socket, unless `ale serve --agent-socket` puts it elsewhere.
pub const AGENT_SOCKET: &str = "agent.sock";
/// What the agent printed (stdout and stderr), in a run folder. The agent's own words.
pub const AGENT_LOG_FILE: &str = "agent.log";
/// In a run folder: the evaluator found the run's session unfinished when it started, see
/// [`crate::event_data::InterruptedRun`].
pub const INTERRUPTED_FILE: &str = "interrupted.json";
/// The harness's report in a run folder.
pub const REPORT_FILE: &str = "report.json";
/// The evaluator's Ed25519 signing key: its 32-byte seed (0600).
pub const EVALUATOR_KEY_FILE: &str = "evaluator.key";
/// The evaluator's Ed25519 public key, 64 hex characters and a newline (0644).
pub const EVALUATOR_PUBLIC_KEY_FILE: &str = "evaluator.pub";
/// The harness's Ed25519 signing key: its 32-byte seed (0600).
pub const HARNESS_KEY_FILE: &str = "harness.key";
/// The harness's Ed25519 public key, 64 hex characters and a newline (0644).
pub const HARNESS_PUBLIC_KEY_FILE: &str = "harness.pub";

pub fn harness_socket(state_dir: &Path) -> PathBuf {
    state_dir.join(HARNESS_SOCKET)
}

pub fn runs_dir(state_dir: &Path) -> PathBuf {
    state_dir.join(RUNS_DIR)
}

pub fn run_dir(state_dir: &Path, run_id: &RunId) -> PathBuf {
    runs_dir(state_dir).join(run_id.as_str())
}

pub fn submissions_dir(state_dir: &Path) -> PathBuf {
    state_dir.join(SUBMISSIONS_DIR)
}

/// The submission folder of one official batch run; the evaluator creates it with the run's
/// official env, before `CreateEnv` answers.
pub fn run_submission_dir(state_dir: &Path, run_id: &RunId) -> PathBuf {
    submissions_dir(state_dir).join(run_id.as_str())
}

pub fn run_agent_sockets_dir(state_dir: &Path) -> PathBuf {
    state_dir.join(RUN_AGENT_SOCKETS_DIR)
}

/// The agent socket of one official run; the evaluator listens on it from before `CreateEnv`
/// answers until the run ends.
pub fn run_agent_socket(state_dir: &Path, run_id: &RunId) -> PathBuf {
    run_agent_sockets_dir(state_dir).join(format!("{}.sock", run_id.as_str()))
}

pub fn agent_endpoint_file(state_dir: &Path) -> PathBuf {
    state_dir.join(AGENT_ENDPOINT_FILE)
}

pub fn agent_socket(state_dir: &Path) -> PathBuf {
    state_dir.join(AGENT_SOCKET)
}

/// Where the agent channel listens, as the evaluator records it in [`AGENT_ENDPOINT_FILE`]:
/// one URL a line, `http://HOST:PORT` for TCP and `unix:///PATH` for the Unix socket.
///
/// ```
/// use ale_records::layout::AgentEndpoints;
/// let e = AgentEndpoints { tcp: "http://127.0.0.1:50051".into(), unix: "/s/agent.sock".into() };
/// assert_eq!(AgentEndpoints::parse(&e.render()), Some(e));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEndpoints {
    pub tcp: String,
    pub unix: PathBuf,
}

/// The URL scheme prefix of a Unix-socket endpoint.
pub const UNIX_SCHEME: &str = "unix://";

impl AgentEndpoints {
    pub fn render(&self) -> String {
        format!("{}\n{UNIX_SCHEME}{}\n", self.tcp, self.unix.display())
    }

    /// Reads what [`render`](Self::render) wrote; `None` if either URL is missing.
    pub fn parse(text: &str) -> Option<AgentEndpoints> {
        let mut tcp = None;
        let mut unix = None;
        for line in text.lines().map(str::trim) {
            if let Some(path) = line.strip_prefix(UNIX_SCHEME) {
                unix = Some(PathBuf::from(path));
            } else if line.starts_with("http://") {
                tcp = Some(line.to_string());
            }
        }
        Some(AgentEndpoints {
            tcp: tcp?,
            unix: unix?,
        })
    }
}
