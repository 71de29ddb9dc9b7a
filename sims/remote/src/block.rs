//! [`HostBlock`]: one host holding a block of envs, all reset or stepped in one message each.

use std::sync::Arc;

use ale_proto::pb;
use ale_proto::sim_host_pb as hp;
use ale_sim::{Counter, EpisodeClock, Holder, SimBlock, SimError, Space, Tensor, Transition};

use crate::HostedSimConfig;
use crate::entry::HostPolicy;
use crate::process::{HostError, HostProcess};
use crate::sim::{HostSpec, Hosted, start_host};

/// What one step of a block gave, env by env.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BlockStep {
    pub observations: Vec<Tensor>,
    pub rewards: Vec<f64>,
    pub terminated: Vec<bool>,
    pub truncated: Vec<bool>,
    /// One row of counter values per env, in the spec's order.
    pub counters: Vec<Vec<f64>>,
}

/// What one reset of a block gave, env by env.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BlockReset {
    pub observations: Vec<Tensor>,
    pub counters: Vec<Vec<f64>>,
}

/// A host with `n` envs open.
#[derive(Debug)]
pub struct HostBlock {
    host: HostProcess,
    envs: Vec<u32>,
    spec: HostSpec,
}

impl HostBlock {
    /// Starts a host of `config` under `policy`, counted against `holder`'s host slots, and
    /// opens `n` envs on it.
    pub fn start(
        config: &HostedSimConfig,
        policy: &HostPolicy,
        n: u32,
        holder: Holder,
    ) -> Result<HostBlock, HostError> {
        let (mut host, spec) = start_host(
            config,
            policy.launcher.as_ref(),
            &policy.slots,
            holder,
            policy.idle_limit,
        )?;
        let reply = host.call(hp::request::Kind::Open(hp::Open { count: n }), false)?;
        let envs = match reply {
            hp::reply::Kind::Opened(o) if o.envs.len() == n as usize => o.envs,
            _ => return Err(host.failed(format!("it did not open {n} envs"))),
        };
        host.limit_replies(crate::sim::reply_bound(&spec, n as usize));
        // An official block plays a batch run's rollouts back to back: never idle while it
        // lives. A practice block (a vector env's) is reaped when left idle, as a practice
        // env's host is.
        host.set_in_episode(holder == Holder::Official);
        Ok(HostBlock { host, envs, spec })
    }

    pub fn spec(&self) -> &HostSpec {
        &self.spec
    }

    pub fn len(&self) -> usize {
        self.envs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.envs.is_empty()
    }

    /// Resets the envs `which` (indices into the block), `seeds[i]` for `which[i]`.
    pub fn reset(&mut self, which: &[usize], seeds: &[u64]) -> Result<BlockReset, HostError> {
        let envs = which.iter().map(|&i| self.envs[i]).collect::<Vec<_>>();
        let reply = self.host.call(
            hp::request::Kind::Reset(hp::Reset {
                envs,
                seeds: seeds.to_vec(),
            }),
            false,
        )?;
        match reply {
            hp::reply::Kind::Reset(r) if r.observations.len() == which.len() => {
                let counters = self.counter_rows(r.counters, which.len())?;
                Ok(BlockReset {
                    observations: self.decode(r.observations)?,
                    counters,
                })
            }
            _ => Err(self.host.failed("it answered a block Reset wrongly".into())),
        }
    }

    /// `n` rows of the spec's counters, all finite.
    fn counter_rows(
        &mut self,
        rows: Vec<hp::Counters>,
        n: usize,
    ) -> Result<Vec<Vec<f64>>, HostError> {
        let width = self.spec.counters.len();
        if width == 0 && rows.is_empty() {
            return Ok(vec![Vec::new(); n]);
        }
        let fits = rows.len() == n
            && rows
                .iter()
                .all(|r| r.values.len() == width && r.values.iter().all(|v| v.is_finite()));
        if !fits {
            return Err(self.host.failed(format!(
                "it sent counters that are not {n} rows of {width} finite values"
            )));
        }
        Ok(rows.into_iter().map(|r| r.values).collect())
    }

