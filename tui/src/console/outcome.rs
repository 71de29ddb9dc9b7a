//! What a view's update hands back to the app: [`Outcome`]s, among them a status-line [`Note`].

use super::message::{Effect, Request};
use super::view::{InputMode, View};

/// A transient note for the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub text: String,
    pub is_error: bool,
}

/// What a view's update asks for beyond its own state. The app applies them in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Work for the event loop.
    Effect(Effect),
    Note(Note),
    Show(View),
    Input(InputMode),
    /// Create a practice env for the task and show it.
    OpenPractice {
        task_id: String,
    },
}

impl Outcome {
    pub fn rpc(request: Request) -> Outcome {
        Outcome::Effect(Effect::Rpc(request))
    }

    pub fn say(text: impl Into<String>) -> Outcome {
        Outcome::Note(Note {
            text: text.into(),
            is_error: false,
        })
    }

    pub fn warn(text: impl Into<String>) -> Outcome {
        Outcome::Note(Note {
            text: text.into(),
            is_error: true,
        })
    }
}

impl From<Effect> for Outcome {
    fn from(effect: Effect) -> Outcome {
        Outcome::Effect(effect)
    }
}
