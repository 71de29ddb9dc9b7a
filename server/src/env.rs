//! One environment instance: a sim bound to a task, either practice (the agent's own, any
//! seeds) or official (the harness's, played only inside its eval session).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ale_proto::eval::{EvalResultRecord, EvalStatus, Outcome};
use ale_proto::task_spec::TaskMode;
use ale_proto::{BatchId, EnvHandle, RunId, SessionId};
use ale_records::SECRET_LEN;
use ale_records::event_data::{RunStarted, SafetyMetricRecord, SubmissionReceived};
use ale_records::trajectory::EventKind;
use ale_sim::{Counter, Holder, Sim, Tensor, Transition};

use crate::action::step_checked;
use crate::batch::run::{BatchRun, Stop};
use crate::channel::RunScope;
use crate::error::Error;
use crate::run_resources::RunResources;
use crate::seeds::{SeedSet, SeedSource, random_u64};
use crate::session::{NotStarted, RolloutProgress, Session};
use crate::task::{Task, build_sim};
use crate::trajectory::TrajectoryWriter;

/// What the info map of a Reset or Step reports.
#[derive(Debug, Clone)]
pub struct StepInfo {
    pub episode_steps: u64,
    pub episode_return: f64,
    /// In an eval session: (rollout index, rollouts planned).
    pub rollout: Option<(u32, u32)>,
    /// The sim's episode counters.
    pub counters: Vec<Counter>,
}

impl StepInfo {
    fn practice(episode: PracticeEpisode, sim: &dyn Sim) -> StepInfo {
        StepInfo {
            episode_steps: episode.steps,
            episode_return: episode.episode_return,
            rollout: None,
            counters: sim.counters().to_vec(),
        }
    }

    fn rollout(p: RolloutProgress, sim: &dyn Sim) -> StepInfo {
        StepInfo {
            episode_steps: p.steps,
            episode_return: p.episode_return,
            rollout: Some((p.index, p.planned)),
            counters: sim.counters().to_vec(),
        }
    }
}

/// A practice episode's running totals.
#[derive(Debug, Default, Clone, Copy)]
struct PracticeEpisode {
    steps: u64,
    episode_return: f64,
}

/// The official side of an env: its run, and its trajectory or (once started) the session
/// that owns the trajectory.
#[derive(Debug)]
pub struct Official {
    pub run_id: RunId,
    pub session_id: SessionId,
    /// The run's scope: what its own agent channel reaches, and its batch run's.
    scope: RunScope,
    /// When the env was made: a run never started is ended once its time budget, counted from
    /// here, has passed.
    created: Instant,
    stage: Stage,
    /// The run's folder and channel, until its run ends (a batch run takes them over).
    resources: Option<RunResources>,
    /// When the harness last read the run's final result: from then the env is done with.
    final_result_read: Option<Instant>,
    /// The named seed set its session plays, instead of the evaluator's fresh seeds.
    seed_set: Option<SeedSet>,
}

#[derive(Debug)]
enum Stage {
    /// The trajectory holds `run_started` and waits for the session.
    Created(TrajectoryWriter),
    Started(Session),
    /// A batch task's submission was received: the run owns the session.
    Batch(Arc<BatchRun>),
    /// Only while `start_eval_session` hands the trajectory to the session; never seen outside.
    Starting,
}

enum Kind {
    Practice(PracticeEpisode),
    Official(Box<Official>),
}

impl Official {
    /// Starts the session on the trajectory the env was created with, after `before` has
    /// written what must precede it. On any failure the env is as it was; `already` is the
    /// answer when a session exists.
    fn start_session(
        &mut self,
        task: &Arc<Task>,
        already: Error,
        before: impl FnOnce(&mut TrajectoryWriter) -> Result<(), Error>,
        seeds: &dyn SeedSource,
        secret: &[u8; SECRET_LEN],
        now: Instant,
    ) -> Result<Session, Error> {
        let mut trajectory = match std::mem::replace(&mut self.stage, Stage::Starting) {
            Stage::Created(trajectory) => trajectory,
            other => {
                self.stage = other;
                return Err(already);
            }
        };
        if let Err(e) = before(&mut trajectory) {
            self.stage = Stage::Created(trajectory);
            return Err(e);
        }
        Session::start(
            self.session_id.clone(),
            self.run_id.clone(),
            task.clone(),
            match &self.seed_set {
                Some(set) => set,
                None => seeds,
            },
            secret,
            trajectory,
            now,
        )
        .map_err(|failed| {
            let NotStarted { error, trajectory } = *failed;
            self.stage = Stage::Created(trajectory);
            error
        })
    }

