//! Key bindings: the actions the console offers are defined here; which keys trigger them is
//! data (`tui/keys.toml`, compiled in, and an optional user file replacing the keys of the
//! actions it names). Input handling, the footer and the help overlay all read the same
//! [`KeyMap`], so they cannot disagree.

use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::view::View;

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Global,
    Tasks,
    Practice,
    Eval,
    Runs,
    /// The runs view's comparison of two runs.
    Compare,
    /// The runs view's leaderboard of one task.
    Leaderboard,
}

impl Context {
    /// The section of the key file.
    pub fn section(self) -> &'static str {
        match self {
            Context::Global => "global",
            Context::Tasks => "tasks",
            Context::Practice => "practice",
            Context::Eval => "eval",
            Context::Runs => "runs",
            Context::Compare => "compare",
            Context::Leaderboard => "leaderboard",
        }
    }

    const ALL: [Context; 7] = [
        Context::Global,
        Context::Tasks,
        Context::Practice,
        Context::Eval,
        Context::Runs,
        Context::Compare,
        Context::Leaderboard,
    ];
}

/// What a key asks for. `Act` carries the digit pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Quit,
    Help,
    NextView,
    ShowView(View),
    CycleTheme,
    Up,
    Down,
    /// Scroll a pane's text (the tasks view's spec) up or down a page.
    PageUp,
    PageDown,
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
    TypeSubmission,
    /// Type the agent command's `--workdir`.
    TypeWorkdir,
    /// Type the agent command's `--expose` folders.
    TypeExpose,
    Start,
    Cancel,
    Verify,
    /// Mark or unmark the selected run for comparison.
    Mark,
    /// Compare the two marked runs.
    Compare,
    /// The leaderboard of the selected run's task.
    Leaderboard,
    ExportPng,
    ExportSvg,
    Refresh,
}

/// An action the console offers: where, under which name in the key file, what it does.
pub struct Action {
    pub context: Context,
    /// Its name in the key file's section.
    pub name: &'static str,
    pub command: Command,
    /// The footer's word for it; footer entries with the same word merge ("↑/↓ select").
    pub short: &'static str,
    /// The help overlay's sentence.
    pub help: &'static str,
    /// Shown in the footer (the rest only in the help overlay).
    pub footer: bool,
}

use Command as C;
use Context as X;
use View as V;

macro_rules! action {
    ($ctx:expr, $name:literal, $cmd:expr, $short:literal, $help:literal, $footer:literal) => {
        Action {
            context: $ctx,
            name: $name,
            command: $cmd,
            short: $short,
            help: $help,
            footer: $footer,
        }
    };
}

