//! Who is asking: the listener a request arrived on ([`Channel`]), decided once when its
//! connection is accepted, and the official run whose own channel it is ([`RunScope`]). The
//! evaluator, the env table and the batch pipeline all take these; this module takes nothing
//! of theirs.

/// Which listener a request arrived on. Decided once, when the connection is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// The shared agent channel, TCP and `agent.sock`: agents outside a harness, the console.
    Agent,
    /// The Unix socket in the private state dir: the harness.
    Harness,
    /// One official run's own agent socket (`agents/<run_id>.sock`): that run's agent, which
    /// reaches only that run's official env and the practice envs made over this channel.
    Run(RunScope),
}

/// Identifies one official run's own agent channel (and the practice envs created over it),
/// for the life of the evaluator. Assigned when the official env is created; a client cannot
/// choose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunScope(pub(crate) u64);
