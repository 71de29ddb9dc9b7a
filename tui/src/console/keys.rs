//! The key table: every key the console answers to, where, and what it does. Input handling,
//! the footer and the help overlay are all generated from it, so they cannot disagree.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Global,
    Tasks,
    Practice,
    Eval,
    Runs,
}

/// What a key asks for. Some carry the key pressed (a digit, an arrow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Quit,
    Help,
    NextView,
    ShowView(u8),
    CycleTheme,
    Up,
    Down,
    Filter,
    Open,
    Evaluate,
    Back,
    Reset,
    EnterSeed,
    StepOnce,
    /// Discrete action chosen by a digit.
    Act(u8),
    /// Discrete push left/right, or Box value down/up.
    Left,
    Right,
    CyclePolicy,
    TogglePlay,
    Faster,
    Slower,
    TypeAgent,
    Start,
    Cancel,
    Verify,
    ExportPng,
    ExportSvg,
    Refresh,
}

pub struct Binding {
    pub context: Context,
    pub keys: &'static [KeyCode],
    /// How the key is written in the footer and help.
    pub label: &'static str,
    /// The footer's word for it.
    pub short: &'static str,
    /// The help overlay's sentence.
    pub help: &'static str,
    pub command: Command,
    /// Shown in the footer (the rest only in the help overlay).
    pub footer: bool,
}

use Command as C;
use Context as X;
use KeyCode as K;

macro_rules! bind {
    ($ctx:expr, [$($key:expr),+], $label:literal, $short:literal, $help:literal, $cmd:expr, $footer:literal) => {
        Binding { context: $ctx, keys: &[$($key),+], label: $label, short: $short, help: $help, command: $cmd, footer: $footer }
    };
}

