//! The console's state and how messages change it. Each view's state and update live in its own
//! module ([`tasks`](super::tasks), [`practice`](super::practice), [`eval`](super::eval),
//! [`runs`](super::runs)); the [`App`] holds them, routes keys and messages to them, and keeps
//! what they share: the view shown, the text being typed, the status line, the connection.
//! Nothing here does I/O: `update` returns the effects (RPCs, processes, file reads) for the
//! event loop to perform.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};

use super::bindings::{Command, Context, KeyMap};
use super::eval::Eval;
use super::message::{Effect, Msg, Reply, Request};
use super::outcome::{Note, Outcome};
use super::practice::Practice;
use super::runs::Runs;
use super::seeds::Seeds;
use super::tasks::Tasks;
use super::theme::Theme;
use super::view::{InputMode, View};

#[derive(Debug, Clone, PartialEq)]
pub enum Connection {
    Connecting,
    Connected,
    /// Back after being lost; shown for a few seconds, then `Connected`.
    Reconnected {
        at: Instant,
    },
    Lost {
        error: String,
    },
}

pub struct App {
    pub keymap: KeyMap,
    pub view: View,
    pub connection: Connection,
    /// How the console reached its evaluator, for the header.
    pub endpoint_label: String,
    pub themes: Vec<Theme>,
    pub theme: usize,
    pub tasks: Tasks,
    pub practice: Practice,
    pub eval: Eval,
    pub runs: Runs,
    pub input: InputMode,
    pub help: bool,
    /// The help overlay's first line shown (it scrolls when the terminal is short).
    pub help_scroll: u16,
    /// The furthest the help overlay scrolls at the size it was last drawn (set by drawing).
    pub help_scroll_max: std::cell::Cell<u16>,
    pub note: Option<Note>,
    pub quit: bool,
    /// Where "reset with a random seed" gets its seeds.
    pub seeds: Seeds,
    /// Requests sent and not yet answered.
    pub pending: usize,
    last_reconnect: Option<Instant>,
}

/// How often a lost connection is retried.
const RECONNECT_EVERY: Duration = Duration::from_secs(1);
/// How long the header says "reconnected".
const RECONNECTED_SHOWN: Duration = Duration::from_secs(5);
/// Lists start on the fourth row (header, tabs, block border) in the list views.
const FIRST_LIST_ROW: u16 = 3;
/// Lines the help overlay scrolls by on PageUp/PageDown.
const HELP_PAGE: u16 = 10;

impl App {
    pub fn new(
        themes: Vec<Theme>,
        theme: usize,
        keymap: KeyMap,
        endpoint_label: String,
        seeds: Seeds,
    ) -> App {
        App {
            keymap,
            view: View::Tasks,
            connection: Connection::Connecting,
            endpoint_label,
            themes,
            theme,
            tasks: Tasks::default(),
            practice: Practice::default(),
            eval: Eval::default(),
            runs: Runs::default(),
            input: InputMode::Commands,
            help: false,
            help_scroll: 0,
            help_scroll_max: std::cell::Cell::new(0),
            note: None,
            quit: false,
            seeds,
            pending: 0,
            last_reconnect: None,
        }
    }

    pub fn theme(&self) -> &Theme {
        &self.themes[self.theme]
    }

    /// The first messages: ask for the task list and the past runs.
    pub fn start(&mut self) -> Vec<Effect> {
        self.apply(vec![
            Outcome::rpc(Request::ListTasks),
            Effect::LoadRuns.into(),
        ])
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        let outcomes = match msg {
            Msg::Key(key) => return self.on_key(key),
            Msg::Mouse(mouse) => return self.on_mouse(mouse),
            Msg::Tick(now) => self.on_tick(now),
            Msg::Reply(reply) => {
                self.pending = self.pending.saturating_sub(1);
                self.on_reply(reply)
            }
            Msg::Health(health) => self.on_health(health, Instant::now()),
            Msg::Harness(event) => self.eval.on_harness(event),
            Msg::Runs(listed) => self.runs.on_listed(listed),
            Msg::Verified(verification) => self.runs.on_verified(verification),
            Msg::Compared { runs, result } => self.runs.on_compared(runs, result),
            Msg::Ranked { task, result } => self.runs.on_ranked(task, result),
            Msg::Exported { path, result } => self.runs.on_exported(&path, result),
            Msg::AgentLog { run_id, tail } => {
                self.eval.on_agent_log(&run_id, tail);
                Vec::new()
            }
        };
        self.apply(outcomes)
    }

