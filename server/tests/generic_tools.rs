//! Generic gRPC tooling works against the evaluator: health checks and server reflection.

mod common;

use common::TestServer;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
use tonic_reflection::pb::v1::ServerReflectionRequest;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

async fn channel(t: &TestServer) -> tonic::transport::Channel {
    tonic::transport::Endpoint::from_shared(t.endpoint())
        .unwrap()
        .connect()
        .await
        .unwrap()
}

#[tokio::test]
async fn health_reports_the_services_serving() {
    let t = TestServer::start().await;
    let mut health = HealthClient::new(channel(&t).await);
    for service in ["ale.v1.AleEnv", "ale.v1.Catalog"] {
        let status = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner()
            .status();
        assert_eq!(status, ServingStatus::Serving, "{service}");
    }
}

#[tokio::test]
async fn reflection_lists_the_ale_services() {
    let t = TestServer::start().await;
    let mut reflection = ServerReflectionClient::new(channel(&t).await);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = reflection
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let response = responses.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("unexpected reflection answer: {response:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    for expected in ["ale.v1.AleEnv", "ale.v1.Catalog", "grpc.health.v1.Health"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
}
