//! [`HostBlock`]: one host holding a block of envs, all reset or stepped in one message each.

use std::sync::Arc;

use ale_proto::pb;
use ale_proto::sim_host_pb as hp;
use ale_sim::Tensor;

use crate::HostedSimConfig;
use crate::entry::HostPolicy;
use crate::process::{HostError, HostProcess};
use crate::sim::{HostSpec, start_host};

/// What one step of a block gave, env by env.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BlockStep {
    pub observations: Vec<Tensor>,
    pub rewards: Vec<f64>,
    pub terminated: Vec<bool>,
    pub truncated: Vec<bool>,
}

/// A host with `n` envs open.
#[derive(Debug)]
pub struct HostBlock {
    host: HostProcess,
    envs: Vec<u32>,
    spec: Arc<HostSpec>,
}

impl HostBlock {
    /// Starts a host of `config` under `policy` and opens `n` envs on it.
    pub fn start(
        config: &HostedSimConfig,
        policy: &HostPolicy,
        n: u32,
    ) -> Result<HostBlock, HostError> {
        let (mut host, spec) = start_host(
            config,
            policy.launcher.as_ref(),
            &policy.slots,
            policy.idle_limit,
        )?;
        let reply = host.call(hp::request::Kind::Open(hp::Open { count: n }), false)?;
        let envs = match reply {
            hp::reply::Kind::Opened(o) if o.envs.len() == n as usize => o.envs,
            _ => return Err(host.failed(format!("it did not open {n} envs"))),
        };
        Ok(HostBlock {
            host,
            envs,
            spec: Arc::new(spec),
        })
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

    /// Resets every env, `seeds[i]` for env `i`; their first observations.
    pub fn reset(&mut self, seeds: &[u64]) -> Result<Vec<Tensor>, HostError> {
        let reply = self.host.call(
            hp::request::Kind::Reset(hp::Reset {
                envs: self.envs.clone(),
                seeds: seeds.to_vec(),
            }),
            false,
        )?;
        match reply {
            hp::reply::Kind::Reset(r) if r.observations.len() == self.envs.len() => {
                self.decode(r.observations)
            }
            _ => Err(self.host.failed("it answered a block Reset wrongly".into())),
        }
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
                Ok(BlockStep {
                    observations: self.decode(r.observations)?,
                    rewards: r.rewards,
                    terminated: r.terminated,
                    truncated: r.truncated,
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