    /// Carries out what the views asked for; returns the effects for the event loop.
    fn apply(&mut self, outcomes: Vec<Outcome>) -> Vec<Effect> {
        let mut effects = Vec::new();
        for outcome in outcomes {
            match outcome {
                Outcome::Effect(effect) => {
                    if matches!(effect, Effect::Rpc(_)) {
                        self.pending += 1;
                    }
                    effects.push(effect);
                }
                Outcome::Note(note) => self.note = Some(note),
                Outcome::Show(view) => effects.extend(self.show(view)),
                Outcome::Input(mode) => self.input = mode,
                Outcome::OpenPractice { task_id } => {
                    self.view = View::Practice;
                    let created = self.practice.create(task_id);
                    effects.extend(self.apply(created));
                }
            }
        }
        effects
    }

    fn on_mouse(&mut self, mouse: MouseEvent) -> Vec<Effect> {
        match mouse.kind {
            MouseEventKind::ScrollDown => self.on_command(Command::Down),
            MouseEventKind::ScrollUp => self.on_command(Command::Up),
            MouseEventKind::Down(_) => {
                let row = usize::from(mouse.row.saturating_sub(FIRST_LIST_ROW));
                match self.context() {
                    Context::Tasks => self.tasks.click(row),
                    Context::Runs => self.runs.click(row),
                    _ => {}
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return Vec::new();
        }
        if self.help {
            // Arrows and pages scroll the overlay; any other key closes it.
            let scroll = &mut self.help_scroll;
            let max = self.help_scroll_max.get();
            match key.code {
                KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
                KeyCode::Down | KeyCode::Char('j') => *scroll = (*scroll + 1).min(max),
                KeyCode::PageUp => *scroll = scroll.saturating_sub(HELP_PAGE),
                KeyCode::PageDown => *scroll = scroll.saturating_add(HELP_PAGE).min(max),
                KeyCode::Home => *scroll = 0,
                _ => self.help = false,
            }
            return Vec::new();
        }
        // Text entry takes every key but the ones that finish it.
        let outcomes = match self.input {
            InputMode::Commands => return self.on_command_key(key),
            InputMode::Filter => {
                if let KeyCode::Up | KeyCode::Down = key.code {
                    let command = self
                        .keymap
                        .lookup(Context::Tasks, key)
                        .unwrap_or(Command::Up);
                    return self.on_command(command);
                }
                self.tasks.on_filter_key(key)
            }
            InputMode::Seed => self.practice.on_seed_key(key),
            InputMode::AgentCommand => self.eval.on_command_line_key(key),
            InputMode::SubmissionDir => self.eval.on_submission_key(key),
            InputMode::Workdir => self.eval.on_workdir_key(key),
            InputMode::Expose => self.eval.on_expose_key(key),
        };
        self.apply(outcomes)
    }

    /// Whose keys apply: the view's, or the comparison's while the runs view shows one.
    pub fn context(&self) -> Context {
        match self.view {
            View::Runs if self.runs.comparison.is_some() => Context::Compare,
            View::Runs if self.runs.leaderboard.is_some() => Context::Leaderboard,
            view => view.context(),
        }
    }

    fn on_command_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        match self.keymap.lookup(self.context(), key) {
            Some(command) => self.on_command(command),
            None => {
                let outcomes = match self.view {
                    View::Tasks => self.tasks.on_unbound_key(key),
                    View::Practice | View::Eval | View::Runs => Vec::new(),
                };
                self.apply(outcomes)
            }
        }
    }

    fn on_command(&mut self, command: Command) -> Vec<Effect> {
        self.note = None;
        let outcomes = match command {
            Command::Quit => {
                self.quit = true;
                Vec::new()
            }
            Command::Help => {
                self.help = true;
                self.help_scroll = 0;
                Vec::new()
            }
            Command::NextView => {
                let i = View::ALL.iter().position(|v| *v == self.view).unwrap_or(0);
                vec![Outcome::Show(View::ALL[(i + 1) % View::ALL.len()])]
            }
            Command::ShowView(view) => vec![Outcome::Show(view)],
            Command::CycleTheme => {
                self.theme = (self.theme + 1) % self.themes.len();
                vec![Outcome::say(format!("theme: {}", self.theme().name))]
            }
            command => match self.view {
                View::Tasks => self.tasks.on_command(command),
                View::Practice => self.practice.on_command(command, &mut self.seeds),
                View::Eval => self.eval.on_command(command, &mut self.tasks),
                View::Runs => self.runs.on_command(command),
            },
        };
        self.apply(outcomes)
    }

    fn show(&mut self, view: View) -> Vec<Effect> {
        self.view = view;
        if view == View::Runs {
            return vec![Effect::LoadRuns];
        }
        Vec::new()
    }

    /// The health watcher's view, which notices a lost evaluator with no request in flight.
    pub fn on_health(&mut self, health: Result<(), String>, now: Instant) -> Vec<Outcome> {
        match (health, &self.connection) {
            (Err(error), Connection::Lost { .. }) => {
                self.connection = Connection::Lost { error };
                Vec::new()
            }
            (Err(error), _) => {
                self.practice.on_failed(true);
                self.connection = Connection::Lost {
                    error: error.clone(),
                };
                vec![Outcome::warn(format!(
                    "lost the evaluator at {}: {error}; reconnecting",
                    self.endpoint_label
                ))]
            }
            (Ok(()), Connection::Lost { .. }) => {
                self.connection = Connection::Reconnected { at: now };
                let mut outcomes = vec![Outcome::rpc(Request::ListTasks)];
                let recreated = self.practice.recreate();
                let said = if recreated.is_empty() {
                    "reconnected".to_string()
                } else {
                    match self.practice.restore_seed() {
                        Some(seed) => format!(
                            "reconnected; the practice env is a new one, reset on the last seed ({seed})"
                        ),
                        None => "reconnected; the practice env is a new one".to_string(),
                    }
                };
                outcomes.extend(recreated);
                outcomes.push(Outcome::say(said));
                outcomes
            }
            (Ok(()), Connection::Connecting) => {
                self.connection = Connection::Connected;
                Vec::new()
            }
            (Ok(()), _) => Vec::new(),
        }
    }

    fn on_tick(&mut self, now: Instant) -> Vec<Outcome> {
        let mut outcomes = Vec::new();
        if let Connection::Reconnected { at } = self.connection
            && now.duration_since(at) >= RECONNECTED_SHOWN
        {
            self.connection = Connection::Connected;
        }
        if matches!(self.connection, Connection::Lost { .. })
            && self.pending == 0
            && self
                .last_reconnect
                .is_none_or(|t| now.duration_since(t) >= RECONNECT_EVERY)
        {
            self.last_reconnect = Some(now);
            outcomes.push(Outcome::rpc(Request::ListTasks));
        }
        outcomes.extend(self.practice.on_tick(now, &mut self.seeds));
        outcomes
    }

    fn on_reply(&mut self, reply: Reply) -> Vec<Outcome> {
        match reply {
            Reply::Tasks(tasks) => {
                if !matches!(self.connection, Connection::Reconnected { .. }) {
                    self.connection = Connection::Connected;
                }
                self.tasks.set_list(tasks);
                Vec::new()
            }
            Reply::Failed {
                what,
                message,
                connection_lost,
            } => {
                self.practice.on_failed(connection_lost);
                if connection_lost {
                    self.connection = Connection::Lost {
                        error: message.clone(),
                    };
                }
                vec![Outcome::warn(format!("{what}: {message}"))]
            }
            reply => self.practice.on_reply(reply, &mut self.seeds),
        }
    }
}
