//! The console's state and how messages change it. Nothing here does I/O: `update` returns
//! the effects (RPCs, processes, file reads) for the event loop to perform.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ale_client::policy::PolicyKind;
use ale_client::{EnvSpec, Info, Space};
use ale_harness::progress::RunProgress;
use ale_harness::report::Report;
use ale_harness::runs::RunEntry;
use ale_harness::verify::RunVerification;
use ale_proto::TaskSpec;
use ale_sims::Tensor;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};

use super::keys::{Command, Context, KeyMap};
use super::theme::Theme;

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

/// An RPC for the client worker.
#[derive(Debug, Clone)]
pub enum Request {
    ListTasks,
    CreatePractice {
        task_id: String,
    },
    Reset {
        seed: u64,
    },
    Step {
        action: Tensor,
    },
    /// Up to `steps` steps chosen by a built-in policy; the worker stops at the episode's end.
    Play {
        steps: u32,
        policy: PolicyKind,
    },
}

/// The client worker's answer to a request.
#[derive(Debug, Clone)]
pub enum Reply {
    Tasks(Vec<TaskSpec>),
    Created {
        spec: Box<EnvSpec>,
    },
    Reset {
        observation: Tensor,
        info: Info,
    },
    Stepped {
        observation: Tensor,
        reward: f64,
        terminated: bool,
        truncated: bool,
        info: Info,
    },
    /// A `Play` request is done (possibly early, at an episode's end).
    Played,
    Failed {
        what: String,
        message: String,
        connection_lost: bool,
    },
}

/// What the harness child process reported.
#[derive(Debug, Clone)]
pub enum HarnessEvent {
    Progress(Box<RunProgress>),
    Report {
        report: Box<Report>,
        run_dir: PathBuf,
    },
    Output(String),
    Exited {
        success: bool,
        description: String,
    },
}

/// Something for the event loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Rpc(RequestEffect),
    StartHarness {
        task_id: String,
        agent: AgentChoice,
    },
    CancelHarness,
    LoadRuns,
    VerifyRun(PathBuf),
    ExportPlot {
        run_dir: PathBuf,
        format: &'static str,
    },
}

/// `Request` wrapped so `Effect` can compare (tensors compare by value).
#[derive(Debug, Clone)]
pub struct RequestEffect(pub Request);

impl PartialEq for RequestEffect {
    fn eq(&self, other: &Self) -> bool {
        format!("{:?}", self.0) == format!("{:?}", other.0)
    }
}

#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    /// Time passes: drives auto-play and reconnection.
    Tick(Instant),
    Reply(Reply),
    Harness(HarnessEvent),
    Runs(Vec<RunEntry>),
    Verified {
        run_dir: PathBuf,
        result: Result<Box<RunVerification>, String>,
    },
    Exported {
        path: PathBuf,
        result: Result<(), String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Connection {
    Connecting,
    Connected,
    Lost { error: String },
}

/// Who plays in the practice view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Player {
    Manual,
    Policy(PolicyKind),
}

impl Player {
    pub fn name(self) -> &'static str {
        match self {
            Player::Manual => "manual",
            Player::Policy(k) => k.name(),
        }
    }
}

/// One finished practice episode.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeEntry {
    pub number: u32,
    pub seed: u64,
    pub steps: u64,
    pub episode_return: f64,
    pub terminated: bool,
}

#[derive(Debug, Default)]
pub struct Practice {
    pub spec: Option<EnvSpec>,
    /// Set while the env is being created.
    pub creating: Option<String>,
    pub seed: Option<u64>,
    /// A seed being typed (after `s`).
    pub seed_input: Option<String>,
    pub observation: Option<Tensor>,
    pub last_reward: Option<f64>,
    pub terminated: bool,
    pub truncated: bool,
    pub info: Info,
    /// 1-based number of the current episode.
    pub episode: u32,
    pub step: u64,
    pub episode_return: f64,
    /// Every step's reward since the env was created.
    pub rewards: Vec<f64>,
    pub history: Vec<EpisodeEntry>,
    pub player: Option<Player>,
    pub playing: bool,
    /// Auto-play speed, steps per second.
    pub speed: u32,
    pub box_action: Vec<f32>,
    pub box_cursor: usize,
    /// A reset or step is in flight; no other is sent until it answers.
    pub busy: bool,
    last_play: Option<Instant>,
}

