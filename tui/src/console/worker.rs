//! The client worker: a task that owns the gRPC client and the practice env and answers the
//! console's requests, so the UI never waits on the network.

use std::collections::HashMap;

use ale_client::policy::{self, Policy, PolicyKind};
use ale_client::{Client, ClientError, Env};
use ale_sim::Tensor;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::message::{Msg, Reply, Request};

fn connection_lost(e: &ClientError) -> bool {
    match e {
        ClientError::Connect { .. } => true,
        ClientError::Rpc(status) => matches!(
            status.code(),
            tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
        ),
        _ => false,
    }
}

fn failed(what: &str, e: &ClientError) -> Reply {
    Reply::Failed {
        what: what.to_string(),
        message: e.to_string(),
        connection_lost: connection_lost(e),
    }
}

struct Worker {
    endpoint: String,
    client: Option<Client>,
    env: Option<Env>,
    observation: Option<Tensor>,
    policies: HashMap<&'static str, Box<dyn Policy>>,
    replies: UnboundedSender<Msg>,
}

impl Worker {
    fn send(&self, reply: Reply) {
        let _ = self.replies.send(Msg::Reply(reply));
    }

    async fn client(&mut self) -> Result<Client, ClientError> {
        if let Some(c) = &self.client {
            return Ok(c.clone());
        }
        let c = Client::connect(&self.endpoint).await?;
        self.client = Some(c.clone());
        Ok(c)
    }

    async fn handle(&mut self, request: Request) {
        match request {
            Request::ListTasks => match self.client().await {
                Ok(c) => match c.list_tasks().await {
                    Ok(tasks) => self.send(Reply::Tasks(tasks)),
                    Err(e) => {
                        self.client = None;
                        self.send(failed("listing tasks", &e));
                    }
                },
                Err(e) => self.send(failed("connecting", &e)),
            },
            Request::CreatePractice { task_id } => {
                let created = match self.client().await {
                    Ok(c) => c.create(&task_id).await,
                    Err(e) => Err(e),
                };
                match created {
                    Ok(env) => {
                        self.policies.clear();
                        let spec = Box::new(env.spec().clone());
                        self.env = Some(env);
                        self.observation = None;
                        self.send(Reply::Created { spec });
                    }
                    Err(e) => self.send(failed(&format!("creating a {task_id} env"), &e)),
                }
            }
            Request::Reset { seed } => {
                let Some(env) = &mut self.env else { return };
                match env.reset(Some(seed)).await {
                    Ok(r) => {
                        for p in self.policies.values_mut() {
                            p.reset();
                        }
                        self.observation = Some(r.observation.clone());
                        self.send(Reply::Reset {
                            observation: r.observation,
                            info: r.info,
                        });
                    }
                    Err(e) => self.send(failed("reset", &e)),
                }
            }
            Request::Step { action } => self.step(&action).await.map_or((), |_| ()),
            Request::Play {
                steps,
                policy: kind,
            } => {
                for _ in 0..steps {
                    let Some(observation) = self.observation.clone() else {
                        break;
                    };
                    let action = match self.policy(kind) {
                        Ok(p) => p.act(&observation),
                        Err(message) => {
                            self.send(Reply::Failed {
                                what: format!("the {} policy", kind.name()),
                                message,
                                connection_lost: false,
                            });
                            return;
                        }
                    };
                    match self.step(&action).await {
                        Some(false) => {}
                        _ => break,
                    }
                }
                self.send(Reply::Played);
            }
        }
    }

    fn policy(&mut self, kind: PolicyKind) -> Result<&mut Box<dyn Policy>, String> {
        let env = self.env.as_ref().ok_or("no env")?;
        if !self.policies.contains_key(kind.name()) {
            let p = policy::build(kind, env.spec(), 0).map_err(|e| e.to_string())?;
            self.policies.insert(kind.name(), p);
        }
        self.policies
            .get_mut(kind.name())
            .ok_or_else(|| "no policy".into())
    }

    /// One step; `Some(done)` on success, `None` on failure (already reported).
    async fn step(&mut self, action: &Tensor) -> Option<bool> {
        let env = self.env.as_mut()?;
        match env.step(action).await {
            Ok(s) => {
                let done = s.is_done();
                self.observation = Some(s.observation.clone());
                self.send(Reply::Stepped {
                    action: action.clone(),
                    observation: s.observation,
                    reward: s.reward,
                    terminated: s.terminated,
                    truncated: s.truncated,
                    info: s.info,
                });
                Some(done)
            }
            Err(e) => {
                self.send(failed("step", &e));
                None
            }
        }
    }
}

/// Serves requests until the request channel closes.
pub async fn run(
    endpoint: String,
    mut requests: UnboundedReceiver<Request>,
    replies: UnboundedSender<Msg>,
) {
    let mut worker = Worker {
        endpoint,
        client: None,
        env: None,
        observation: None,
        policies: HashMap::new(),
        replies,
    };
    while let Some(request) = requests.recv().await {
        worker.handle(request).await;
    }
}