#[rustfmt::skip]
pub static ACTIONS: &[Action] = &[
    //      context       name              command                    word          help                                                       in footer
    action!(X::Global,    "quit",           C::Quit,                   "quit",       "quit",                                                    true),
    action!(X::Global,    "help",           C::Help,                   "help",       "this help",                                               true),
    action!(X::Global,    "next_view",      C::NextView,               "view",       "next view",                                               true),
    action!(X::Global,    "tasks_view",     C::ShowView(V::Tasks),     "tasks",      "tasks view",                                              false),
    action!(X::Global,    "practice_view",  C::ShowView(V::Practice),  "practice",   "practice view",                                           false),
    action!(X::Global,    "eval_view",      C::ShowView(V::Eval),      "eval",       "eval view",                                               false),
    action!(X::Global,    "runs_view",      C::ShowView(V::Runs),      "runs",       "runs view",                                               false),
    action!(X::Global,    "next_theme",     C::CycleTheme,             "theme",      "next theme",                                              false),

    action!(X::Tasks,     "up",             C::Up,                     "select",     "move the selection",                                      true),
    action!(X::Tasks,     "down",           C::Down,                   "select",     "move the selection",                                      true),
    action!(X::Tasks,     "filter",         C::Filter,                 "filter",     "filter the list by typing",                               true),
    action!(X::Tasks,     "practice",       C::Open,                   "practice",   "create a practice env for the task",                      true),
    action!(X::Tasks,     "evaluate",       C::Evaluate,               "evaluate",   "set up an official run of the task",                      true),
    action!(X::Tasks,     "clear_filter",   C::Back,                   "clear",      "clear the filter",                                        false),
    action!(X::Tasks,     "spec_up",        C::PageUp,                 "spec",       "scroll the spec up/down",                                 false),
    action!(X::Tasks,     "spec_down",      C::PageDown,               "spec",       "scroll the spec up/down",                                 false),

    action!(X::Practice,  "left",           C::Left,                   "push",       "push left/right (Discrete), lower/raise the value (Box)", true),
    action!(X::Practice,  "right",          C::Right,                  "push",       "push left/right (Discrete), lower/raise the value (Box)", true),
    action!(X::Practice,  "up",             C::Up,                     "dimension",  "choose the action dimension (Box)",                       false),
    action!(X::Practice,  "down",           C::Down,                   "dimension",  "choose the action dimension (Box)",                       false),
    action!(X::Practice,  "action",         C::Act(0),                 "action",     "take Discrete action n (views: Tab, F1-F4)",              false),
    action!(X::Practice,  "step",           C::StepOnce,               "step",       "one step",                                                true),
    action!(X::Practice,  "auto_play",      C::TogglePlay,             "auto",       "auto-play with the policy / pause",                       true),
    action!(X::Practice,  "policy",         C::CyclePolicy,            "policy",     "who plays: manual, random, heuristic",                    true),
    action!(X::Practice,  "faster",         C::Faster,                 "speed",      "auto-play speed",                                         false),
    action!(X::Practice,  "slower",         C::Slower,                 "speed",      "auto-play speed",                                         false),
    action!(X::Practice,  "reset",          C::Reset,                  "reset",      "reset with a random seed",                                true),
    action!(X::Practice,  "seed",           C::EnterSeed,              "seed",       "reset with a seed you type",                              false),
    action!(X::Practice,  "back",           C::Back,                   "back",       "back to tasks",                                           false),

    action!(X::Eval,      "previous_task",  C::Left,                   "task",       "choose the task",                                         true),
    action!(X::Eval,      "next_task",      C::Right,                  "task",       "choose the task",                                         true),
    action!(X::Eval,      "up",             C::Up,                     "agent",      "choose the agent",                                        true),
    action!(X::Eval,      "down",           C::Down,                   "agent",      "choose the agent",                                        true),
    action!(X::Eval,      "type_command",   C::TypeAgent,              "command",    "type an agent command line",                              true),
    action!(X::Eval,      "type_submission", C::TypeSubmission,        "submission", "type a batch task's submission folder",                   false),
    action!(X::Eval,      "type_workdir",   C::TypeWorkdir,            "workdir",    "type the command's working directory (--workdir)",        false),
    action!(X::Eval,      "type_expose",    C::TypeExpose,             "expose",     "type folders the command sees read-only (--expose)",      false),
    action!(X::Eval,      "start",          C::Start,                  "start",      "start the official run",                                  true),
    action!(X::Eval,      "cancel",         C::Cancel,                 "cancel",     "cancel the run (stops harness and agent)",                true),

    action!(X::Runs,      "up",             C::Up,                     "select",     "move the selection",                                      false),
    action!(X::Runs,      "down",           C::Down,                   "select",     "move the selection",                                      false),
    action!(X::Runs,      "open",           C::Open,                   "open",       "open the selected run",                                   true),
    action!(X::Runs,      "mark",           C::Mark,                   "mark",       "mark/unmark the run to compare (two at most)",            true),
    action!(X::Runs,      "compare",        C::Compare,                "compare",    "compare the two marked runs side by side",                true),
    action!(X::Runs,      "leaderboard",    C::Leaderboard,            "board",      "the leaderboard of the selected run's task",              false),
    action!(X::Runs,      "verify",         C::Verify,                 "verify",     "verify its records: chain, signatures, report",           true),
    action!(X::Runs,      "export_png",     C::ExportPng,              "PNG",        "export its plot as PNG",                                  true),
    action!(X::Runs,      "export_svg",     C::ExportSvg,              "SVG",        "export its plot as SVG",                                  false),
    action!(X::Runs,      "refresh",        C::Refresh,                "refresh",    "refresh the list",                                        false),
    action!(X::Runs,      "close",          C::Back,                   "close",      "close the run",                                           false),

    action!(X::Compare,   "back",           C::Back,                   "back",       "back to the runs",                                        true),
    action!(X::Compare,   "export_png",     C::ExportPng,              "PNG",        "export the comparison plot as PNG",                       true),
    action!(X::Compare,   "export_svg",     C::ExportSvg,              "SVG",        "export the comparison plot as SVG",                       true),

    action!(X::Leaderboard, "back",         C::Back,                   "back",       "back to the runs",                                        true),
];

