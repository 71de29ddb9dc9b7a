//! The protocol's action rule: an action is accepted only if it is a member of the task's
//! action space, bounds included, and a sim's own refusals map to the protocol's errors. Both
//! practice envs and eval sessions step through it.

use ale_sim::{Sim, SimError, Tensor, Transition};

use crate::error::Error;
use crate::task::Task;

/// Steps `sim` under the protocol's rules: the action must be a member of the action space,
/// bounds included (a sim alone would clip a Box action the way Gymnasium does).
pub(crate) fn step_checked(
    task: &Task,
    sim: &mut dyn Sim,
    action: &Tensor,
) -> Result<Transition, Error> {
    let bad_action = |detail: String| Error::BadAction {
        task: task.spec.id.clone(),
        detail,
    };
    sim.action_space()
        .check(action)
        .map_err(|e| bad_action(e.to_string()))?;
    sim.step(action).map_err(|e| step_error(task, e))
}

/// A sim's refusal of a step as the protocol answers it: its own objection to the action (a
/// Box action it cannot take) is the action's fault; the rest as [`sim_error`].
pub(crate) fn step_error(task: &Task, e: SimError) -> Error {
    let bad_action = |detail: String| Error::BadAction {
        task: task.spec.id.clone(),
        detail,
    };
    match e {
        SimError::Action(detail) => bad_action(detail.to_string()),
        SimError::State(detail) => bad_action(detail),
        other => sim_error(task, other),
    }
}

/// A sim's failure as the protocol answers it.
pub fn sim_error(task: &Task, e: SimError) -> Error {
    match e {
        SimError::NotReset => Error::StepBeforeReset,
        SimError::EpisodeOver => Error::EpisodeOver,
        SimError::Fault(cause) => Error::SimFault {
            task: task.spec.id.clone(),
            sim: task.spec.sim.clone(),
            cause: format!("{cause}\nThe episode is lost; Reset starts a new one on a fresh host."),
        },
        SimError::Exhausted(cause) => Error::SimHostsExhausted {
            task: task.spec.id.clone(),
            cause,
        },
        other => Error::SimUnavailable {
            task: task.spec.id.clone(),
            sim: task.spec.sim.clone(),
            cause: other.to_string(),
        },
    }
}