impl Practice {
    pub fn player(&self) -> Player {
        self.player.unwrap_or(Player::Manual)
    }

    pub fn episode_over(&self) -> bool {
        self.terminated || self.truncated
    }
}

/// The agent an official run uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentChoice {
    Policy(PolicyKind),
    Command(String),
}

#[derive(Debug, Default)]
pub struct Eval {
    /// 0: heuristic, 1: random, 2: the typed command.
    pub choice: usize,
    pub command: String,
    pub editing: bool,
    pub run: Option<EvalRun>,
}

impl Eval {
    pub fn agent(&self) -> AgentChoice {
        match self.choice {
            1 => AgentChoice::Policy(PolicyKind::Random),
            2 => AgentChoice::Command(self.command.clone()),
            _ => AgentChoice::Policy(PolicyKind::Heuristic),
        }
    }
}

#[derive(Debug, Clone)]
pub struct EvalRun {
    pub task_id: String,
    pub agent: AgentChoice,
    pub started: Instant,
    pub progress: Option<Box<RunProgress>>,
    pub report: Option<Box<Report>>,
    pub run_dir: Option<PathBuf>,
    pub output: Vec<String>,
    pub finished: Option<(bool, String)>,
    pub cancelled: bool,
}

#[derive(Debug, Default)]
pub struct Runs {
    pub entries: Vec<RunEntry>,
    pub cursor: usize,
    pub open: Option<usize>,
    /// The last verification: which run, and what `verify_run_dir` found.
    pub verification: Option<(PathBuf, Result<Box<RunVerification>, String>)>,
    pub loaded: bool,
}

pub struct App {
    pub keymap: KeyMap,
    pub view: View,
    pub connection: Connection,
    /// How the console reached its evaluator, for the header.
    pub endpoint_label: String,
    pub themes: Vec<Theme>,
    pub theme: usize,
    pub tasks: Vec<TaskSpec>,
    pub task_cursor: usize,
    pub filter: String,
    pub filtering: bool,
    pub practice: Practice,
    pub eval: Eval,
    pub runs: Runs,
    pub help: bool,
    /// A transient note for the status line, and whether it is an error.
    pub note: Option<(String, bool)>,
    pub quit: bool,
    /// Seeds for "reset with a random seed", drawn by the event loop.
    pub next_random_seed: u64,
    /// Requests sent and not yet answered.
    pub pending: usize,
    last_reconnect: Option<Instant>,
}

/// Auto-play speeds offered by + and -.
pub const SPEEDS: &[u32] = &[1, 5, 10, 30, 60, 120, 250, 500, 1000, 2000, 5000];
/// How often a lost connection is retried.
const RECONNECT_EVERY: Duration = Duration::from_secs(1);

fn space_is_discrete(space: &Space) -> Option<(u64, i64)> {
    match space {
        Space::Discrete(d) => Some((d.n, d.start)),
        _ => None,
    }
}

impl App {
    pub fn new(themes: Vec<Theme>, theme: usize, keymap: KeyMap, endpoint_label: String) -> App {
        App {
            keymap,
            view: View::Tasks,
            connection: Connection::Connecting,
            endpoint_label,
            themes,
            theme,
            tasks: Vec::new(),
            task_cursor: 0,
            filter: String::new(),
            filtering: false,
            practice: Practice {
                speed: 60,
                ..Practice::default()
            },
            eval: Eval::default(),
            runs: Runs::default(),
            help: false,
            note: None,
            quit: false,
            next_random_seed: 0,
            pending: 0,
            last_reconnect: None,
        }
    }