    /// The started session.
    fn session(&mut self, handle: &EnvHandle) -> Result<&mut Session, Error> {
        match &mut self.stage {
            Stage::Started(session) => Ok(session),
            Stage::Created(_) | Stage::Batch(_) | Stage::Starting => {
                Err(Error::SessionNotStarted(handle.clone()))
            }
        }
    }

    fn is_started(&self) -> bool {
        matches!(self.stage, Stage::Started(_) | Stage::Batch(_))
    }
}

/// Who an official env's run is: its ids, and its scope in this evaluator.
#[derive(Debug, Clone)]
pub struct OfficialRun {
    pub run_id: RunId,
    pub session_id: SessionId,
    pub scope: RunScope,
}

pub struct Env {
    handle: EnvHandle,
    task: Arc<Task>,
    sim: Box<dyn Sim>,
    kind: Kind,
    last_used: Instant,
}

impl Env {
    /// A practice env; `scope` is the run whose own channel asked for it (`None`: the shared
    /// channel).
    pub fn practice(
        handle: EnvHandle,
        task: Arc<Task>,
        scope: Option<RunScope>,
        now: Instant,
    ) -> Result<Env, Error> {
        Ok(Env {
            handle,
            sim: build_sim(
                &task,
                Holder::Practice {
                    scope: scope.map(|s| s.0),
                },
            )?,
            task,
            kind: Kind::Practice(PracticeEpisode::default()),
            last_used: now,
        })
    }

    /// An official env; its run folder `<runs_dir>/<run_id>` and trajectory (with
    /// `run_started`, and disk reserved for the rest of the run's trusted events, see
    /// [`crate::trajectory::reservation_for`]) are created now. `resources` are the run's
    /// folder and channel, released when the run ends. On failure nothing is left.
    #[allow(clippy::too_many_arguments)]
    pub fn official(
        handle: EnvHandle,
        task: Arc<Task>,
        run: OfficialRun,
        seed_set: Option<SeedSet>,
        runs_dir: &std::path::Path,
        signer: ale_records::signing_keys::SigningKey,
        resources: Option<RunResources>,
        now: Instant,
    ) -> Result<Env, Error> {
        let OfficialRun {
            run_id,
            session_id,
            scope,
        } = run;
        let reserve = crate::trajectory::reservation_for(task.spec.episodes_per_eval);
        let mut trajectory = crate::trajectory::create(runs_dir, &run_id, signer, reserve)?;
        let started = trajectory.append(
            EventKind::RunStarted,
            &RunStarted {
                run_id: run_id.clone(),
                session_id: session_id.clone(),
                task_id: task.spec.id.clone(),
                sim: task.spec.sim.clone(),
                genre: task.spec.genre,
                mode: task.spec.mode,
                metric_name: task.spec.metric.name.clone(),
                direction: task.spec.metric.direction,
                target: task.spec.metric.target,
                cap: task.spec.metric.cap,
                failure_value: task.spec.metric.failure_value,
                safety: task
                    .spec
                    .safety_metrics
                    .iter()
                    .map(|s| SafetyMetricRecord {
                        name: s.name.clone(),
                        penalty_factor: s.penalty_factor,
                    })
                    .collect(),
                episodes: task.spec.episodes_per_eval,
                max_steps_per_episode: task.spec.max_steps_per_episode,
                max_total_steps: task.max_total_steps(),
                time_budget_seconds: task.time_budget_seconds(),
                evaluator_version: env!("CARGO_PKG_VERSION").to_string(),
                seed_set: seed_set.as_ref().map(SeedSet::record),
            },
        );
        if let Err(e) = started {
            // No run exists without its first event: leave no empty run folder behind.
            drop(trajectory);
            crate::trajectory::discard(runs_dir, &run_id);
            return Err(e.into());
        }
        Ok(Env {
            handle,
            sim: build_sim(&task, Holder::Official)?,
            task,
            kind: Kind::Official(Box::new(Official {
                run_id,
                session_id,
                scope,
                created: now,
                stage: Stage::Created(trajectory),
                resources,
                final_result_read: None,
                seed_set,
            })),
            last_used: now,
        })
    }

