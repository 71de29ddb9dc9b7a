//! What the console shows and how it reads keys, shared by the app and its views: the
//! [`View`] on screen and the [`InputMode`] keys go to.

use super::bindings::Context;

/// The four views, in tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Tasks,
    Practice,
    Eval,
    Runs,
}

impl View {
    pub const ALL: [View; 4] = [View::Tasks, View::Practice, View::Eval, View::Runs];

    pub fn title(self) -> &'static str {
        match self {
            View::Tasks => "Tasks",
            View::Practice => "Practice",
            View::Eval => "Eval",
            View::Runs => "Runs",
        }
    }

    pub fn context(self) -> Context {
        match self {
            View::Tasks => Context::Tasks,
            View::Practice => Context::Practice,
            View::Eval => Context::Eval,
            View::Runs => Context::Runs,
        }
    }
}

/// Whether keys are commands or text being typed, and into what. The text itself belongs to
/// the view that uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputMode {
    /// Keys are looked up in the key map.
    #[default]
    Commands,
    /// The tasks view's filter ([`Tasks::filter`](super::tasks::Tasks::filter)).
    Filter,
    /// A seed to reset the practice env with
    /// ([`Practice::seed_input`](super::practice::Practice::seed_input)).
    Seed,
    /// The eval view's agent command line ([`Eval::command`](super::eval::Eval::command)).
    AgentCommand,
    /// The eval view's submission folder
    /// ([`Eval::submission`](super::eval::Eval::submission)).
    SubmissionDir,
    /// The eval view's `--workdir` for a command
    /// ([`Eval::workdir`](super::eval::Eval::workdir)).
    Workdir,
    /// The eval view's `--expose` folders for a command
    /// ([`Eval::expose`](super::eval::Eval::expose)).
    Expose,
}
