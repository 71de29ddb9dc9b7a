//! [`RemoteSim`]: a [`Sim`] whose env lives in a host process of its own.

use std::sync::Arc;
use std::time::Duration;

use ale_proto::pb;
use ale_proto::sim_host_pb as hp;
use ale_sim::{Counter, EpisodeClock, Holder, Sim, SimError, Space, Tensor, Transition};

use crate::config::HostedSimConfig;
use crate::process::{HostError, HostProcess, HostSlots, Launcher, Timeouts};

/// The most bytes one frame from a host may hold.
pub const MAX_FRAME_BYTES: u64 = 64 << 20;

/// What a host said about its envs at `Hello`.
#[derive(Debug, Clone, PartialEq)]
pub struct HostSpec {
    /// The host's own description ("ale_client.sim_host 0.1.0 (gymnasium 1.4.0)").
    pub host: String,
    pub env_id: String,
    pub observation_space: Space,
    pub action_space: Space,
    pub counters: Vec<String>,
    pub max_episode_steps: u32,
}

/// Everything the envs of one hosted sim share: how to start their hosts, and the spec the
/// first host gave (every later host must give the same).
#[derive(Debug)]
pub struct Hosted {
    pub id: &'static str,
    pub config: HostedSimConfig,
    pub launcher: Arc<dyn Launcher>,
    pub slots: Arc<HostSlots>,
    pub idle_limit: Duration,
    pub spec: HostSpec,
    /// The counter names, as the `Sim` trait hands them out.
    pub counter_names: &'static [&'static str],
}

/// A host started and greeted, with its spec.
pub fn start_host(
    config: &HostedSimConfig,
    launcher: &dyn Launcher,
    slots: &Arc<HostSlots>,
    holder: Holder,
    idle_limit: Duration,
) -> Result<(HostProcess, HostSpec), HostError> {
    let mut host = HostProcess::start(
        launcher,
        &config.command,
        slots,
        holder,
        Timeouts {
            start: config.start_timeout,
            call: config.call_timeout,
        },
        idle_limit,
        MAX_FRAME_BYTES,
    )?;
    let reply = host.call(
        hp::request::Kind::Hello(hp::Hello {
            version: hp::ProtocolVersion::ProtocolVersion1 as i32,
        }),
        true,
    )?;
    let hp::reply::Kind::Hello(hello) = reply else {
        return Err(host.failed(format!("it answered Hello with {}", reply_name(&reply))));
    };
    if hello.version != hp::ProtocolVersion::ProtocolVersion1 as i32 {
        return Err(host.failed(format!(
            "it speaks protocol version {}, and this evaluator speaks {}",
            hello.version,
            hp::ProtocolVersion::ProtocolVersion1 as i32
        )));
    }
    let spec = hello
        .spec
        .ok_or_else(|| "its Hello carries no spec".to_string())
        .and_then(|spec| {
            let space = |s: Option<pb::Space>, which: &str| {
                let s = s.ok_or_else(|| format!("its spec has no {which} space"))?;
                Space::try_from(s).map_err(|e| format!("its {which} space: {e}"))
            };
            Ok(HostSpec {
                host: hello.host.chars().take(200).collect(),
                env_id: spec.env_id.chars().take(200).collect(),
                observation_space: space(spec.observation_space, "observation")?,
                action_space: space(spec.action_space, "action")?,
                counters: spec.counters,
                max_episode_steps: spec.max_episode_steps,
            })
        });
    match spec.and_then(|spec| check_spec(&spec).map(|()| spec)) {
        Ok(spec) => Ok((host, spec)),
        Err(problem) => Err(host.failed(problem)),
    }
}

/// The most elements a hosted env's observation or action may have.
pub const MAX_SPACE_ELEMENTS: usize = 1 << 22;
/// The most counters a host may name, and the longest name.
pub const MAX_COUNTERS: usize = 64;
pub const MAX_COUNTER_NAME: usize = 64;

/// Refuses a spec the evaluator would not be able to hold or tell apart.
fn check_spec(spec: &HostSpec) -> Result<(), String> {
    for (which, space) in [
        ("observation", &spec.observation_space),
        ("action", &spec.action_space),
    ] {
        let elements = elements(space);
        if elements > MAX_SPACE_ELEMENTS {
            return Err(format!(
                "its {which} space has {elements} elements, more than the {MAX_SPACE_ELEMENTS} \
                 allowed"
            ));
        }
    }
    if spec.counters.len() > MAX_COUNTERS {
        return Err(format!(
            "it names {} counters, more than the {MAX_COUNTERS} allowed",
            spec.counters.len()
        ));
    }
    for (i, name) in spec.counters.iter().enumerate() {
        if name.is_empty() || name.chars().count() > MAX_COUNTER_NAME {
            return Err(format!(
                "its counter {i} is named {:?}: a name is 1 to {MAX_COUNTER_NAME} characters",
                name.chars().take(MAX_COUNTER_NAME + 1).collect::<String>()
            ));
        }
        if spec.counters[..i].contains(name) {
            return Err(format!("it names the counter {name:?} twice"));
        }
    }
    Ok(())
}