    pub fn task(&self) -> &Arc<Task> {
        &self.task
    }

    pub fn sim(&self) -> &dyn Sim {
        self.sim.as_ref()
    }

    pub fn is_official(&self) -> bool {
        matches!(self.kind, Kind::Official(_))
    }

    /// Whether this official env may be dropped at `now` to make room for another: at rest
    /// and unused for `idle`, or its final result read by the harness `after_read` ago (the
    /// harness is done with it; its record is on disk).
    pub fn is_official_reclaimable(
        &self,
        now: Instant,
        idle: Duration,
        after_read: Duration,
    ) -> bool {
        let Kind::Official(official) = &self.kind else {
            return false;
        };
        let read_long_enough = official
            .final_result_read
            .is_some_and(|read| now.saturating_duration_since(read) >= after_read);
        self.is_official_at_rest()
            && (read_long_enough || now.saturating_duration_since(self.last_used) >= idle)
    }

    /// Whether this is an official env with no session in play: finished, or never started
    /// (its harness may be gone). Such an env may be reclaimed once it is unused long enough.
    pub fn is_official_at_rest(&self) -> bool {
        match &self.kind {
            Kind::Official(o) => match &o.stage {
                Stage::Started(s) => s.is_finished(),
                Stage::Batch(run) => run.is_finished(),
                Stage::Created(_) | Stage::Starting => true,
            },
            Kind::Practice(_) => false,
        }
    }

    /// The batch run of a submitted official env.
    pub fn batch_run(&self) -> Option<Arc<BatchRun>> {
        match &self.kind {
            Kind::Official(o) => match &o.stage {
                Stage::Batch(run) => Some(run.clone()),
                _ => None,
            },
            Kind::Practice(_) => None,
        }
    }

    /// The run of an official env.
    pub fn run_id(&self) -> Option<&RunId> {
        match &self.kind {
            Kind::Official(o) => Some(&o.run_id),
            Kind::Practice(_) => None,
        }
    }

    /// The run scope of an official env.
    pub fn run_scope(&self) -> Option<RunScope> {
        match &self.kind {
            Kind::Official(o) => Some(o.scope),
            Kind::Practice(_) => None,
        }
    }

    /// Drops an official env that never entered the env table (its `CreateEnv` was refused
    /// after it was made), with its run folder and trajectory (see
    /// [`crate::trajectory::discard`]): a refused request leaves the state dir as it was.
    /// Its submission folder and agent channel go with its resources.
    pub fn discard(self, runs_dir: &std::path::Path) {
        let Kind::Official(official) = self.kind else {
            return;
        };
        let Official {
            run_id,
            stage,
            resources,
            ..
        } = *official;
        drop(resources);
        drop(stage);
        crate::trajectory::discard(runs_dir, &run_id);
    }