pub const BINDINGS: &[Binding] = &[
    bind!(
        X::Global,
        [K::Char('q')],
        "q",
        "quit",
        "quit",
        C::Quit,
        true
    ),
    bind!(
        X::Global,
        [K::Char('?')],
        "?",
        "help",
        "this help",
        C::Help,
        true
    ),
    bind!(
        X::Global,
        [K::Tab],
        "Tab",
        "view",
        "next view",
        C::NextView,
        true
    ),
    bind!(
        X::Global,
        [K::Char('1'), K::F(1)],
        "1/F1",
        "tasks",
        "tasks view",
        C::ShowView(0),
        false
    ),
    bind!(
        X::Global,
        [K::Char('2'), K::F(2)],
        "2/F2",
        "practice",
        "practice view",
        C::ShowView(1),
        false
    ),
    bind!(
        X::Global,
        [K::Char('3'), K::F(3)],
        "3/F3",
        "eval",
        "eval view",
        C::ShowView(2),
        false
    ),
    bind!(
        X::Global,
        [K::Char('4'), K::F(4)],
        "4/F4",
        "runs",
        "runs view",
        C::ShowView(3),
        false
    ),
    bind!(
        X::Global,
        [K::Char('T')],
        "T",
        "theme",
        "next theme",
        C::CycleTheme,
        false
    ),
    bind!(
        X::Tasks,
        [K::Up, K::Char('k')],
        "↑↓",
        "select",
        "move the selection",
        C::Up,
        true
    ),
    bind!(
        X::Tasks,
        [K::Down, K::Char('j')],
        "↑↓",
        "select",
        "move the selection",
        C::Down,
        false
    ),
    bind!(
        X::Tasks,
        [K::Char('/')],
        "/",
        "filter",
        "filter the list by typing",
        C::Filter,
        true
    ),
    bind!(
        X::Tasks,
        [K::Enter],
        "Enter",
        "practice",
        "create a practice env for the task",
        C::Open,
        true
    ),
    bind!(
        X::Tasks,
        [K::Char('e')],
        "e",
        "evaluate",
        "set up an official run of the task",
        C::Evaluate,
        true
    ),
    bind!(
        X::Tasks,
        [K::Esc],
        "Esc",
        "clear",
        "clear the filter",
        C::Back,
        false
    ),
    bind!(
        X::Practice,
        [K::Left],
        "←→",
        "push",
        "push left/right (Discrete), lower/raise the value (Box)",
        C::Left,
        true
    ),
    bind!(
        X::Practice,
        [K::Right],
        "←→",
        "push",
        "push left/right (Discrete), lower/raise the value (Box)",
        C::Right,
        false
    ),
    bind!(
        X::Practice,
        [K::Up],
        "↑↓",
        "dimension",
        "choose the action dimension (Box)",
        C::Up,
        false
    ),
    bind!(
        X::Practice,
        [K::Down],
        "↑↓",
        "dimension",
        "choose the action dimension (Box)",
        C::Down,
        false
    ),
    bind!(
        X::Practice,
        [
            K::Char('0'),
            K::Char('1'),
            K::Char('2'),
            K::Char('3'),
            K::Char('4'),
            K::Char('5'),
            K::Char('6'),
            K::Char('7'),
            K::Char('8'),
            K::Char('9')
        ],
        "0-9",
        "action",
        "take Discrete action n (here digits are actions: use Tab or F1-F4 for views)",
        C::Act(0),
        false
    ),
    bind!(
        X::Practice,
        [K::Char(' ')],
        "space",
        "step",
        "one step",
        C::StepOnce,
        true
    ),
    bind!(
        X::Practice,
        [K::Char('a')],
        "a",
        "auto",
        "auto-play with the policy / pause",
        C::TogglePlay,
        true
    ),
    bind!(
        X::Practice,
        [K::Char('p')],
        "p",
        "policy",
        "who plays: manual, random, heuristic",
        C::CyclePolicy,
        true
    ),
    bind!(
        X::Practice,
        [K::Char('+'), K::Char('=')],
        "+-",
        "speed",
        "auto-play speed",
        C::Faster,
        true
    ),
    bind!(
        X::Practice,
        [K::Char('-')],
        "+-",
        "speed",
        "auto-play speed",
        C::Slower,
        false
    ),
    bind!(
        X::Practice,
        [K::Char('r')],
        "r",
        "reset",
        "reset with a random seed",
        C::Reset,
        true
    ),
    bind!(
        X::Practice,
        [K::Char('s')],
        "s",
        "seed",
        "reset with a seed you type",
        C::EnterSeed,
        true
    ),
    bind!(
        X::Practice,
        [K::Esc],
        "Esc",
        "back",
        "back to tasks",
        C::Back,
        false
    ),
    bind!(
        X::Eval,
        [K::Up, K::Char('k')],
        "↑↓",
        "agent",
        "choose the agent",
        C::Up,
        true
    ),
    bind!(
        X::Eval,
        [K::Down, K::Char('j')],
        "↑↓",
        "agent",
        "choose the agent",
        C::Down,
        false
    ),
    bind!(
        X::Eval,
        [K::Char('c')],
        "c",
        "command",
        "type an agent command line",
        C::TypeAgent,
        true
    ),
    bind!(
        X::Eval,
        [K::Enter],
        "Enter",
        "start",
        "start the official run",
        C::Start,
        true
    ),
    bind!(
        X::Eval,
        [K::Char('x')],
        "x",
        "cancel",
        "cancel the run (stops harness and agent)",
        C::Cancel,
        true
    ),
    bind!(
        X::Runs,
        [K::Up, K::Char('k')],
        "↑↓",
        "select",
        "move the selection",
        C::Up,
        true
    ),
    bind!(
        X::Runs,
        [K::Down, K::Char('j')],
        "↑↓",
        "select",
        "move the selection",
        C::Down,
        false
    ),
    bind!(
        X::Runs,
        [K::Enter],
        "Enter",
        "open",
        "open the selected run",
        C::Open,
        true
    ),
    bind!(
        X::Runs,
        [K::Char('v')],
        "v",
        "verify",
        "verify its trajectory (ale harness verify)",
        C::Verify,
        true
    ),
    bind!(
        X::Runs,
        [K::Char('P')],
        "P",
        "PNG",
        "export its plot as PNG",
        C::ExportPng,
        true
    ),
    bind!(
        X::Runs,
        [K::Char('S')],
        "S",
        "SVG",
        "export the plot as SVG",
        C::ExportSvg,
        false
    ),
    bind!(
        X::Runs,
        [K::Char('r')],
        "r",
        "refresh",
        "refresh the list",
        C::Refresh,
        false
    ),
    bind!(
        X::Runs,
        [K::Esc],
        "Esc",
        "close",
        "close the run",
        C::Back,
        false
    ),
];