/// The bundled key file.
pub const DEFAULT_KEYS: &str = include_str!("../../keys.toml");

/// An action and the keys bound to it.
#[derive(Debug, Clone)]
pub struct Binding {
    pub action: &'static Action,
    pub keys: Vec<KeyCode>,
}

impl std::fmt::Debug for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.context.section(), self.name)
    }
}

/// One entry of the footer: the first keys of the actions that share a word, and the word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FooterEntry {
    /// Key labels joined by `/`, like `↑/↓`.
    pub keys: String,
    pub word: &'static str,
}

/// One line of the help overlay: every key of the actions of `context` that share `help`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpEntry {
    pub context: Context,
    /// Key labels joined by spaces, or a range like `0-9`.
    pub keys: String,
    pub help: &'static str,
    /// For a global key that a view binds to something else: where it does not mean `help`,
    /// like "in practice, 1 means action; F1 works".
    pub exceptions: Vec<String>,
}

/// The keys of every action.
#[derive(Debug, Clone)]
pub struct KeyMap {
    bindings: Vec<Binding>,
}

/// A key file that cannot be used; the message names the file and the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("key bindings {file}: {problem}")]
pub struct KeysError {
    pub file: String,
    pub problem: String,
}

/// Parses a key name from the key file.
pub fn parse_key(name: &str) -> Option<KeyCode> {
    Some(match name {
        "space" => KeyCode::Char(' '),
        "Enter" => KeyCode::Enter,
        "Esc" => KeyCode::Esc,
        "Tab" => KeyCode::Tab,
        "Backspace" => KeyCode::Backspace,
        "Up" => KeyCode::Up,
        "Down" => KeyCode::Down,
        "Left" => KeyCode::Left,
        "Right" => KeyCode::Right,
        "Home" => KeyCode::Home,
        "End" => KeyCode::End,
        "PageUp" => KeyCode::PageUp,
        "PageDown" => KeyCode::PageDown,
        f if f.len() >= 2 && f.starts_with('F') => {
            KeyCode::F(f[1..].parse().ok().filter(|n| (1..=12).contains(n))?)
        }
        c if c.chars().count() == 1 => KeyCode::Char(c.chars().next()?),
        _ => return None,
    })
}

/// How a key is written on screen.
pub fn key_label(key: KeyCode) -> String {
    match key {
        KeyCode::Char(' ') => "space".into(),
        KeyCode::Char(c) => c.to_string(),
        KeyCode::Up => "↑".into(),
        KeyCode::Down => "↓".into(),
        KeyCode::Left => "←".into(),
        KeyCode::Right => "→".into(),
        KeyCode::PageUp => "PgUp".into(),
        KeyCode::PageDown => "PgDn".into(),
        KeyCode::F(n) => format!("F{n}"),
        other => format!("{other}"),
    }
}

