//! The practice view: a practice env for the selected task, played by hand or by a built-in
//! policy, with the sim drawn live, the observation, charts and the episode history.

mod draw;
pub mod labels;

pub use draw::draw;

use std::time::{Duration, Instant};

use ale_client::policy::PolicyKind;
use ale_client::{EnvSpec, Info, Space};
use ale_sim::{Drawing, MapView, Tensor, TensorData};
use crossterm::event::{KeyCode, KeyEvent};

use super::bindings::Command;
use super::message::{Reply, Request};
use super::outcome::Outcome;
use super::seeds::Seeds;
use super::view::{InputMode, View};

/// Auto-play speeds offered by + and -.
pub const SPEEDS: &[u32] = &[1, 5, 10, 30, 60, 120, 250, 500, 1000, 2000, 5000];
/// The auto-play speed a console starts with.
const DEFAULT_SPEED: u32 = 60;
/// The most digits a seed (a `u64`) can have.
const SEED_DIGITS: usize = 20;

/// Who plays in the practice view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Player {
    #[default]
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

/// The operator's map of a practice env: a replica of its sim here, reset with the env's seed
/// and stepped with its actions, drawn whole for as long as its observations are the
/// evaluator's (see [`ale_sim::MapView`]). Practice only: an official run's seeds are hidden.
pub struct MapReplica {
    sim: Box<dyn MapView>,
    /// Why the replica stopped following the env, once it has.
    parted: Option<String>,
}

impl std::fmt::Debug for MapReplica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MapReplica")
            .field("sim", &self.sim.id())
            .field("parted", &self.parted)
            .finish()
    }
}

impl MapReplica {
    /// A replica of `sim`'s entry, if it draws a map.
    fn of(sim: &str) -> Option<MapReplica> {
        let entry = crate::sim_catalog().find(sim)?;
        // Never truncated here: the env's own limit ends its episodes, and a reset follows.
        let sim = entry.map_replica(u32::MAX)?;
        Some(MapReplica { sim, parted: None })
    }

    /// The whole scene, while the replica follows the env; else why it does not.
    pub fn map(&self) -> Result<Drawing, &str> {
        match &self.parted {
            None => Ok(self.sim.map()),
            Some(why) => Err(why),
        }
    }

    fn reset(&mut self, seed: Option<u64>, observation: &Tensor) {
        let Some(seed) = seed else {
            self.parted = Some("the episode's seed is not known here".into());
            return;
        };
        // A reset starts following again: the env's new episode depends on its seed alone.
        self.parted = match self.sim.reset(seed) {
            Ok(()) => None,
            Err(e) => Some(format!("the replica could not reset: {e}")),
        };
        self.check(observation);
    }

    fn step(&mut self, action: &Tensor, observation: &Tensor) {
        if self.parted.is_some() {
            return;
        }
        if let Err(e) = self.sim.step(action) {
            self.parted = Some(format!("the replica could not step: {e}"));
            return;
        }
        self.check(observation);
    }