    pub fn theme(&self) -> &Theme {
        &self.themes[self.theme]
    }

    /// The tasks the filter lets through: those whose id matches first, then those whose
    /// title or simulator does.
    pub fn visible_tasks(&self) -> Vec<&TaskSpec> {
        let needle = self.filter.to_lowercase();
        let by_id = |t: &&TaskSpec| t.id.to_lowercase().contains(&needle);
        let by_other = |t: &&TaskSpec| {
            !by_id(t)
                && (t.title.to_lowercase().contains(&needle)
                    || t.sim.to_lowercase().contains(&needle))
        };
        self.tasks
            .iter()
            .filter(by_id)
            .chain(self.tasks.iter().filter(by_other))
            .collect()
    }

    pub fn selected_task(&self) -> Option<&TaskSpec> {
        self.visible_tasks().get(self.task_cursor).copied()
    }

    /// The first messages: ask for the task list.
    pub fn start(&mut self) -> Vec<Effect> {
        vec![self.rpc(Request::ListTasks), Effect::LoadRuns]
    }

    fn rpc(&mut self, request: Request) -> Effect {
        self.pending += 1;
        Effect::Rpc(RequestEffect(request))
    }

    fn say(&mut self, text: impl Into<String>) {
        self.note = Some((text.into(), false));
    }