/// The command `key` means in `view`, view bindings first.
pub fn lookup(view: Context, key: KeyEvent) -> Option<Command> {
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == K::Char('c') {
        return Some(C::Quit);
    }
    let code = match key.code {
        // Shifted letters arrive upper-case; BackTab is Shift-Tab.
        K::BackTab => K::Tab,
        other => other,
    };
    let find = |ctx: Context| {
        BINDINGS
            .iter()
            .find(|b| b.context == ctx && b.keys.contains(&code))
            .map(|b| match (b.command, code) {
                (C::Act(_), K::Char(d)) => C::Act(d.to_digit(10).unwrap_or(0) as u8),
                (command, _) => command,
            })
    };
    find(view).or_else(|| find(X::Global))
}

/// The footer's entries for `view`: help first (so it is never cut off), the view's keys,
/// then the other global ones; one per label.
pub fn footer(view: Context) -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = vec![("?", "help")];
    for ctx in [view, X::Global] {
        for b in BINDINGS.iter().filter(|b| b.context == ctx && b.footer) {
            if !out.iter().any(|(l, _)| *l == b.label) {
                out.push((b.label, b.short));
            }
        }
    }
    out
}

/// Every binding, grouped by context, one line per label: for the help overlay.
pub fn help() -> Vec<(Context, &'static str, &'static str)> {
    let mut out: Vec<(Context, &str, &str)> = Vec::new();
    for b in BINDINGS {
        if !out.iter().any(|(c, l, _)| *c == b.context && *l == b.label) {
            out.push((b.context, b.label, b.help));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn view_keys_shadow_global_ones_and_digits_carry_their_value() {
        assert_eq!(lookup(X::Practice, key(K::Char('7'))), Some(C::Act(7)));
        assert_eq!(lookup(X::Practice, key(K::Char('2'))), Some(C::Act(2)));
        assert_eq!(lookup(X::Practice, key(K::F(1))), Some(C::ShowView(0)));
        assert_eq!(lookup(X::Tasks, key(K::Char('2'))), Some(C::ShowView(1)));
        assert_eq!(lookup(X::Runs, key(K::Char('r'))), Some(C::Refresh));
        assert_eq!(lookup(X::Practice, key(K::Char('r'))), Some(C::Reset));
        assert_eq!(lookup(X::Tasks, key(K::Char('q'))), Some(C::Quit));
        assert_eq!(
            lookup(X::Eval, KeyEvent::new(K::Char('c'), KeyModifiers::CONTROL)),
            Some(C::Quit)
        );
        assert_eq!(lookup(X::Tasks, key(K::Char('z'))), None);
    }

    #[test]
    fn every_binding_is_reachable_and_in_the_help() {
        let help = help();
        for b in BINDINGS {
            for code in b.keys {
                assert!(
                    lookup(b.context, key(*code)).is_some(),
                    "{:?} in {:?}",
                    code,
                    b.context
                );
            }
            assert!(
                help.iter()
                    .any(|(c, l, _)| *c == b.context && *l == b.label)
            );
        }
    }
}