    /// One step of the envs `which` (indices into the block), `actions[i]` for `which[i]`.
    pub fn step(&mut self, which: &[usize], actions: &[Tensor]) -> Result<BlockStep, HostError> {
        let envs = which.iter().map(|&i| self.envs[i]).collect::<Vec<_>>();
        let reply = self.host.call(
            hp::request::Kind::Step(hp::Step {
                envs,
                actions: actions
                    .iter()
                    .map(|a| pb::Tensor::from(a.clone()))
                    .collect(),
            }),
            false,
        )?;
        let n = which.len();
        match reply {
            hp::reply::Kind::Step(r)
                if r.observations.len() == n
                    && r.rewards.len() == n
                    && r.terminated.len() == n
                    && r.truncated.len() == n =>
            {
                if let Some(bad) = r.rewards.iter().find(|r| !r.is_finite()) {
                    return Err(self.host.failed(format!("it sent the reward {bad}")));
                }
                let counters = self.counter_rows(r.counters, n)?;
                Ok(BlockStep {
                    observations: self.decode(r.observations)?,
                    rewards: r.rewards,
                    terminated: r.terminated,
                    truncated: r.truncated,
                    counters,
                })
            }
            _ => Err(self.host.failed("it answered a block Step wrongly".into())),
        }
    }

    fn decode(&mut self, observations: Vec<pb::Tensor>) -> Result<Vec<Tensor>, HostError> {
        let mut out = Vec::with_capacity(observations.len());
        for o in observations {
            let checked = Tensor::try_from(o)
                .map_err(|e| e.to_string())
                .and_then(|t| {
                    self.spec
                        .observation_space
                        .check(&t)
                        .map(|()| t)
                        .map_err(|e| format!("an observation outside the observation space: {e}"))
                });
            match checked {
                Ok(t) => out.push(t),
                Err(problem) => return Err(self.host.failed(format!("it sent {problem}"))),
            }
        }
        Ok(out)
    }
}

/// A block of a hosted sim's envs on one host, as the batch pipeline plays them: each step of
/// the block is one message. A host that fails loses every episode of the block (each env's
/// step answers the fault); the next reset starts a fresh host.
pub struct RemoteBlock {
    hosted: Arc<Hosted>,
    n: usize,
    /// Whose host slots its host counts against.
    holder: Holder,
    host: Option<HostBlock>,
    observations: Vec<Tensor>,
    counters: Vec<Vec<Counter>>,
    clocks: Vec<EpisodeClock>,
    /// Envs whose episode was lost with a failed host: their next step answers the fault,
    /// until they are reset.
    lost: Vec<Option<String>>,
}

impl RemoteBlock {
    /// `n` envs on one host, started at the first reset and counted against `holder`'s
    /// host slots (a batch run's official block, or a practice vector env's).
    pub fn new(hosted: Arc<Hosted>, max_steps: u32, n: usize, holder: Holder) -> RemoteBlock {
        let space = &hosted.spec.observation_space;
        let blank = Tensor::zeros(space.shape(), space.dtype());
        let counters = hosted
            .counter_names
            .iter()
            .map(|name| Counter { name, value: 0.0 })
            .collect::<Vec<_>>();
        RemoteBlock {
            n,
            holder,
            host: None,
            observations: vec![blank; n],
            counters: vec![counters; n],
            clocks: vec![EpisodeClock::new(max_steps); n],
            lost: vec![None; n],
            hosted,
        }
    }

    /// The block's host failed: every episode in play on it is lost (each env's next step
    /// answers the fault), and the next reset starts a fresh host.
    fn fault(&mut self, e: HostError) -> SimError {
        self.host = None;
        let error = match e {
            HostError::NoSlot(_) => SimError::Exhausted(format!("{}: {e}", self.hosted.id)),
            other => SimError::Fault(format!(
                "the sim {}'s host process failed: {other}",
                self.hosted.id
            )),
        };
        let max = self.clocks[0].max_steps();
        for (clock, lost) in self.clocks.iter_mut().zip(&mut self.lost) {
            if clock.check_can_step().is_ok() {
                *lost = Some(error.to_string());
            }
            *clock = EpisodeClock::new(max);
        }
        error
    }

