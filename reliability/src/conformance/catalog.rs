//! The catalog and the specs: every task `ListTasks` names is sound, and an env of it reports
//! the same spaces and metadata.

use ale_client::EnvHandle;
use ale_proto::pb;

use super::Ctx;
use super::check::{During, Outcome, expect, expect_eq, expect_ok, is_prefixed_random};

pub(crate) async fn tasks_valid(ctx: &Ctx) -> Outcome {
    let tasks = ctx.tasks()?;
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        let id = &task.id;
        expect(!id.is_empty(), "every task to have an id", "an empty id")?;
        expect(
            ids.insert(id),
            "task ids to be unique",
            format!("{id} twice"),
        )?;
        for (name, space) in [
            ("observation", &task.observation_space),
            ("action", &task.action_space),
        ] {
            space
                .validate()
                .during(&format!("{id}'s {name} space to be sound; its check"))?;
        }
        expect(
            task.episodes_per_eval > 0 && task.max_steps_per_episode > 0,
            format!("{id} to plan at least one episode of at least one step"),
            format!(
                "{} episodes of at most {} steps",
                task.episodes_per_eval, task.max_steps_per_episode
            ),
        )?;
        expect_eq(
            &format!("{id}: a submission contract exactly when the task is batch ="),
            task.is_batch(),
            task.submission_contract.is_some(),
        )?;
        if let Some(contract) = &task.submission_contract {
            let name = &contract.entrypoint;
            expect(
                !name.is_empty() && !name.contains('/') && name != "..",
                format!("{id}'s contract entrypoint to be a plain file name"),
                format!("{name:?}"),
            )?;
        }
    }
    Ok(())
}

pub(crate) async fn spec_matches_catalog(ctx: &Ctx) -> Outcome {
    let client = ctx.agent().await?;
    let mut raw = client.raw();
    for task in ctx.tasks()? {
        let id = &task.id;
        let created = expect_ok(
            &format!("CreateEnv {id}"),
            raw.create_env(pb::CreateEnvRequest {
                task_id: id.clone(),
                official: false,
                ..Default::default()
            })
            .await,
        )?;
        expect_eq(
            &format!("CreateEnv {id} to answer official ="),
            false,
            created.official,
        )?;
        expect_eq(
            &format!("CreateEnv {id} to answer task_id"),
            id.as_str(),
            &created.task_id,
        )?;
        expect(
            created.session_id.is_empty() && created.run_id.is_empty(),
            format!("a practice env of {id} to have no session or run id"),
            format!("{:?} and {:?}", created.session_id, created.run_id),
        )?;
        let env = client
            .attach(EnvHandle::from_wire(created.handle))
            .await
            .during(&format!("GetSpec of {id}"))?;
        let spec = env.spec();
        expect_eq(
            &format!("GetSpec of {id}: the catalog's observation space"),
            &task.observation_space,
            &spec.observation_space,
        )?;
        expect_eq(
            &format!("GetSpec of {id}: the catalog's action space"),
            &task.action_space,
            &spec.action_space,
        )?;
        expect_eq(
            &format!("GetSpec of {id}: the catalog's metadata"),
            task,
            &spec.task,
        )?;
        expect_eq(
            &format!("GetSpec of {id}: official ="),
            false,
            spec.official,
        )?;
    }
    Ok(())
}

pub(crate) async fn handles_are_prefixed_random(ctx: &Ctx) -> Outcome {
    let task = &ctx.tasks()?[0];
    let client = ctx.agent().await?;
    let mut handles = Vec::new();
    for _ in 0..2 {
        let env = client
            .create(&task.id)
            .await
            .during(&format!("CreateEnv {}", task.id))?;
        let handle = env.handle().to_string();
        expect(
            is_prefixed_random(&handle, EnvHandle::PREFIX),
            format!(
                "a handle of {:?} and 32 lowercase hex digits",
                EnvHandle::PREFIX
            ),
            &handle,
        )?;
        handles.push(handle);
    }
    expect(
        handles[0] != handles[1],
        "two envs to get two handles",
        format!("{} twice", handles[0]),
    )
}