fn elements(space: &Space) -> usize {
    space
        .shape()
        .iter()
        .try_fold(1usize, |n, d| n.checked_mul(*d))
        .unwrap_or(usize::MAX)
}

/// The largest reply a host of `spec` needs for a block of `envs` envs: per env an
/// observation (at most 11 bytes an element, an int64 varint and its tag), its counters, a
/// reward and two flags, with room for framing.
pub fn reply_bound(spec: &HostSpec, envs: usize) -> u64 {
    let per_env =
        11 * elements(&spec.observation_space) as u64 + 9 * spec.counters.len() as u64 + 256;
    per_env.saturating_mul(envs as u64).saturating_add(4096)
}

fn reply_name(reply: &hp::reply::Kind) -> &'static str {
    match reply {
        hp::reply::Kind::Hello(_) => "HelloReply",
        hp::reply::Kind::Opened(_) => "Opened",
        hp::reply::Kind::Reset(_) => "ResetReply",
        hp::reply::Kind::Step(_) => "StepReply",
        hp::reply::Kind::Closed(_) => "Closed",
        hp::reply::Kind::Failure(_) => "Failure",
    }
}

/// One env on a host process of its own. A host that fails is killed, and the episode with
/// it; the next `reset` starts a fresh host.
pub struct RemoteSim {
    hosted: Arc<Hosted>,
    holder: Holder,
    host: Option<(HostProcess, u32)>,
    clock: EpisodeClock,
    observation: Tensor,
    counters: Vec<Counter>,
}

impl std::fmt::Debug for RemoteSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSim")
            .field("id", &self.hosted.id)
            .field("host", &self.host.as_ref().map(|(h, _)| h.pid()))
            .finish_non_exhaustive()
    }
}

impl RemoteSim {
    /// An env of `hosted` for `holder`, truncated after `max_steps`; its host starts at the
    /// first reset.
    pub fn new(hosted: Arc<Hosted>, max_steps: u32, holder: Holder) -> RemoteSim {
        let observation = Tensor::zeros(
            hosted.spec.observation_space.shape(),
            hosted.spec.observation_space.dtype(),
        );
        let counters = hosted
            .counter_names
            .iter()
            .map(|name| Counter { name, value: 0.0 })
            .collect();
        RemoteSim {
            holder,
            clock: EpisodeClock::new(max_steps),
            hosted,
            host: None,
            observation,
            counters,
        }
    }

    /// The pid of the host process, while one runs.
    pub fn host_pid(&self) -> Option<u32> {
        self.host.as_ref().map(|(h, _)| h.pid())
    }

    fn fault(&mut self, e: HostError) -> SimError {
        // The episode is lost with its host.
        self.host = None;
        self.clock = EpisodeClock::new(self.clock.max_steps());
        match e {
            HostError::NoSlot(_) => SimError::Exhausted(format!("{}: {e}", self.hosted.id)),
            other => SimError::Fault(format!(
                "the sim {}'s host process failed: {other}",
                self.hosted.id
            )),
        }
    }

    /// The host, started (and its env opened) if none runs or the reaper stopped it.
    fn host(&mut self) -> Result<(), HostError> {
        if self.host.as_ref().is_some_and(|(h, _)| !h.was_reaped()) {
            return Ok(());
        }
        self.host = None;
        let hosted = &self.hosted;
        let (mut host, spec) = start_host(
            &hosted.config,
            hosted.launcher.as_ref(),
            &hosted.slots,
            self.holder,
            hosted.idle_limit,
        )?;
        if spec != hosted.spec {
            return Err(host.failed(format!(
                "its spec differs from the one its first host gave ({} with observation {} and \
                 action {}, then {} with {} and {})",
                hosted.spec.env_id,
                hosted.spec.observation_space,
                hosted.spec.action_space,
                spec.env_id,
                spec.observation_space,
                spec.action_space
            )));
        }
        let reply = host.call(hp::request::Kind::Open(hp::Open { count: 1 }), false)?;
        let env = match reply {
            hp::reply::Kind::Opened(o) if o.envs.len() == 1 => o.envs[0],
            other => {
                return Err(host.failed(format!(
                    "it answered Open{{count: 1}} with {}",
                    match &other {
                        hp::reply::Kind::Opened(o) => format!("{} envs", o.envs.len()),
                        other => reply_name(other).to_string(),
                    }
                )));
            }
        };
        host.limit_replies(reply_bound(&hosted.spec, 1));
        self.host = Some((host, env));
        Ok(())
    }

