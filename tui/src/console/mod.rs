//! The console: a ratatui app over an evaluator, embedded or attached.
//!
//! Each view is a module holding its state, its update and (in `draw.rs`) its drawing:
//! [`tasks`], [`practice`], [`eval`], [`runs`]. [`app`] holds the views and routes keys and
//! messages to them, without I/O; [`view`] (the view shown, where typed keys go) and
//! [`outcome`] (what a view's update asks of the app) are what the app and the views share;
//! [`message`] is what flows between the app and the event loop; [`screen`] draws the frame
//! around the current view and [`widgets`] the pieces views share; [`bindings`] is the key
//! table and [`theme`] the colours. The effects are performed by [`worker`] (RPCs through the
//! client crate), [`harness_child`] (official runs as `ale harness run` processes) and
//! [`effects`] (file work). [`Console`] ties them together and [`event_loop`] runs it on any
//! ratatui backend.

pub mod app;
pub mod bindings;
pub mod effects;
pub mod eval;
pub mod harness_child;
pub mod health;
pub mod message;
pub mod outcome;
pub mod practice;
pub mod runs;
pub mod screen;
pub mod seeds;
pub mod tasks;
pub mod theme;
pub mod view;
pub mod widgets;
pub mod worker;

#[cfg(test)]
mod tests;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use crossterm::event::{Event, EventStream, KeyEventKind};
use futures::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use app::App;
use message::{Effect, HarnessEvent, HarnessExit, Msg, Request};

/// The screen is redrawn at most once per frame while messages stream in (~33 fps).
pub const FRAME: Duration = Duration::from_millis(30);

#[derive(clap::Args, Debug, Clone)]
pub struct ConsoleArgs {
    /// Attach to a running evaluator's agent channel instead of embedding one.
    #[arg(long, value_name = "URL")]
    pub connect: Option<String>,
    /// The colour theme (dark, light, high-contrast, colorblind, or one in ~/.config/ale/themes).
    #[arg(long, value_name = "NAME")]
    pub theme: Option<String>,
    #[command(flatten)]
    pub state_dir: crate::StateDirArg,
    /// Extra task configs (*.toml) for the embedded evaluator, as `ale serve --tasks-dir`: sims hosted in processes of their own included.
    #[arg(long, value_name = "DIR", conflicts_with = "connect")]
    pub tasks_dir: Option<std::path::PathBuf>,
}

/// The console's state plus the machinery that performs its effects.
pub struct Console {
    pub app: App,
    requests: UnboundedSender<Request>,
    messages: UnboundedReceiver<Msg>,
    sender: UnboundedSender<Msg>,
    state_dir: PathBuf,
    ale_exe: PathBuf,
    harness: Option<u32>,
    /// Frames drawn by the event loop, and the time spent drawing them.
    pub frames: u64,
    pub draw_time: Duration,
}

impl Console {
    /// A console whose worker talks to `endpoint`; official runs use `state_dir`.
    pub fn new(app: App, endpoint: String, state_dir: PathBuf, ale_exe: PathBuf) -> Console {
        let (requests, request_rx) = unbounded_channel();
        let (sender, messages) = unbounded_channel();
        tokio::spawn(health::watch(endpoint.clone(), sender.clone()));
        tokio::spawn(worker::run(endpoint, request_rx, sender.clone()));
        let mut console = Console {
            app,
            requests,
            messages,
            sender,
            state_dir,
            ale_exe,
            harness: None,
            frames: 0,
            draw_time: Duration::ZERO,
        };
        let effects = console.app.start();
        console.perform_all(effects);
        console
    }

    /// Feeds one message through the app and performs what it asks for.
    pub fn handle(&mut self, msg: Msg) {
        let effects = self.app.update(msg);
        self.perform_all(effects);
    }

    fn perform_all(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            self.perform(effect);
        }
    }

    fn perform(&mut self, effect: Effect) {
        match effect {
            Effect::Rpc(request) => {
                // The worker stops only when the console does.
                let _ = self.requests.send(request);
            }
            Effect::StartHarness { task_id, agent } => {
                match harness_child::start(
                    &self.ale_exe,
                    &self.state_dir,
                    &task_id,
                    &agent,
                    self.sender.clone(),
                ) {
                    Ok(pid) => self.harness = Some(pid),
                    Err(e) => self.send(Msg::Harness(HarnessEvent::Exited(HarnessExit {
                        success: false,
                        description: format!("cannot start the harness: {e}"),
                    }))),
                }
            }
            Effect::CancelHarness => {
                if let Some(pid) = self.harness.take() {
                    harness_child::cancel(pid);
                }
            }
            Effect::LoadRuns => {
                let state_dir = self.state_dir.clone();
                self.in_background(move || effects::list_runs(&state_dir));
            }
            Effect::VerifyRun(run_dir) => {
                let state_dir = self.state_dir.clone();
                self.in_background(move || effects::verify_run(&state_dir, run_dir));
            }
            Effect::ExportPlot { run_dir, format } => {
                self.in_background(move || {
                    effects::export_here(|here| effects::export_plot(&run_dir, format, here))
                });
            }
            Effect::ReadAgentLog { run_id, lines } => {
                let run_dir = ale_records::layout::run_dir(&self.state_dir, &run_id);
                self.in_background(move || Msg::AgentLog {
                    tail: effects::agent_log_tail(&run_dir, lines),
                    run_id,
                });
            }
            Effect::LoadLeaderboard { task } => {
                let state_dir = self.state_dir.clone();
                self.in_background(move || effects::rank_runs(&state_dir, task));
            }
            Effect::CompareRuns { left, right } => {
                let state_dir = self.state_dir.clone();
                self.in_background(move || effects::compare_runs(&state_dir, &left, &right));
            }
            Effect::ExportComparePlot { both, format } => {
                self.in_background(move || {
                    effects::export_here(|here| effects::export_compare_plot(&both, format, here))
                });
            }
        }
    }

    fn send(&self, msg: Msg) {
        // The receiver lives in `self`: sending cannot fail while the console exists.
        let _ = self.sender.send(msg);
    }

    /// Runs blocking `work` off the UI thread; its message arrives like any other.
    fn in_background(&self, work: impl FnOnce() -> Msg + Send + 'static) {
        let sender = self.sender.clone();
        tokio::task::spawn_blocking(move || {
            let _ = sender.send(work());
        });
    }

    /// The next message from the worker, the harness child or a background task.
    pub async fn next_message(&mut self) -> Option<Msg> {
        self.messages.recv().await
    }

    /// Handles messages until no request is outstanding and `done` holds, or `timeout` passes.
    #[cfg(test)]
    pub async fn settle(&mut self, timeout: Duration, done: impl Fn(&App) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.app.pending == 0 && done(&self.app) {
                return true;
            }
            match tokio::time::timeout_at(deadline, self.messages.recv()).await {
                Ok(Some(msg)) => self.handle(msg),
                _ => return false,
            }
        }
    }
}