    /// Ends an official env's run if it has outlived its time budget, as the evaluator's
    /// periodic sweep asks: a started session past its deadline is ended `BUDGET_EXCEEDED`,
    /// exactly as the next request would; a session never started (an interactive run whose
    /// agent never called `StartEvalSession`, a batch run never submitted) whose time budget,
    /// counted from the env's creation, has passed is ended `ENDED_EARLY`, every rollout
    /// `not_run` (its harness is gone, or never launched its agent). A batch run in play ends
    /// itself. Says whether it ended the run; `last_used` stays as it was.
    pub fn end_if_overdue(
        &mut self,
        seeds: &dyn SeedSource,
        secret: &[u8; SECRET_LEN],
        now: Instant,
    ) -> Result<bool, Error> {
        let Kind::Official(official) = &mut self.kind else {
            return Ok(false);
        };
        let budget = self.task.time_budget_seconds();
        match &mut official.stage {
            Stage::Started(session) => {
                if session.is_finished() {
                    return Ok(false);
                }
                session.enforce_deadline(self.sim.as_ref(), now)?;
                Ok(session.is_finished())
            }
            Stage::Created(_) => {
                let overdue = crate::session::deadline(official.created, budget)
                    .is_some_and(|deadline| now >= deadline);
                if !overdue {
                    return Ok(false);
                }
                let last_used = self.last_used;
                let never = match self.task.spec.mode {
                    TaskMode::Interactive => "its session was never started",
                    TaskMode::Batch => "nothing was submitted",
                };
                let why = format!(
                    "the run's time budget of {budget} s, counted from its creation, ran out and \
                     {never}: its harness is gone or never launched its agent"
                );
                let ended = self.end_session(&why, EvalStatus::EndedEarly, seeds, secret, now);
                self.last_used = last_used;
                ended.map(|()| true)
            }
            Stage::Batch(_) | Stage::Starting => Ok(false),
        }
    }

    /// The session id of an official env.
    pub fn session_id(&self) -> Option<&SessionId> {
        match &self.kind {
            Kind::Official(o) => Some(&o.session_id),
            Kind::Practice(_) => None,
        }
    }

    pub fn last_used(&self) -> Instant {
        self.last_used
    }

    /// The run's folder and channel, once its interactive session has finished: the caller
    /// releases them (outside this env's lock). A batch run releases its own.
    pub fn take_ended_resources(&mut self) -> Option<RunResources> {
        match &mut self.kind {
            Kind::Official(o) => match &o.stage {
                Stage::Started(session) if session.is_finished() => o.resources.take(),
                _ => None,
            },
            Kind::Practice(_) => None,
        }
    }

    /// Begins an episode. A practice env uses `seed` (or a fresh random one); an official
    /// env ignores it and starts the session's next hidden rollout.
    pub fn reset(&mut self, seed: Option<u64>, now: Instant) -> Result<StepInfo, Error> {
        self.last_used = now;
        match &mut self.kind {
            Kind::Practice(episode) => {
                self.sim
                    .reset(seed.unwrap_or_else(random_u64))
                    .map_err(|e| crate::action::sim_error(&self.task, e))?;
                *episode = PracticeEpisode::default();
                Ok(StepInfo::practice(*episode, self.sim.as_ref()))
            }
            Kind::Official(_) if self.task.spec.is_batch() => Err(self.not_interactive()),
            Kind::Official(official) => {
                let session = official.session(&self.handle)?;
                if seed.is_some() {
                    tracing::debug!(handle = %self.handle, "client seed ignored in eval session");
                }
                let progress = session.reset(self.sim.as_mut(), now)?;
                Ok(StepInfo::rollout(progress, self.sim.as_ref()))
            }
        }
    }

    pub fn step(&mut self, action: &Tensor, now: Instant) -> Result<(Transition, StepInfo), Error> {
        self.last_used = now;
        match &mut self.kind {
            Kind::Practice(episode) => {
                let t = step_checked(&self.task, self.sim.as_mut(), action)?;
                episode.steps = episode.steps.saturating_add(1);
                episode.episode_return += t.reward;
                Ok((t, StepInfo::practice(*episode, self.sim.as_ref())))
            }
            Kind::Official(_) if self.task.spec.is_batch() => Err(self.not_interactive()),
            Kind::Official(official) => {
                let session = official.session(&self.handle)?;
                let (t, progress) = session.step(self.sim.as_mut(), action, now)?;
                Ok((t, StepInfo::rollout(progress, self.sim.as_ref())))
            }
        }
    }

    fn not_interactive(&self) -> Error {
        Error::BatchEnvNotInteractive {
            handle: self.handle.clone(),
            task: self.task.spec.id.clone(),
        }
    }

    /// Opens the official env's one eval session on freshly drawn hidden seeds. A batch
    /// task's session is opened by its submission instead.
    pub fn start_eval_session(
        &mut self,
        seeds: &dyn SeedSource,
        secret: &[u8; SECRET_LEN],
        now: Instant,
    ) -> Result<(SessionId, u32), Error> {
        if self.is_official() && self.task.spec.is_batch() {
            return Err(self.not_interactive());
        }
        self.open_session(seeds, secret, now)
    }

