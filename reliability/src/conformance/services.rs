//! The services beside `AleEnv` on every listener: health, reflection and the catalog.

use ale_client::Client;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
use tonic_reflection::pb::v1::ServerReflectionRequest;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

use super::Ctx;
use super::check::{During, Outcome, Problem, expect, expect_eq, expect_ok};

const ALE_ENV: &str = "ale.v1.AleEnv";
const CATALOG: &str = "ale.v1.Catalog";

/// `grpc.health.v1.Health/Check` answers SERVING for the server and for `ale.v1.AleEnv`.
async fn check_health(client: &Client, channel_name: &str) -> Outcome {
    let mut health = HealthClient::new(client.channel());
    for service in ["", ALE_ENV] {
        let what = format!("Health/Check {service:?} on the {channel_name} channel");
        let answer = expect_ok(
            &what,
            health
                .check(HealthCheckRequest {
                    service: service.into(),
                })
                .await,
        )?;
        expect_eq(&what, ServingStatus::Serving, answer.status())?;
    }
    Ok(())
}

/// The service names `grpc.reflection.v1` lists.
async fn reflected_services(client: &Client, channel_name: &str) -> Result<Vec<String>, Problem> {
    let what = format!("ServerReflectionInfo list_services on the {channel_name} channel");
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = expect_ok(
        &what,
        ServerReflectionClient::new(client.channel())
            .server_reflection_info(tokio_stream::iter([request]))
            .await,
    )?;
    let answer = answers
        .message()
        .await
        .during(&what)?
        .ok_or_else(|| Problem::fail(format!("{what} to answer"), "an empty stream"))?;
    match answer.message_response {
        Some(MessageResponse::ListServicesResponse(list)) => {
            Ok(list.service.into_iter().map(|s| s.name).collect())
        }
        other => Err(Problem::fail(
            format!("{what} to answer a service list"),
            format!("{other:?}"),
        )),
    }
}

fn expect_listed(services: &[String], channel_name: &str) -> Outcome {
    for name in [ALE_ENV, CATALOG] {
        expect(
            services.iter().any(|s| s == name),
            format!("reflection on the {channel_name} channel to list {name}"),
            format!("{services:?}"),
        )?;
    }
    Ok(())
}

pub(crate) async fn health_serving(ctx: &Ctx) -> Outcome {
    check_health(&ctx.agent().await?, "agent").await
}

pub(crate) async fn reflection_lists_services(ctx: &Ctx) -> Outcome {
    let services = reflected_services(&ctx.agent().await?, "agent").await?;
    expect_listed(&services, "agent")
}

/// The harness listener serves the same catalog, health and reflection as the agent's.
pub(crate) async fn harness_channel_services(ctx: &Ctx) -> Outcome {
    let harness = ctx.harness().await?;
    check_health(&harness, "harness").await?;
    expect_listed(&reflected_services(&harness, "harness").await?, "harness")?;
    let tasks = harness
        .list_tasks()
        .await
        .during("ListTasks on the harness channel")?;
    expect_eq(
        "the harness channel's ListTasks to equal the agent channel's",
        ctx.tasks()?,
        tasks.as_slice(),
    )
}