    fn check(&mut self, observation: &Tensor) {
        if self.parted.is_none() && self.sim.observation() != observation {
            self.parted =
                Some("the replica here parted from the evaluator's sim (another version?)".into());
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

#[derive(Debug)]
pub struct Practice {
    pub spec: Option<EnvSpec>,
    /// Set while the env is being created.
    pub creating: Option<String>,
    pub seed: Option<u64>,
    /// The digits of a seed being typed (after `s`).
    pub seed_input: String,
    pub observation: Option<Tensor>,
    /// The action of the last step, whoever chose it; none since the last reset.
    pub last_action: Option<Tensor>,
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
    /// The operator's map, for a sim that draws one.
    pub map: Option<MapReplica>,
    pub player: Player,
    pub playing: bool,
    /// Auto-play speed, steps per second.
    pub speed: u32,
    pub box_action: Vec<f32>,
    pub box_cursor: usize,
    /// A reset or step is in flight; no other is sent until it answers.
    pub busy: bool,
    /// This env was made after the evaluator came back: the one before went with it.
    pub recreated: bool,
    /// The seed to reset a recreated env with (the last one the old env used).
    restore_seed: Option<u64>,
    last_play: Option<Instant>,
}

impl Default for Practice {
    fn default() -> Practice {
        Practice {
            spec: None,
            creating: None,
            seed: None,
            seed_input: String::new(),
            observation: None,
            last_action: None,
            last_reward: None,
            terminated: false,
            truncated: false,
            info: Info::default(),
            episode: 0,
            step: 0,
            episode_return: 0.0,
            rewards: Vec::new(),
            history: Vec::new(),
            map: None,
            player: Player::Manual,
            playing: false,
            speed: DEFAULT_SPEED,
            box_action: Vec::new(),
            box_cursor: 0,
            busy: false,
            recreated: false,
            restore_seed: None,
            last_play: None,
        }
    }
}

impl Practice {
    pub fn episode_over(&self) -> bool {
        self.terminated || self.truncated
    }

    /// Starts over with a new env for `task_id`, keeping the auto-play speed.
    pub fn create(&mut self, task_id: String) -> Vec<Outcome> {
        *self = Practice {
            creating: Some(task_id.clone()),
            speed: self.speed.max(1),
            busy: true,
            ..Practice::default()
        };
        vec![Outcome::rpc(Request::CreatePractice { task_id })]
    }

    /// After the evaluator came back: a new env of the same task, reset with the last seed.
    /// Nothing if there was no env.
    pub fn recreate(&mut self) -> Vec<Outcome> {
        let Some(task_id) = self
            .spec
            .as_ref()
            .map(|s| s.task.id.clone())
            .or_else(|| self.creating.clone())
        else {
            return Vec::new();
        };
        let seed = self.seed;
        let outcomes = self.create(task_id);
        self.recreated = true;
        self.restore_seed = seed;
        outcomes
    }

    /// The seed a recreated env will be reset with.
    pub fn restore_seed(&self) -> Option<u64> {
        self.restore_seed
    }

    fn reset(&mut self, seed: u64) -> Vec<Outcome> {
        if self.spec.is_none() || self.busy {
            return Vec::new();
        }
        self.busy = true;
        self.seed = Some(seed);
        vec![Outcome::rpc(Request::Reset { seed })]
    }

    /// The action manual play takes now, from a digit, an arrow, or the Box sliders.
    fn manual_action(&self, command: Command) -> Option<Tensor> {
        let spec = self.spec.as_ref()?;
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
            // The sliders hold the elements in order; the action takes the space's shape
            // (a multi-robot sim's Box is [robots, 2]).
            (Space::Box(b), Command::StepOnce) => {
                Tensor::new(b.shape.clone(), TensorData::F32(self.box_action.clone())).ok()
            }
            _ => None,
        }
    }

    pub fn on_command(&mut self, command: Command, seeds: &mut Seeds) -> Vec<Outcome> {
        let Some(spec) = self.spec.clone() else {
            return if command == Command::Back {
                vec![Outcome::Show(View::Tasks)]
            } else {
                vec![Outcome::say(
                    "pick a task in the tasks view (1) and press Enter",
                )]
            };
        };
        match command {
            Command::Back => {
                self.playing = false;
                return vec![Outcome::Show(View::Tasks)];
            }
            Command::Reset => return self.reset(seeds.next_seed()),
            Command::EnterSeed => {
                self.playing = false;
                self.seed_input.clear();
                return vec![Outcome::Input(InputMode::Seed)];
            }
            Command::CyclePolicy => {
                self.player = match self.player {
                    Player::Manual => Player::Policy(PolicyKind::Random),
                    Player::Policy(PolicyKind::Random) => Player::Policy(PolicyKind::Heuristic),
                    Player::Policy(PolicyKind::Heuristic) => Player::Manual,
                };
                if self.player == Player::Manual {
                    self.playing = false;
                }
            }
            Command::TogglePlay => {
                if self.player == Player::Manual {
                    self.player = Player::Policy(PolicyKind::Heuristic);
                }
                self.playing = !self.playing;
                self.last_play = None;
            }
            Command::Faster | Command::Slower => {
                let i = SPEEDS.iter().position(|s| *s >= self.speed).unwrap_or(0);
                let j = if command == Command::Faster {
                    (i + 1).min(SPEEDS.len() - 1)
                } else {
                    i.saturating_sub(1)
                };
                self.speed = SPEEDS[j];
            }
            Command::Up | Command::Down if matches!(spec.action_space, Space::Box(_)) => {
                let n = self.box_action.len().max(1);
                self.box_cursor = if command == Command::Up {
                    (self.box_cursor + n - 1) % n
                } else {
                    (self.box_cursor + 1) % n
                };
            }
            Command::Left | Command::Right if matches!(spec.action_space, Space::Box(_)) => {
                if let Space::Box(b) = &spec.action_space {
                    let i = self.box_cursor.min(b.low.len().saturating_sub(1));
                    let (lo, hi) = (b.low[i], b.high[i]);
                    let span = if lo.is_finite() && hi.is_finite() {
                        hi - lo
                    } else {
                        2.0
                    };
                    let delta =
                        (span / 10.0) as f32 * if command == Command::Left { -1.0 } else { 1.0 };
                    if let Some(v) = self.box_action.get_mut(i) {
                        *v = (f64::from(*v + delta)).clamp(lo, hi) as f32;
                    }
                }
            }
            command => return self.step(command, &spec),
        }
        Vec::new()
    }

    /// A command that steps the env: a manual action, or one step of the policy.
    fn step(&mut self, command: Command, spec: &EnvSpec) -> Vec<Outcome> {
        if self.observation.is_none() {
            return vec![Outcome::say(
                "press r to reset (or s to type a seed) before stepping",
            )];
        }
        if self.episode_over() {
            return vec![Outcome::say(
                "the episode is over: press r to start another",
            )];
        }
        if self.busy {
            return Vec::new();
        }
        if let (Player::Policy(kind), Command::StepOnce) = (self.player, command) {
            self.busy = true;
            return vec![Outcome::rpc(Request::Play {
                steps: 1,
                policy: kind,
            })];
        }
        if let Some(action) = self.manual_action(command) {
            self.busy = true;
            return vec![Outcome::rpc(Request::Step { action })];
        }
        if matches!(spec.action_space, Space::Discrete(_)) {
            return vec![Outcome::say("that action is not in the action space")];
        }
        Vec::new()
    }

    /// A key while a seed is typed.
    pub fn on_seed_key(&mut self, key: KeyEvent) -> Vec<Outcome> {
        let done = Outcome::Input(InputMode::Commands);
        match key.code {
            KeyCode::Esc => vec![done],
            KeyCode::Backspace => {
                self.seed_input.pop();
                Vec::new()
            }
            KeyCode::Char(c) if c.is_ascii_digit() && self.seed_input.len() < SEED_DIGITS => {
                self.seed_input.push(c);
                Vec::new()
            }
            KeyCode::Enter => {
                let text = std::mem::take(&mut self.seed_input);
                let mut outcomes = vec![done];
                match text.parse::<u64>() {
                    Ok(seed) => outcomes.extend(self.reset(seed)),
                    Err(_) => outcomes.push(Outcome::warn(format!(
                        "{text:?} is not a seed: type a whole number from 0 to {}",
                        u64::MAX
                    ))),
                }
                outcomes
            }
            _ => Vec::new(),
        }
    }

    /// Auto-play: as many policy steps as the speed asks for since the last ones, and a new
    /// episode when one ends.
    pub fn on_tick(&mut self, now: Instant, seeds: &mut Seeds) -> Vec<Outcome> {
        if !self.playing || self.busy || self.observation.is_none() {
            return Vec::new();
        }
        if self.episode_over() {
            return self.reset(seeds.next_seed());
        }
        let Player::Policy(kind) = self.player else {
            return Vec::new();
        };
        let elapsed = self
            .last_play
            .map_or(Duration::from_millis(33), |t| now.duration_since(t));
        let due = (elapsed.as_secs_f64() * f64::from(self.speed)).floor() as u32;
        let steps = due.min(self.speed);
        if steps == 0 {
            return Vec::new();
        }
        self.last_play = Some(now);
        self.busy = true;
        vec![Outcome::rpc(Request::Play {
            steps,
            policy: kind,
        })]
    }

    /// The worker's answer to a practice request.
    pub fn on_reply(&mut self, reply: Reply, seeds: &mut Seeds) -> Vec<Outcome> {
        match reply {
            Reply::Created { spec } => {
                self.creating = None;
                self.busy = false;
                self.box_action = match &spec.action_space {
                    Space::Box(b) => b
                        .low
                        .iter()
                        .zip(&b.high)
                        .map(|(l, h)| ((l + h) / 2.0).clamp(*l, *h) as f32)
                        .collect(),
                    _ => Vec::new(),
                };
                self.map = MapReplica::of(&spec.task.sim);
                self.spec = Some(*spec);
                let seed = self
                    .restore_seed
                    .take()
                    .unwrap_or_else(|| seeds.next_seed());
                return self.reset(seed);
            }
            Reply::Reset { observation, info } => {
                if let Some(map) = &mut self.map {
                    map.reset(self.seed, &observation);
                }
                self.busy = false;
                self.observation = Some(observation);
                self.info = info;
                self.last_action = None;
                self.last_reward = None;
                self.terminated = false;
                self.truncated = false;
                self.episode += 1;
                self.step = 0;
                self.episode_return = 0.0;
            }
            Reply::Stepped {
                action,
                observation,
                reward,
                terminated,
                truncated,
                info,
            } => {
                if let Some(map) = &mut self.map {
                    map.step(&action, &observation);
                }
                self.last_action = Some(action);
                self.observation = Some(observation);
                self.info = info;
                self.last_reward = Some(reward);
                self.terminated = terminated;
                self.truncated = truncated;
                self.step += 1;
                self.episode_return += reward;
                self.rewards.push(reward);
                if terminated || truncated {
                    self.history.push(EpisodeEntry {
                        number: self.episode,
                        seed: self.seed.unwrap_or(0),
                        steps: self.step,
                        episode_return: self.episode_return,
                        terminated,
                    });
                }
                if !self.playing {
                    self.busy = false;
                }
            }
            Reply::Played => self.busy = false,
            // The app handles these: they are not about the practice env alone.
            Reply::Tasks(_) | Reply::Failed { .. } => {}
        }
        Vec::new()
    }

    /// A request failed; nothing is in flight any more.
    pub fn on_failed(&mut self, connection_lost: bool) {
        self.busy = false;
        self.creating = None;
        if connection_lost {
            self.playing = false;
        }
    }
}