/// Runs the console on `terminal` until the user quits. `events` is the terminal's input.
pub async fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    console: &mut Console,
    mut events: impl Stream<Item = std::io::Result<Event>> + Unpin,
) -> anyhow::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let mut tick = tokio::time::interval(FRAME);
    // Redraw when something changed, at most once per frame, on a steady cadence; keys at once.
    let mut next_frame = tokio::time::Instant::now();
    let mut dirty = true;
    loop {
        if dirty && tokio::time::Instant::now() >= next_frame {
            let t = Instant::now();
            terminal.draw(|frame| screen::draw(frame, &console.app))?;
            console.draw_time += t.elapsed();
            console.frames += 1;
            next_frame = tokio::time::Instant::now() + FRAME;
            dirty = false;
        }
        if console.app.quit {
            return Ok(());
        }
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => {
                    console.handle(Msg::Key(key));
                    dirty = true;
                    next_frame = tokio::time::Instant::now();
                }
                Some(Ok(Event::Mouse(mouse))) => {
                    console.handle(Msg::Mouse(mouse));
                    dirty = true;
                }
                Some(Ok(Event::Resize(_, _))) => {
                    dirty = true;
                    next_frame = tokio::time::Instant::now();
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(()),
            },
            Some(msg) = console.messages.recv() => {
                console.handle(msg);
                dirty = true;
            }
            _ = tokio::time::sleep_until(next_frame), if dirty => {}
            _ = tick.tick() => {
                console.handle(Msg::Tick(Instant::now()));
                dirty = true;
            }
        }
    }
}

/// `ale` with no subcommand: the console on an embedded evaluator, or attached to one.
pub fn run(args: ConsoleArgs) -> anyhow::Result<ExitCode> {
    let themes = theme::load_all(theme::user_theme_dir().as_deref())?;
    let theme_index = match &args.theme {
        None => 0,
        Some(name) => themes
            .iter()
            .position(|t| &t.name == name)
            .with_context(|| {
                let names: Vec<&str> = themes.iter().map(|t| t.name.as_str()).collect();
                format!("no theme {name:?}; available: {}", names.join(", "))
            })?,
    };
    let keymap = bindings::KeyMap::load(bindings::user_keys_file().as_deref())?;
    let state_dir = args.state_dir.resolve();
    let ale_exe = std::env::current_exe().context("cannot find the ale executable")?;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "the console needs a terminal; for headless use see `ale --help` (ale serve, ale harness run, ale demo)"
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let (endpoint, label, server) = match &args.connect {
            Some(url) => (url.clone(), url.clone(), None),
            None => {
                // Before any sim host starts: an isolated host is started with it covered.
                ale_server::state_dir::prepare(&state_dir)
                    .with_context(|| format!("cannot prepare the state dir {}", state_dir.display()))?;
                let catalog = crate::hosting_catalog(&state_dir, &crate::SimHostArgs::default());
                let tasks = match &args.tasks_dir {
                    Some(dir) => ale_server::TaskRegistry::with_dir(dir, &catalog)?,
                    None => ale_server::TaskRegistry::builtin(&catalog)?,
                };
                let evaluator = ale_server::Evaluator::new(tasks, &state_dir)
                    .with_context(|| format!("cannot prepare the state dir {}", state_dir.display()))?;
                let server = ale_server::serve::start(Arc::new(evaluator), "127.0.0.1:0".parse()?)
                    .await
                    .with_context(|| format!("cannot start the embedded evaluator (is another one serving {}? try --state-dir or --connect)", state_dir.display()))?;
                (server.agent_endpoint(), format!("embedded {}", server.agent_addr()), Some(server))
            }
        };
        let app = App::new(themes, theme_index, keymap, label, seeds::Seeds::from_clock());
        let mut console = Console::new(app, endpoint, state_dir, ale_exe);
        // ratatui's hook restores the screen after a panic; ours also releases the mouse.
        let mut terminal = ratatui::try_init().context("cannot take over the terminal")?;
        let ratatui_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
            ratatui_hook(info);
        }));
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture);
        let result = event_loop(&mut terminal, &mut console, EventStream::new()).await;
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
        ratatui::restore();
        if let Some(pid) = console.harness.take() {
            harness_child::cancel(pid);
        }
        if let Some(server) = server {
            server.shutdown().await;
        }
        result.map(|()| ExitCode::SUCCESS)
    })
}