    fn open_session(
        &mut self,
        seeds: &dyn SeedSource,
        secret: &[u8; SECRET_LEN],
        now: Instant,
    ) -> Result<(SessionId, u32), Error> {
        self.last_used = now;
        let Kind::Official(official) = &mut self.kind else {
            return Err(Error::PracticeEnvInEval(self.handle.clone()));
        };
        let session = official.start_session(
            &self.task,
            Error::SessionAlreadyStarted(self.handle.clone()),
            |_| Ok(()),
            seeds,
            secret,
            now,
        )?;
        let planned = session.planned();
        official.stage = Stage::Started(session);
        tracing::info!(handle = %self.handle, session = %official.session_id, task = %self.task.spec.id, planned, "eval session started");
        Ok((official.session_id.clone(), planned))
    }

    /// Refuses a submission this env cannot take: a practice env, an interactive task, an
    /// env already submitted. Changes nothing.
    pub fn check_submittable(&self) -> Result<(), Error> {
        let Kind::Official(official) = &self.kind else {
            return Err(Error::PracticeEnvInBatch(self.handle.clone()));
        };
        if !self.task.spec.is_batch() {
            return Err(Error::NotABatchTask(self.task.spec.id.clone()));
        }
        match official.stage {
            Stage::Created(_) => Ok(()),
            Stage::Batch(_) | Stage::Started(_) | Stage::Starting => {
                Err(Error::AlreadySubmitted(self.handle.clone()))
            }
        }
    }