    fn take_counters(&mut self, env: usize, values: Vec<f64>) {
        for (counter, value) in self.counters[env].iter_mut().zip(values) {
            counter.value = value;
        }
    }

    /// One message stepping `which` (none of them lost); a result per env.
    fn step_live(
        &mut self,
        which: &[usize],
        actions: &[Tensor],
    ) -> Vec<Result<Transition, SimError>> {
        if which.is_empty() {
            return Vec::new();
        }
        if let Some(e) = which
            .iter()
            .find_map(|&env| self.clocks[env].check_can_step().err())
        {
            return which.iter().map(|_| Err(e.clone())).collect();
        }
        let Some(host) = self.host.as_mut() else {
            return which.iter().map(|_| Err(SimError::NotReset)).collect();
        };
        match host.step(which, actions) {
            Ok(step) => {
                let BlockStep {
                    observations,
                    rewards,
                    terminated,
                    truncated,
                    counters,
                } = step;
                let mut results = Vec::with_capacity(which.len());
                for (k, ((observation, values), &env)) in observations
                    .into_iter()
                    .zip(counters)
                    .zip(which)
                    .enumerate()
                {
                    self.observations[env] = observation;
                    self.take_counters(env, values);
                    let limit = self.clocks[env].tick(terminated[k] || truncated[k]);
                    results.push(Ok(Transition {
                        reward: rewards[k],
                        terminated: terminated[k],
                        truncated: truncated[k] || limit,
                    }));
                }
                results
            }
            Err(e) => {
                let fault = self.fault(e);
                // These envs' own episodes are answered now, not marked lost.
                for &env in which {
                    self.lost[env] = None;
                }
                which.iter().map(|_| Err(fault.clone())).collect()
            }
        }
    }
}

impl SimBlock for RemoteBlock {
    fn len(&self) -> usize {
        self.n
    }

    fn observation_space(&self) -> &Space {
        &self.hosted.spec.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.hosted.spec.action_space
    }

    fn reset(&mut self, env: usize, seed: u64) -> Result<(), SimError> {
        if self.host.as_ref().is_none_or(|h| h.host.was_reaped()) {
            let policy = HostPolicy {
                launcher: self.hosted.launcher.clone(),
                slots: self.hosted.slots.clone(),
                idle_limit: self.hosted.idle_limit,
            };
            let started =
                HostBlock::start(&self.hosted.config, &policy, self.n as u32, self.holder)
                    .and_then(|mut block| {
                        if *block.spec() == self.hosted.spec {
                            Ok(block)
                        } else {
                            Err(block
                                .host
                                .failed("its spec differs from its first host's".into()))
                        }
                    });
            match started {
                Ok(block) => self.host = Some(block),
                Err(e) => return Err(self.fault(e)),
            }
        }
        let host = self.host.as_mut().expect("started above");
        match host.reset(&[env], &[seed]) {
            Ok(BlockReset {
                mut observations,
                mut counters,
            }) => {
                self.observations[env] = observations.remove(0);
                self.take_counters(env, counters.remove(0));
                self.clocks[env].reset();
                self.lost[env] = None;
                Ok(())
            }
            Err(e) => Err(self.fault(e)),
        }
    }

    fn step(
        &mut self,
        which: &[usize],
        actions: &[Tensor],
        results: &mut Vec<Result<Transition, SimError>>,
    ) {
        results.clear();
        // Envs whose episode went with a failed host answer that fault; the rest step.
        let mut live = Vec::with_capacity(which.len());
        let mut live_actions = Vec::with_capacity(which.len());
        for (&env, action) in which.iter().zip(actions) {
            if self.lost[env].is_none() {
                live.push(env);
                live_actions.push(action.clone());
            }
        }
        let mut stepped = self.step_live(&live, &live_actions).into_iter();
        for &env in which {
            match self.lost[env].take() {
                Some(fault) => results.push(Err(SimError::Fault(fault))),
                None => results.push(stepped.next().unwrap_or(Err(SimError::NotReset))),
            }
        }
    }

    fn observation(&self, env: usize) -> &Tensor {
        &self.observations[env]
    }

    fn counters(&self, env: usize) -> &[Counter] {
        &self.counters[env]
    }
}