    /// Takes a reply's observation and counters for this env, or says why they are not
    /// acceptable.
    fn take(
        &mut self,
        observations: Vec<pb::Tensor>,
        counters: Vec<hp::Counters>,
    ) -> Result<(), String> {
        let [observation] = <[pb::Tensor; 1]>::try_from(observations)
            .map_err(|o| format!("it sent {} observations for 1 env", o.len()))?;
        let observation = Tensor::try_from(observation)
            .map_err(|e| format!("it sent an observation that does not decode: {e}"))?;
        self.hosted
            .spec
            .observation_space
            .check(&observation)
            .map_err(|e| format!("it sent an observation outside the observation space: {e}"))?;
        let values = match <[hp::Counters; 1]>::try_from(counters) {
            Ok([row]) => row.values,
            Err(rows) if rows.is_empty() && self.counters.is_empty() => Vec::new(),
            Err(rows) => return Err(format!("it sent {} counter rows for 1 env", rows.len())),
        };
        if values.len() != self.counters.len() {
            return Err(format!(
                "it sent {} counter values, and its spec names {}",
                values.len(),
                self.counters.len()
            ));
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(format!(
                "its counter {} is {}",
                self.counters[i].name, values[i]
            ));
        }
        for (counter, value) in self.counters.iter_mut().zip(values) {
            counter.value = value;
        }
        self.observation = observation;
        Ok(())
    }
}

impl Sim for RemoteSim {
    fn id(&self) -> &'static str {
        self.hosted.id
    }

    fn observation_space(&self) -> &Space {
        &self.hosted.spec.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.hosted.spec.action_space
    }

    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        self.host().map_err(|e| self.fault(e))?;
        let (host, env) = self.host.as_mut().expect("started above");
        let reply = host
            .call(
                hp::request::Kind::Reset(hp::Reset {
                    envs: vec![*env],
                    seeds: vec![seed],
                }),
                false,
            )
            .map_err(|e| self.fault(e))?;
        let outcome = match reply {
            hp::reply::Kind::Reset(r) => self.take(r.observations, r.counters),
            other => Err(format!("it answered Reset with {}", reply_name(&other))),
        };
        if let Err(problem) = outcome {
            let e = self.host.as_mut().expect("started above").0.failed(problem);
            return Err(self.fault(e));
        }
        self.clock.reset();
        if let Some((host, _)) = &self.host {
            host.set_in_episode(true);
        }
        Ok(())
    }

    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        self.clock.check_can_step()?;
        self.hosted.spec.action_space.check(action)?;
        let Some((host, env)) = self.host.as_mut() else {
            return Err(SimError::NotReset);
        };
        let reply = host
            .call(
                hp::request::Kind::Step(hp::Step {
                    envs: vec![*env],
                    actions: vec![pb::Tensor::from(action.clone())],
                }),
                false,
            )
            .map_err(|e| self.fault(e))?;
        let outcome = match reply {
            hp::reply::Kind::Step(r) => match (&r.rewards[..], &r.terminated[..], &r.truncated[..])
            {
                ([reward], [terminated], [truncated]) if reward.is_finite() => {
                    let (reward, terminated, truncated) = (*reward, *terminated, *truncated);
                    self.take(r.observations, r.counters)
                        .map(|()| (reward, terminated, truncated))
                }
                ([reward], [_], [_]) => Err(format!("it sent the reward {reward}")),
                _ => Err(format!(
                    "it sent {} rewards, {} terminated and {} truncated flags for 1 env",
                    r.rewards.len(),
                    r.terminated.len(),
                    r.truncated.len()
                )),
            },
            other => Err(format!("it answered Step with {}", reply_name(&other))),
        };
        match outcome {
            Ok((reward, terminated, host_truncated)) => {
                let limit = self.clock.tick(terminated || host_truncated);
                if (terminated || host_truncated || limit)
                    && let Some((host, _)) = &self.host
                {
                    host.set_in_episode(false);
                }
                Ok(Transition {
                    reward,
                    terminated,
                    truncated: host_truncated || limit,
                })
            }
            Err(problem) => {
                let e = self.host.as_mut().expect("stepped above").0.failed(problem);
                Err(self.fault(e))
            }
        }
    }

    fn reset_to_state(&mut self, _state: &[f64]) -> Result<(), SimError> {
        Err(SimError::State(format!(
            "{} is hosted in a process of its own, which can only be reset from a seed",
            self.hosted.id
        )))
    }

    fn observation(&self) -> &Tensor {
        &self.observation
    }

    fn episode_steps(&self) -> u32 {
        self.clock.steps()
    }

    fn counters(&self) -> &[Counter] {
        &self.counters
    }
}