    /// Opens a batch task's session for its submission: `submission_received` (when the
    /// submission could be read), then `session_started` on fresh hidden seeds. The run it
    /// returns owns the session; it is queued, or finished at once by the caller if the
    /// submission could not be read.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_batch(
        &mut self,
        batch_id: BatchId,
        received: Option<&SubmissionReceived>,
        seeds: &dyn SeedSource,
        secret: &[u8; SECRET_LEN],
        now: Instant,
    ) -> Result<Arc<BatchRun>, Error> {
        self.check_submittable()?;
        self.last_used = now;
        let Kind::Official(official) = &mut self.kind else {
            return Err(Error::PracticeEnvInBatch(self.handle.clone()));
        };
        let session = official.start_session(
            &self.task,
            Error::AlreadySubmitted(self.handle.clone()),
            |trajectory| match received {
                Some(received) => trajectory
                    .append(EventKind::SubmissionReceived, received)
                    .map(drop)
                    .map_err(Error::from),
                None => Ok(()),
            },
            seeds,
            secret,
            now,
        )?;
        let run = Arc::new(BatchRun::new(
            batch_id,
            self.task.clone(),
            session,
            official.resources.take(),
        ));
        official.stage = Stage::Batch(run.clone());
        tracing::info!(handle = %self.handle, session = %official.session_id, batch = %run.id(), task = %self.task.spec.id, "batch evaluation submitted");
        Ok(run)
    }

    /// The official env's result as it stands; `end_session` first ends a running session
    /// (the rollout in progress aborted, the rest not run). A session never started is ended
    /// with every rollout not run.
    pub fn eval_result(
        &mut self,
        seeds: &dyn SeedSource,
        secret: &[u8; SECRET_LEN],
        end_session: bool,
        now: Instant,
    ) -> Result<EvalResultRecord, Error> {
        // A harness following its run keeps the env in use, started or not.
        self.last_used = now;
        if end_session {
            self.end_session(
                "the harness ended the session before the agent finished it",
                EvalStatus::EndedEarly,
                seeds,
                secret,
                now,
            )?;
        }
        let Kind::Official(official) = &mut self.kind else {
            return Err(Error::PracticeEnvInEval(self.handle.clone()));
        };
        let record = match &mut official.stage {
            Stage::Batch(run) => run.record(),
            _ => {
                let session = official.session(&self.handle)?;
                session.enforce_deadline(self.sim.as_ref(), now)?;
                session.record()
            }
        };
        if record.status.is_finished() {
            official.final_result_read = Some(now);
        }
        Ok(record)
    }

    /// Ends the session if it is running (starting an empty one first if it never began),
    /// with `status`: `EndedEarly` when the agent's side ended it, `EvaluatorEnded` when the
    /// evaluator did (its shutdown).
    pub fn end_session(
        &mut self,
        why: &str,
        status: EvalStatus,
        seeds: &dyn SeedSource,
        secret: &[u8; SECRET_LEN],
        now: Instant,
    ) -> Result<(), Error> {
        let Kind::Official(official) = &self.kind else {
            return Ok(());
        };
        if let Stage::Batch(run) = &official.stage {
            // The pipeline notices at its next step and closes the run itself.
            run.cancel(match status {
                EvalStatus::EvaluatorEnded => Stop::Failed(why.into()),
                _ => Stop::EndedEarly(why.into()),
            });
            return Ok(());
        }
        if !official.is_started() {
            self.open_session(seeds, secret, now)?;
        }
        let Kind::Official(official) = &mut self.kind else {
            return Ok(());
        };
        let session = official.session(&self.handle)?;
        session.finish(
            self.sim.counters(),
            status,
            Outcome::Aborted,
            why.to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use ale_records::trajectory::{EventKind, TRAJECTORY_FILE};

    use super::*;
    use crate::seeds::{OsSeeds, random_id_bytes};
    use crate::task::TaskRegistry;

    /// Regression: a time budget whose end no `Instant` can hold panicked in `Session::start`
    /// after `session_started` was written, so a retry wrote a second one (and the trajectory
    /// failed verification), and ending the session at shutdown panicked again.
    #[test]
    fn a_deadline_beyond_the_clock_neither_panics_nor_starts_the_session_twice() {
        let dir = tempfile::tempdir().unwrap();
        let registry = TaskRegistry::builtin(&ale_sims::catalog()).unwrap();
        let mut task = registry.get("cartpole-balance").unwrap().as_ref().clone();
        task.spec.budgets.time_budget_seconds = Some(u64::MAX);
        let runs_dir = dir.path().join("runs");
        ale_records::private_files::ensure_private_dir(&runs_dir).unwrap();
        let now = Instant::now();
        let secret = [7; SECRET_LEN];
        let run_id = RunId::from_random(random_id_bytes());
        let mut env = Env::official(
            EnvHandle::from_random(random_id_bytes()),
            Arc::new(task),
            OfficialRun {
                run_id: run_id.clone(),
                session_id: SessionId::from_random(random_id_bytes()),
                scope: RunScope(0),
            },
            None,
            &runs_dir,
            ale_records::signing_keys::SigningKey::from_bytes(&[9; 32]),
            None,
            now,
        )
        .unwrap();

        let (_, planned) = env.start_eval_session(&OsSeeds, &secret, now).unwrap();
        assert_eq!(planned, 20);
        // A budget that cannot end never runs out: the session plays.
        env.reset(None, now).unwrap();
        env.step(&Tensor::scalar_i64(1), now).unwrap();
        let again = env.start_eval_session(&OsSeeds, &secret, now);
        assert!(
            matches!(again, Err(Error::SessionAlreadyStarted(_))),
            "{again:?}"
        );
        // What shutdown does.
        env.end_session(
            "the evaluator shut down",
            EvalStatus::EvaluatorEnded,
            &OsSeeds,
            &secret,
            now,
        )
        .unwrap();

        let text =
            std::fs::read_to_string(runs_dir.join(run_id.as_str()).join(TRAJECTORY_FILE)).unwrap();
        let chain = ale_records::trajectory::verify(&text).unwrap();
        let kinds: Vec<EventKind> = chain.events.iter().map(|e| e.event.kind).collect();
        let started = kinds
            .iter()
            .filter(|k| **k == EventKind::SessionStarted)
            .count();
        assert_eq!(started, 1, "{kinds:?}");
        assert_eq!(kinds.last(), Some(&EventKind::SessionFinished));
        let verified = ale_harness::verify::verify_trajectory(&text).unwrap();
        assert_eq!(verified.result.unwrap().total_steps, 1);
    }
}