    fn warn(&mut self, text: impl Into<String>) {
        self.note = Some((text.into(), true));
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Key(key) => self.on_key(key),
            Msg::Mouse(mouse) => self.on_mouse(mouse),
            Msg::Tick(now) => self.on_tick(now),
            Msg::Reply(reply) => {
                self.pending = self.pending.saturating_sub(1);
                self.on_reply(reply)
            }
            Msg::Harness(event) => self.on_harness(event),
            Msg::Runs(entries) => {
                self.runs.entries = entries;
                self.runs.loaded = true;
                self.runs.cursor = self
                    .runs
                    .cursor
                    .min(self.runs.entries.len().saturating_sub(1));
                Vec::new()
            }
            Msg::Verified { run_dir, result } => {
                self.say(if result.is_ok() {
                    "verified: the records agree and their signatures hold"
                } else {
                    "verification FAILED"
                });
                self.runs.verification = Some((run_dir, result));
                Vec::new()
            }
            Msg::Exported { path, result } => {
                match result {
                    Ok(()) => self.say(format!("plot written to {}", path.display())),
                    Err(e) => self.warn(e),
                }
                Vec::new()
            }
        }
    }

    fn on_mouse(&mut self, mouse: MouseEvent) -> Vec<Effect> {
        match mouse.kind {
            MouseEventKind::ScrollDown => self.on_command(Command::Down),
            MouseEventKind::ScrollUp => self.on_command(Command::Up),
            MouseEventKind::Down(_) => {
                // Lists start on the fourth row (header, tabs, block border) in the list views.
                let row = mouse.row.saturating_sub(3) as usize;
                match self.view {
                    View::Tasks if row < self.visible_tasks().len() => self.task_cursor = row,
                    View::Runs if row < self.runs.entries.len() => self.runs.cursor = row,
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
            self.help = false;
            return Vec::new();
        }
        // Text entry takes every key but Enter and Esc.
        if self.filtering {
            match key.code {
                KeyCode::Esc => {
                    self.filtering = false;
                    self.filter.clear();
                }
                KeyCode::Enter => self.filtering = false,
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Up | KeyCode::Down => {
                    let command = self
                        .keymap
                        .lookup(Context::Tasks, key)
                        .unwrap_or(Command::Up);
                    return self.on_command(command);
                }
                KeyCode::Char(c) => self.filter.push(c),
                _ => {}
            }
            self.task_cursor = 0;
            return Vec::new();
        }
        if let Some(input) = &mut self.practice.seed_input {
            match key.code {
                KeyCode::Esc => self.practice.seed_input = None,
                KeyCode::Backspace => {
                    input.pop();
                }
                KeyCode::Char(c) if c.is_ascii_digit() && input.len() < 20 => input.push(c),
                KeyCode::Enter => {
                    let text = input.clone();
                    self.practice.seed_input = None;
                    match text.parse::<u64>() {
                        Ok(seed) => return self.reset(seed),
                        Err(_) => self.warn(format!(
                            "{text:?} is not a seed: type a whole number from 0 to {}",
                            u64::MAX
                        )),
                    }
                }
                _ => {}
            }
            return Vec::new();
        }
        if self.eval.editing {
            match key.code {
                KeyCode::Esc | KeyCode::Enter => self.eval.editing = false,
                KeyCode::Backspace => {
                    self.eval.command.pop();
                }
                KeyCode::Char(c) => self.eval.command.push(c),
                _ => {}
            }
            return Vec::new();
        }
        match self.keymap.lookup(self.view.context(), key) {
            Some(command) => self.on_command(command),
            None => {
                // In the tasks view, typing a letter starts filtering.
                if let (View::Tasks, KeyCode::Char(c)) = (self.view, key.code)
                    && c.is_alphanumeric()
                {
                    self.filtering = true;
                    self.filter.push(c);
                    self.task_cursor = 0;
                }
                Vec::new()
            }
        }
    }

    fn on_command(&mut self, command: Command) -> Vec<Effect> {
        self.note = None;
        match command {
            Command::Quit => {
                self.quit = true;
                Vec::new()
            }
            Command::Help => {
                self.help = true;
                Vec::new()
            }
            Command::NextView => {
                let i = View::ALL.iter().position(|v| *v == self.view).unwrap_or(0);
                self.show(View::ALL[(i + 1) % View::ALL.len()])
            }
            Command::ShowView(i) => self.show(View::ALL[usize::from(i).min(3)]),
            Command::CycleTheme => {
                self.theme = (self.theme + 1) % self.themes.len();
                let name = self.theme().name.clone();
                self.say(format!("theme: {name}"));
                Vec::new()
            }
            command => match self.view {
                View::Tasks => self.on_tasks(command),
                View::Practice => self.on_practice(command),
                View::Eval => self.on_eval(command),
                View::Runs => self.on_runs(command),
            },
        }
    }

    fn show(&mut self, view: View) -> Vec<Effect> {
        self.view = view;
        if view == View::Runs {
            return vec![Effect::LoadRuns];
        }
        Vec::new()
    }

    fn on_tasks(&mut self, command: Command) -> Vec<Effect> {
        let n = self.visible_tasks().len();
        match command {
            Command::Up => self.task_cursor = self.task_cursor.saturating_sub(1),
            Command::Down => self.task_cursor = (self.task_cursor + 1).min(n.saturating_sub(1)),
            Command::Filter => self.filtering = true,
            Command::Back => self.filter.clear(),
            Command::Open => {
                if let Some(task) = self.selected_task() {
                    let task_id = task.id.clone();
                    self.view = View::Practice;
                    return self.create_practice(task_id);
                }
            }
            Command::Evaluate if self.selected_task().is_some() => self.view = View::Eval,
            _ => {}
        }
        Vec::new()
    }

    fn create_practice(&mut self, task_id: String) -> Vec<Effect> {
        let speed = self.practice.speed.max(1);
        self.practice = Practice {
            creating: Some(task_id.clone()),
            speed,
            busy: true,
            ..Practice::default()
        };
        vec![self.rpc(Request::CreatePractice { task_id })]
    }

    fn reset(&mut self, seed: u64) -> Vec<Effect> {
        if self.practice.spec.is_none() || self.practice.busy {
            return Vec::new();
        }
        self.practice.busy = true;
        self.practice.seed = Some(seed);
        vec![self.rpc(Request::Reset { seed })]
    }

    /// The action manual play takes now, from a digit, an arrow, or the Box sliders.
    fn manual_action(&self, command: Command) -> Option<Tensor> {
        let spec = self.practice.spec.as_ref()?;
        match (&spec.action_space, command) {
            (Space::Discrete(d), Command::Act(a)) if u64::from(a) < d.n => {
                Some(Tensor::scalar_i64(d.start + i64::from(a)))
            }
            (Space::Discrete(d), Command::Left) => Some(Tensor::scalar_i64(d.start)),
            (Space::Discrete(d), Command::Right) => {
                Some(Tensor::scalar_i64(d.start + d.n as i64 - 1))
            }
            (Space::Discrete(d), Command::StepOnce) => {
                Some(Tensor::scalar_i64(d.start + (d.n as i64 - 1) / 2))
            }
            (Space::Box(_), Command::StepOnce) => {
                Some(Tensor::vector_f32(self.practice.box_action.clone()))
            }
            _ => None,
        }
    }

    fn on_practice(&mut self, command: Command) -> Vec<Effect> {
        let Some(spec) = self.practice.spec.clone() else {
            if command == Command::Back {
                self.view = View::Tasks;
            } else {
                self.say("pick a task in the tasks view (1) and press Enter");
            }
            return Vec::new();
        };
        match command {
            Command::Back => {
                self.practice.playing = false;
                self.view = View::Tasks;
            }
            Command::Reset => {
                let seed = self.next_random_seed;
                return self.reset(seed);
            }
            Command::EnterSeed => {
                self.practice.playing = false;
                self.practice.seed_input = Some(String::new());
            }
            Command::CyclePolicy => {
                self.practice.player = Some(match self.practice.player() {
                    Player::Manual => Player::Policy(PolicyKind::Random),
                    Player::Policy(PolicyKind::Random) => Player::Policy(PolicyKind::Heuristic),
                    Player::Policy(PolicyKind::Heuristic) => Player::Manual,
                });
                if self.practice.player() == Player::Manual {
                    self.practice.playing = false;
                }
            }
            Command::TogglePlay => {
                if self.practice.player() == Player::Manual {
                    self.practice.player = Some(Player::Policy(PolicyKind::Heuristic));
                }
                self.practice.playing = !self.practice.playing;
                self.practice.last_play = None;
            }
            Command::Faster | Command::Slower => {
                let i = SPEEDS
                    .iter()
                    .position(|s| *s >= self.practice.speed)
                    .unwrap_or(0);
                let j = if command == Command::Faster {
                    (i + 1).min(SPEEDS.len() - 1)
                } else {
                    i.saturating_sub(1)
                };
                self.practice.speed = SPEEDS[j];
            }
            Command::Up | Command::Down if matches!(spec.action_space, Space::Box(_)) => {
                let n = self.practice.box_action.len().max(1);
                self.practice.box_cursor = if command == Command::Up {
                    (self.practice.box_cursor + n - 1) % n
                } else {
                    (self.practice.box_cursor + 1) % n
                };
            }
            Command::Left | Command::Right if matches!(spec.action_space, Space::Box(_)) => {
                if let Space::Box(b) = &spec.action_space {
                    let i = self.practice.box_cursor.min(b.low.len().saturating_sub(1));
                    let (lo, hi) = (b.low[i], b.high[i]);
                    let span = if lo.is_finite() && hi.is_finite() {
                        hi - lo
                    } else {
                        2.0
                    };
                    let delta =
                        (span / 10.0) as f32 * if command == Command::Left { -1.0 } else { 1.0 };
                    if let Some(v) = self.practice.box_action.get_mut(i) {
                        *v = (f64::from(*v + delta)).clamp(lo, hi) as f32;
                    }
                }
            }
            command => {
                if self.practice.observation.is_none() {
                    self.say("press r to reset (or s to type a seed) before stepping");
                    return Vec::new();
                }
                if self.practice.episode_over() {
                    self.say("the episode is over: press r to start another");
                    return Vec::new();
                }
                if self.practice.busy {
                    return Vec::new();
                }
                if let (Player::Policy(kind), Command::StepOnce) = (self.practice.player(), command)
                {
                    self.practice.busy = true;
                    return vec![self.rpc(Request::Play {
                        steps: 1,
                        policy: kind,
                    })];
                }
                if let Some(action) = self.manual_action(command) {
                    self.practice.busy = true;
                    return vec![self.rpc(Request::Step { action })];
                }
                if space_is_discrete(&spec.action_space).is_some() {
                    self.say("that action is not in the action space");
                }
            }
        }
        Vec::new()
    }

    fn on_eval(&mut self, command: Command) -> Vec<Effect> {
        let running = self.eval.run.as_ref().is_some_and(|r| r.finished.is_none());
        let tasks = self.visible_tasks().len();
        match command {
            Command::Left if !running => self.task_cursor = self.task_cursor.saturating_sub(1),
            Command::Right if !running => {
                self.task_cursor = (self.task_cursor + 1).min(tasks.saturating_sub(1))
            }
            Command::Up => self.eval.choice = self.eval.choice.saturating_sub(1),
            Command::Down => self.eval.choice = (self.eval.choice + 1).min(2),
            Command::TypeAgent => {
                self.eval.choice = 2;
                self.eval.editing = true;
            }
            Command::Start if running => self.say("a run is in progress: x cancels it"),
            Command::Start => {
                let Some(task) = self.selected_task() else {
                    self.say("pick a task in the tasks view first");
                    return Vec::new();
                };
                let task_id = task.id.clone();
                let agent = self.eval.agent();
                if let AgentChoice::Command(c) = &agent
                    && c.trim().is_empty()
                {
                    self.warn("type the agent's command first (c)");
                    return Vec::new();
                }
                self.eval.run = Some(EvalRun {
                    task_id: task_id.clone(),
                    agent: agent.clone(),
                    started: Instant::now(),
                    progress: None,
                    report: None,
                    run_dir: None,
                    output: Vec::new(),
                    finished: None,
                    cancelled: false,
                });
                return vec![Effect::StartHarness { task_id, agent }];
            }
            Command::Cancel if running => {
                if let Some(run) = &mut self.eval.run {
                    run.cancelled = true;
                }
                return vec![Effect::CancelHarness];
            }
            _ => {}
        }
        Vec::new()
    }

    fn on_runs(&mut self, command: Command) -> Vec<Effect> {
        let n = self.runs.entries.len();
        let selected = self
            .runs
            .entries
            .get(self.runs.cursor)
            .map(|r| r.dir.clone());
        match command {
            Command::Up => self.runs.cursor = self.runs.cursor.saturating_sub(1),
            Command::Down => self.runs.cursor = (self.runs.cursor + 1).min(n.saturating_sub(1)),
            Command::Open if n > 0 => self.runs.open = Some(self.runs.cursor),
            Command::Back => self.runs.open = None,
            Command::Refresh => return vec![Effect::LoadRuns],
            Command::Verify => {
                if let Some(dir) = selected {
                    self.runs.verification = None;
                    self.say("verifying…");
                    return vec![Effect::VerifyRun(dir)];
                }
            }
            Command::ExportPng | Command::ExportSvg => {
                if let Some(run_dir) = selected {
                    let format = if command == Command::ExportPng {
                        "png"
                    } else {
                        "svg"
                    };
                    return vec![Effect::ExportPlot { run_dir, format }];
                }
            }
            _ => {}
        }
        Vec::new()
    }

    fn on_tick(&mut self, now: Instant) -> Vec<Effect> {
        let mut effects = Vec::new();
        if matches!(self.connection, Connection::Lost { .. })
            && self.pending == 0
            && self
                .last_reconnect
                .is_none_or(|t| now.duration_since(t) >= RECONNECT_EVERY)
        {
            self.last_reconnect = Some(now);
            effects.push(self.rpc(Request::ListTasks));
        }
        let p = &self.practice;
        if p.playing && !p.busy && p.observation.is_some() {
            if p.episode_over() {
                let seed = self.next_random_seed;
                effects.extend(self.reset(seed));
                return effects;
            }
            let Player::Policy(kind) = p.player() else {
                return effects;
            };
            let elapsed = p
                .last_play
                .map_or(Duration::from_millis(33), |t| now.duration_since(t));
            let due = (elapsed.as_secs_f64() * f64::from(p.speed)).floor() as u32;
            let steps = due.min(p.speed);
            if steps >= 1 {
                self.practice.last_play = Some(now);
                self.practice.busy = true;
                effects.push(self.rpc(Request::Play {
                    steps,
                    policy: kind,
                }));
            }
        }
        effects
    }

    fn on_reply(&mut self, reply: Reply) -> Vec<Effect> {
        match reply {
            Reply::Tasks(tasks) => {
                self.connection = Connection::Connected;
                self.tasks = tasks;
                self.task_cursor = self.task_cursor.min(self.tasks.len().saturating_sub(1));
            }
            Reply::Created { spec } => {
                let p = &mut self.practice;
                p.creating = None;
                p.busy = false;
                p.box_action = match &spec.action_space {
                    Space::Box(b) => b
                        .low
                        .iter()
                        .zip(&b.high)
                        .map(|(l, h)| ((l + h) / 2.0).clamp(*l, *h) as f32)
                        .collect(),
                    _ => Vec::new(),
                };
                p.spec = Some(*spec);
                let seed = self.next_random_seed;
                return self.reset(seed);
            }
            Reply::Reset { observation, info } => {
                let p = &mut self.practice;
                p.busy = false;
                p.observation = Some(observation);
                p.info = info;
                p.last_reward = None;
                p.terminated = false;
                p.truncated = false;
                p.episode += 1;
                p.step = 0;
                p.episode_return = 0.0;
            }
            Reply::Stepped {
                observation,
                reward,
                terminated,
                truncated,
                info,
            } => {
                let p = &mut self.practice;
                p.observation = Some(observation);
                p.info = info;
                p.last_reward = Some(reward);
                p.terminated = terminated;
                p.truncated = truncated;
                p.step += 1;
                p.episode_return += reward;
                p.rewards.push(reward);
                if terminated || truncated {
                    p.history.push(EpisodeEntry {
                        number: p.episode,
                        seed: p.seed.unwrap_or(0),
                        steps: p.step,
                        episode_return: p.episode_return,
                        terminated,
                    });
                }
                if !p.playing {
                    p.busy = false;
                }
            }
            Reply::Played => self.practice.busy = false,
            Reply::Failed {
                what,
                message,
                connection_lost,
            } => {
                self.practice.busy = false;
                self.practice.creating = None;
                if connection_lost {
                    self.practice.playing = false;
                    self.connection = Connection::Lost {
                        error: message.clone(),
                    };
                }
                self.warn(format!("{what}: {message}"));
            }
        }
        Vec::new()
    }

    fn on_harness(&mut self, event: HarnessEvent) -> Vec<Effect> {
        let Some(run) = &mut self.eval.run else {
            return Vec::new();
        };
        match event {
            HarnessEvent::Progress(p) => run.progress = Some(p),
            HarnessEvent::Report { report, run_dir } => {
                run.report = Some(report);
                run.run_dir = Some(run_dir);
            }
            HarnessEvent::Output(line) => {
                run.output.push(line);
                let excess = run.output.len().saturating_sub(50);
                run.output.drain(..excess);
            }
            HarnessEvent::Exited {
                success,
                description,
            } => {
                run.finished = Some((success, description));
                return vec![Effect::LoadRuns];
            }
        }
        Vec::new()
    }
}
