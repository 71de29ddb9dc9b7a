//! The host side of the protocol, in Rust: [`serve`] answers an evaluator's requests with the
//! envs `make` builds. A host in another language does the same few things (see
//! `docs/protocol.md`, "Hosted sims").

use std::io::{Read, Write};

use ale_proto::pb;
use ale_proto::sim_host_pb as hp;
use ale_sim::{Sim, SimError, Tensor};
use prost::Message;

/// Why [`serve`] stopped other than at the end of its input.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("reading a request: {0}")]
    Read(std::io::Error),
    #[error("writing a reply: {0}")]
    Write(std::io::Error),
    #[error("a request of {0} bytes, more than the {MAX_REQUEST_BYTES} read")]
    TooLong(u64),
    #[error("a frame that is not a Request: {0}")]
    Decode(prost::DecodeError),
}

/// The largest request a host reads.
pub const MAX_REQUEST_BYTES: u64 = 64 << 20;

/// Serves requests from `input` with answers on `output` until `input` ends. `host` names the
/// host in `Hello`; `make` builds one env (every env must have the same spaces and counters).
pub fn serve(
    input: &mut impl Read,
    output: &mut impl Write,
    host: &str,
    mut make: impl FnMut() -> Box<dyn Sim>,
) -> Result<(), ServeError> {
    let first = make();
    let spec = hp::Spec {
        env_id: first.id().to_string(),
        observation_space: Some(pb::Space::from(first.observation_space())),
        action_space: Some(pb::Space::from(first.action_space())),
        counters: first
            .counters()
            .iter()
            .map(|c| c.name.to_string())
            .collect(),
        max_episode_steps: 0,
    };
    let mut envs: Vec<Option<Box<dyn Sim>>> = Vec::new();
    let mut spare = Some(first);
    let mut frame = Vec::new();
    let mut out = Vec::new();
    loop {
        let mut prefix = [0u8; 4];
        match input.read_exact(&mut prefix) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(ServeError::Read(e)),
        }
        let len = u64::from(u32::from_le_bytes(prefix));
        if len > MAX_REQUEST_BYTES {
            return Err(ServeError::TooLong(len));
        }
        frame.resize(len as usize, 0);
        input.read_exact(&mut frame).map_err(ServeError::Read)?;
        let request = hp::Request::decode(&frame[..]).map_err(ServeError::Decode)?;
        let reply = match request.kind {
            Some(hp::request::Kind::Hello(hello)) => {
                if hello.version == hp::ProtocolVersion::ProtocolVersion1 as i32 {
                    hp::reply::Kind::Hello(hp::HelloReply {
                        version: hp::ProtocolVersion::ProtocolVersion1 as i32,
                        host: host.to_string(),
                        spec: Some(spec.clone()),
                    })
                } else {
                    failure(format!(
                        "protocol version {} asked, this host speaks 1",
                        hello.version
                    ))
                }
            }
            Some(hp::request::Kind::Open(open)) => {
                let first = envs.len() as u32;
                for _ in 0..open.count.min(4096) {
                    envs.push(Some(spare.take().unwrap_or_else(&mut make)));
                }
                hp::reply::Kind::Opened(hp::Opened {
                    envs: (first..envs.len() as u32).collect(),
                })
            }
            Some(hp::request::Kind::Reset(reset)) => reset_envs(&mut envs, reset),
            Some(hp::request::Kind::Step(step)) => step_envs(&mut envs, step),
            Some(hp::request::Kind::Close(close)) => {
                for env in close.envs {
                    if let Some(slot) = envs.get_mut(env as usize) {
                        *slot = None;
                    }
                }
                hp::reply::Kind::Closed(hp::Closed {})
            }
            None => failure("an empty request".into()),
        };
        out.clear();
        let reply = hp::Reply { kind: Some(reply) };
        out.extend_from_slice(&(reply.encoded_len() as u32).to_le_bytes());
        reply
            .encode(&mut out)
            .map_err(|e| ServeError::Write(std::io::Error::other(e)))?;
        output.write_all(&out).map_err(ServeError::Write)?;
        output.flush().map_err(ServeError::Write)?;
    }
}

fn failure(message: String) -> hp::reply::Kind {
    hp::reply::Kind::Failure(hp::Failure { message })
}

fn env_mut(envs: &mut [Option<Box<dyn Sim>>], env: u32) -> Result<&mut Box<dyn Sim>, String> {
    envs.get_mut(env as usize)
        .and_then(Option::as_mut)
        .ok_or_else(|| format!("no open env {env}"))
}

fn counters(sim: &dyn Sim) -> hp::Counters {
    hp::Counters {
        values: sim.counters().iter().map(|c| c.value).collect(),
    }
}

fn reset_envs(envs: &mut [Option<Box<dyn Sim>>], reset: hp::Reset) -> hp::reply::Kind {
    if reset.envs.len() != reset.seeds.len() {
        return failure(format!(
            "{} envs and {} seeds",
            reset.envs.len(),
            reset.seeds.len()
        ));
    }
    let mut reply = hp::ResetReply::default();
    for (env, seed) in reset.envs.into_iter().zip(reset.seeds) {
        let done = env_mut(envs, env).and_then(|sim| {
            sim.reset(seed).map_err(|e| e.to_string())?;
            reply.observations.push(sim.observation().clone().into());
            reply.counters.push(counters(sim.as_ref()));
            Ok(())
        });
        if let Err(e) = done {
            return failure(format!("env {env}: {e}"));
        }
    }
    hp::reply::Kind::Reset(reply)
}

fn step_envs(envs: &mut [Option<Box<dyn Sim>>], step: hp::Step) -> hp::reply::Kind {
    if step.envs.len() != step.actions.len() {
        return failure(format!(
            "{} envs and {} actions",
            step.envs.len(),
            step.actions.len()
        ));
    }
    let mut reply = hp::StepReply::default();
    for (env, action) in step.envs.into_iter().zip(step.actions) {
        let done = env_mut(envs, env).and_then(|sim| {
            let action = Tensor::try_from(action).map_err(|e| e.to_string())?;
            let t = sim.step(&action).map_err(|e: SimError| e.to_string())?;
            reply.observations.push(sim.observation().clone().into());
            reply.rewards.push(t.reward);
            reply.terminated.push(t.terminated);
            reply.truncated.push(t.truncated);
            reply.counters.push(counters(sim.as_ref()));
            Ok(())
        });
        if let Err(e) = done {
            return failure(format!("env {env}: {e}"));
        }
    }
    hp::reply::Kind::Step(reply)
}