impl KeyMap {
    /// The bundled bindings, with the user's file (if it exists) replacing the keys of the
    /// actions it names.
    pub fn load(user_file: Option<&Path>) -> Result<KeyMap, KeysError> {
        let mut map = KeyMap {
            bindings: Vec::new(),
        };
        map.apply("tui/keys.toml", DEFAULT_KEYS, true)?;
        if let Some(path) = user_file.filter(|p| p.is_file()) {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|e| KeysError {
                file: name.clone(),
                problem: e.to_string(),
            })?;
            map.apply(&name, &text, false)?;
            map.check_conflicts(&name)?;
        }
        Ok(map)
    }

    /// The bundled bindings alone.
    pub fn bundled() -> KeyMap {
        // The bundled file is checked by the tests; an error here is a build defect.
        KeyMap::load(None).unwrap_or_else(|e| panic!("{e}"))
    }

    fn apply(&mut self, file: &str, text: &str, complete: bool) -> Result<(), KeysError> {
        let fail = |problem: String| KeysError {
            file: file.to_string(),
            problem,
        };
        let table: toml::Table = toml::from_str(text).map_err(|e| fail(e.to_string()))?;
        for (section, value) in &table {
            let context = Context::ALL
                .into_iter()
                .find(|c| c.section() == section)
                .ok_or_else(|| fail(format!("unknown section `[{section}]`; the sections are global, tasks, practice, eval, runs, compare")))?;
            let entries = value
                .as_table()
                .ok_or_else(|| fail(format!("`{section}` must be a table")))?;
            for (name, keys) in entries {
                let action = ACTIONS
                    .iter()
                    .find(|a| a.context == context && a.name == name)
                    .ok_or_else(|| {
                        let names: Vec<&str> = ACTIONS
                            .iter()
                            .filter(|a| a.context == context)
                            .map(|a| a.name)
                            .collect();
                        fail(format!(
                            "unknown action `{section}.{name}`; the actions there are: {}",
                            names.join(", ")
                        ))
                    })?;
                let list = keys.as_array().ok_or_else(|| {
                    fail(format!(
                        "`{section}.{name}` must be a list of key names, like [\"q\"]"
                    ))
                })?;
                let mut codes = Vec::new();
                for key in list {
                    let code = key.as_str().and_then(parse_key).ok_or_else(|| {
                        fail(format!("`{section}.{name}` has {key}, not a key: use a character or one of space, Enter, Esc, Tab, Backspace, Up, Down, Left, Right, Home, End, PageUp, PageDown, F1-F12"))
                    })?;
                    codes.push(code);
                }
                self.bindings.retain(|b| !std::ptr::eq(b.action, action));
                self.bindings.push(Binding {
                    action,
                    keys: codes,
                });
            }
        }
        if complete
            && let Some(missing) = ACTIONS
                .iter()
                .find(|a| !self.bindings.iter().any(|b| std::ptr::eq(b.action, *a)))
        {
            return Err(fail(format!(
                "no keys for `{}.{}`",
                missing.context.section(),
                missing.name
            )));
        }
        // Keep the table's order, so the footer and help read the same every time.
        self.bindings
            .sort_by_key(|b| ACTIONS.iter().position(|a| std::ptr::eq(a, b.action)));
        Ok(())
    }

    /// Two actions of one context on the same key would make one unreachable.
    fn check_conflicts(&self, file: &str) -> Result<(), KeysError> {
        for (i, a) in self.bindings.iter().enumerate() {
            for b in &self.bindings[i + 1..] {
                if a.action.context != b.action.context {
                    continue;
                }
                if let Some(key) = a.keys.iter().find(|k| b.keys.contains(k)) {
                    return Err(KeysError {
                        file: file.to_string(),
                        problem: format!(
                            "{} is bound to both `{:?}` and `{:?}`",
                            key_label(*key),
                            a.action,
                            b.action
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// The command `key` means in `view`: the view's bindings first, then the global ones.
    pub fn lookup(&self, view: Context, key: KeyEvent) -> Option<Command> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Some(Command::Quit);
        }
        let code = match key.code {
            KeyCode::BackTab => KeyCode::Tab,
            other => other,
        };
        let find = |ctx: Context| {
            self.bindings
                .iter()
                .find(|b| b.action.context == ctx && b.keys.contains(&code))
                .map(|b| match (b.action.command, code) {
                    (Command::Act(_), KeyCode::Char(d)) => {
                        Command::Act(d.to_digit(10).unwrap_or(0) as u8)
                    }
                    (command, _) => command,
                })
        };
        find(view).or_else(|| find(Context::Global))
    }

    /// The first key of `command` in `context`, as shown on screen, for hints drawn in a pane.
    pub fn first_key(&self, context: Context, command: Command) -> Option<String> {
        self.bindings
            .iter()
            .find(|b| b.action.context == context && b.action.command == command)
            .and_then(|b| b.keys.first())
            .map(|k| key_label(*k))
    }

    /// The footer's entries for `view`: help first (so it is never cut off), the view's keys,
    /// then the other global ones. Entries with the same word merge their first keys.
    pub fn footer(&self, view: Context) -> Vec<FooterEntry> {
        let mut out: Vec<FooterEntry> = Vec::new();
        let help = self
            .bindings
            .iter()
            .find(|b| b.action.command == Command::Help);
        let ordered = help
            .into_iter()
            .chain(self.bindings.iter().filter(|b| b.action.context == view))
            .chain(
                self.bindings
                    .iter()
                    .filter(|b| b.action.context == Context::Global),
            );
        for b in ordered.filter(|b| b.action.footer) {
            let Some(first) = b.keys.first() else {
                continue;
            };
            let label = key_label(*first);
            match out.iter_mut().find(|e| e.word == b.action.short) {
                Some(entry) if !entry.keys.split('/').any(|l| l == label) => {
                    entry.keys.push('/');
                    entry.keys.push_str(&label);
                }
                Some(_) => {}
                None => out.push(FooterEntry {
                    keys: label,
                    word: b.action.short,
                }),
            }
        }
        out
    }

    /// Every binding for the help overlay: context, keys, sentence. Actions of one context
    /// that share a sentence (up and down, faster and slower) share a line.
    pub fn help(&self) -> Vec<HelpEntry> {
        let mut out: Vec<HelpEntry> = Vec::new();
        for ctx in Context::ALL {
            for b in self.bindings.iter().filter(|b| b.action.context == ctx) {
                let labels: Vec<String> = b.keys.iter().map(|k| key_label(*k)).collect();
                let keys = if labels.len() > 4 {
                    format!("{}-{}", labels[0], labels[labels.len() - 1])
                } else {
                    labels.join(" ")
                };
                match out
                    .iter_mut()
                    .find(|e| e.context == ctx && e.help == b.action.help)
                {
                    Some(entry) => {
                        entry.keys.push(' ');
                        entry.keys.push_str(&keys);
                    }
                    None => out.push(HelpEntry {
                        context: ctx,
                        keys,
                        help: b.action.help,
                        exceptions: Vec::new(),
                    }),
                }
            }
        }
        for entry in out.iter_mut().filter(|e| e.context == Context::Global) {
            entry.exceptions = self.shadowed(entry.help);
        }
        out
    }

    /// Where the global keys of the actions whose help is `help` mean something else, since a
    /// view's own binding comes first: "in practice, 1 means action; F1 works".
    fn shadowed(&self, help: &str) -> Vec<String> {
        let keys: Vec<KeyCode> = self
            .bindings
            .iter()
            .filter(|b| b.action.context == Context::Global && b.action.help == help)
            .flat_map(|b| b.keys.iter().copied())
            .collect();
        let mut notes = Vec::new();
        for ctx in Context::ALL.into_iter().filter(|c| *c != Context::Global) {
            let mut taken: Vec<(KeyCode, &'static str)> = Vec::new();
            for key in &keys {
                if let Some(b) = self
                    .bindings
                    .iter()
                    .find(|b| b.action.context == ctx && b.keys.contains(key))
                {
                    taken.push((*key, b.action.short));
                }
            }
            if taken.is_empty() {
                continue;
            }
            let mut shorts: Vec<&str> = taken.iter().map(|(_, s)| *s).collect();
            shorts.dedup();
            let taken_keys: Vec<String> = taken.iter().map(|(k, _)| key_label(*k)).collect();
            let free: Vec<String> = keys
                .iter()
                .filter(|k| !taken.iter().any(|(t, _)| t == *k))
                .map(|k| key_label(*k))
                .collect();
            let mut note = format!(
                "in {}, {} means {}",
                ctx.section(),
                taken_keys.join(" "),
                shorts.join("/")
            );
            if !free.is_empty() {
                note.push_str(&format!("; {} works", free.join(" ")));
            }
            notes.push(note);
        }
        notes
    }
}

/// `$XDG_CONFIG_HOME/ale/keys.toml`, or `~/.config/ale/keys.toml`.
pub fn user_keys_file() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("ale/keys.toml"));
    }
    std::env::var_os("HOME")
        .filter(|d| !d.is_empty())
        .map(|h| PathBuf::from(h).join(".config/ale/keys.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn view_keys_shadow_global_ones_and_digits_carry_their_value() {
        let map = KeyMap::bundled();
        assert_eq!(
            map.lookup(X::Practice, key(KeyCode::Char('7'))),
            Some(C::Act(7))
        );
        assert_eq!(
            map.lookup(X::Practice, key(KeyCode::Char('2'))),
            Some(C::Act(2))
        );
        assert_eq!(
            map.lookup(X::Practice, key(KeyCode::F(1))),
            Some(C::ShowView(V::Tasks))
        );
        assert_eq!(
            map.lookup(X::Tasks, key(KeyCode::Char('2'))),
            Some(C::ShowView(V::Practice))
        );
        assert_eq!(
            map.lookup(X::Runs, key(KeyCode::Char('r'))),
            Some(C::Refresh)
        );
        assert_eq!(
            map.lookup(X::Practice, key(KeyCode::Char('r'))),
            Some(C::Reset)
        );
        assert_eq!(map.lookup(X::Tasks, key(KeyCode::Char('q'))), Some(C::Quit));
        assert_eq!(
            map.lookup(
                X::Eval,
                KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)
            ),
            Some(C::Quit)
        );
        assert_eq!(map.lookup(X::Tasks, key(KeyCode::Char('z'))), None);
    }

    #[test]
    fn every_action_has_keys_reachable_and_in_the_help() {
        let map = KeyMap::bundled();
        let help = map.help();
        for a in ACTIONS {
            let b = map
                .bindings
                .iter()
                .find(|b| std::ptr::eq(b.action, a))
                .unwrap();
            for code in &b.keys {
                assert!(map.lookup(a.context, key(*code)).is_some(), "{a:?}");
            }
            assert!(
                help.iter()
                    .any(|e| e.context == a.context && e.help == a.help),
                "{a:?}"
            );
        }
        let footer = map.footer(X::Tasks);
        let entry = |keys: &str, word| FooterEntry {
            keys: keys.to_string(),
            word,
        };
        assert_eq!(footer[0], entry("?", "help"));
        assert!(footer.contains(&entry("↑/↓", "select")), "{footer:?}");
    }

    /// With the bundled keys, every view's footer is read whole on an 80-column terminal,
    /// `q quit` and `Tab view` (last) included, as the footer draws it.
    #[test]
    fn every_footer_fits_80_columns() {
        let map = KeyMap::bundled();
        for context in Context::ALL {
            let footer = map.footer(context);
            let width: usize = 1 + footer
                .iter()
                .map(|e| e.keys.chars().count() + 1 + e.word.chars().count() + 2)
                .sum::<usize>()
                - 2;
            assert!(width <= 80, "{context:?}: {width} columns: {footer:?}");
            if context != Context::Global {
                assert!(footer.iter().any(|e| e.word == "quit"), "{context:?}");
            }
        }
    }

    /// The views' digits are global keys everywhere but in practice, where they are actions:
    /// the help says so where it lists them, and stops saying so once practice no longer
    /// takes them.
    #[test]
    fn the_help_names_where_a_global_key_means_something_else() {
        let map = KeyMap::bundled();
        let help = map.help();
        let global = |help: &[HelpEntry], what: &str| {
            help.iter()
                .find(|e| e.context == X::Global && e.help == what)
                .unwrap()
                .exceptions
                .clone()
        };
        assert_eq!(
            global(&help, "tasks view"),
            ["in practice, 1 means action; F1 works"]
        );
        assert_eq!(
            global(&help, "runs view"),
            ["in practice, 4 means action; F4 works"]
        );
        assert!(global(&help, "quit").is_empty());
        assert!(global(&help, "next view").is_empty());

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.toml");
        std::fs::write(&path, "[practice]\naction = [\"0\", \"9\"]\n").unwrap();
        let map = KeyMap::load(Some(&path)).unwrap();
        assert!(global(&map.help(), "tasks view").is_empty());
    }

    #[test]
    fn a_user_file_rebinds_and_bad_files_name_the_file_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.toml");
        std::fs::write(&path, "[practice]\nstep = [\"n\"]\n").unwrap();
        let map = KeyMap::load(Some(&path)).unwrap();
        assert_eq!(
            map.lookup(X::Practice, key(KeyCode::Char('n'))),
            Some(C::StepOnce)
        );
        assert_eq!(map.lookup(X::Practice, key(KeyCode::Char(' '))), None);

        let cases = [
            (
                "[practise]\nstep = [\"n\"]\n",
                "unknown section `[practise]`",
            ),
            (
                "[practice]\nstepp = [\"n\"]\n",
                "unknown action `practice.stepp`",
            ),
            (
                "[practice]\nstep = \"n\"\n",
                "`practice.step` must be a list",
            ),
            (
                "[practice]\nstep = [\"Enterr\"]\n",
                "`practice.step` has \"Enterr\", not a key",
            ),
            ("[practice]\nstep = [\"r\"]\n", "r is bound to both"),
        ];
        for (text, problem) in cases {
            std::fs::write(&path, text).unwrap();
            let err = KeyMap::load(Some(&path)).unwrap_err().to_string();
            assert!(err.contains(problem), "{text}: {err}");
            assert!(err.contains(&path.display().to_string()), "{err}");
        }
    }
}
