//! Messages a hostile client can send, each at a real evaluator over real connections: each
//! gets a clear error, never a panic, and changes nothing (the env table, the episode in play,
//! the run's records). Request bytes that no generated client would send (invalid UTF-8 in a
//! string field, groups nested without end) go out through [`RawCodec`].

mod common;

use ale_proto::pb;
use ale_sim::{Tensor, TensorData};
use common::{TestServer, action};
use prost::Message;
use prost::bytes::BufMut;
use tonic::Code;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::Channel;

/// Sends the request bytes as they are and decodes the answer as `R`.
struct RawCodec<R>(std::marker::PhantomData<R>);

impl<R> Default for RawCodec<R> {
    fn default() -> Self {
        RawCodec(std::marker::PhantomData)
    }
}

struct RawEncoder;

impl Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

struct MessageDecoder<R>(std::marker::PhantomData<R>);

impl<R: Message + Default> Decoder for MessageDecoder<R> {
    type Item = R;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<R>, tonic::Status> {
        R::decode(src)
            .map(Some)
            .map_err(|e| tonic::Status::internal(e.to_string()))
    }
}

impl<R: Message + Default + Send + 'static> Codec for RawCodec<R> {
    type Encode = Vec<u8>;
    type Decode = R;
    type Encoder = RawEncoder;
    type Decoder = MessageDecoder<R>;

    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }

    fn decoder(&mut self) -> MessageDecoder<R> {
        MessageDecoder(std::marker::PhantomData)
    }
}

/// Calls `method` of `ale.v1.AleEnv` with `body` as the request's protobuf bytes.
async fn raw_call<R: Message + Default + Send + 'static>(
    channel: Channel,
    method: &'static str,
    body: Vec<u8>,
) -> Result<R, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(method);
    grpc.unary(tonic::Request::new(body), path, RawCodec::<R>::default())
        .await
        .map(tonic::Response::into_inner)
}

/// A length-delimited protobuf field: `tag` (wire type 2) then `bytes`.
fn bytes_field(tag: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, &mut out);
    prost::encoding::encode_varint(bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

async fn agent_channel(t: &TestServer) -> Channel {
    Channel::from_shared(t.endpoint())
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// The env is where it was: its next step is step `expected` of the episode.
async fn steps_on_from(
    agent: &mut ale_proto::pb::ale_env_client::AleEnvClient<Channel>,
    handle: &str,
    expected: i64,
) {
    let r = agent
        .step(pb::StepRequest {
            handle: handle.into(),
            action: action(1),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        r.info["episode_steps"].kind,
        Some(pb::value::Kind::Integer(expected))
    );
}

const INVALID_UTF8: &[u8] = b"env-\xff\xfe\xc0\xaf";

#[tokio::test]
async fn invalid_utf8_in_an_id_is_refused_before_any_handler_and_changes_nothing() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let handle = common::practice_env(&mut agent, "cartpole-balance").await;
    common::reset(&mut agent, &handle, Some(1)).await;
    let before = t.server.evaluator().env_counts();
    let channel = agent_channel(&t).await;
    let calls: [(&'static str, Vec<u8>); 3] = [
        ("/ale.v1.AleEnv/CreateEnv", bytes_field(1, INVALID_UTF8)),
        ("/ale.v1.AleEnv/Reset", bytes_field(1, INVALID_UTF8)),
        ("/ale.v1.AleEnv/Step", bytes_field(1, INVALID_UTF8)),
    ];
    for (method, body) in calls {
        let e = raw_call::<pb::ResetResponse>(channel.clone(), method, body)
            .await
            .unwrap_err();
        // tonic refuses a request it cannot parse with INTERNAL, gRPC's code for a parse
        // error, naming the field; no evaluator code runs.
        assert_eq!(e.code(), Code::Internal, "{method}: {e:?}");
        assert!(
            e.message().contains("failed to decode Protobuf message")
                && e.message().contains("not UTF-8"),
            "{method}: {}",
            e.message()
        );
    }
    assert_eq!(t.server.evaluator().env_counts(), before);
    steps_on_from(&mut agent, &handle, 1).await;
}

#[tokio::test]
async fn groups_nested_without_end_are_a_decode_error_not_a_stack_overflow() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let handle = common::practice_env(&mut agent, "cartpole-balance").await;
    common::reset(&mut agent, &handle, Some(1)).await;
    // An unknown field 9 opening a group, 200,000 deep (1 MB): a decoder that recursed on it
    // without a limit would overflow its stack.
    let mut body = bytes_field(1, handle.as_bytes());
    for _ in 0..200_000 {
        prost::encoding::encode_key(9, prost::encoding::WireType::StartGroup, &mut body);
    }
    let e = raw_call::<pb::StepResponse>(agent_channel(&t).await, "/ale.v1.AleEnv/Step", body)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Internal, "{e:?}");
    assert!(e.message().contains("recursion limit"), "{}", e.message());
    steps_on_from(&mut agent, &handle, 1).await;
}

#[tokio::test]
async fn a_deeply_nested_dict_space_reaches_no_server_and_a_client_refuses_it() {
    // No request carries a Space: the evaluator decodes none a client made, and task files
    // name a simulator, not a space. Where one does travel, evaluator to client (`GetSpec`),
    // the client's decoder stops at prost's nesting limit.
    let mut space = pb::Space {
        kind: Some(pb::space::Kind::Discrete(pb::DiscreteSpace {
            n: 2,
            ..Default::default()
        })),
    };
    for i in 0..200 {
        space = pb::Space {
            kind: Some(pb::space::Kind::Dict(pb::DictSpace {
                entries: vec![pb::NamedSpace {
                    name: format!("k{i}"),
                    space: Some(space),
                }],
            })),
        };
    }
    let bytes = pb::GetSpecResponse {
        observation_space: Some(space),
        ..Default::default()
    }
    .encode_to_vec();
    let e = pb::GetSpecResponse::decode(bytes.as_slice()).unwrap_err();
    assert!(e.to_string().contains("recursion limit"), "{e}");
}

#[tokio::test]
async fn oversized_requests_are_refused_on_both_channels_and_create_nothing() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let mut harness = t.harness().await;
    let before = t.server.evaluator().env_counts();
    let huge_id = "x".repeat(5 << 20);
    for client in [&mut agent, &mut harness] {
        let e = client
            .create_env(pb::CreateEnvRequest {
                task_id: huge_id.clone(),
                official: false,
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::ResourceExhausted, "{}", e.message());
    }
    assert_eq!(t.server.evaluator().env_counts(), before);
    assert!(
        std::fs::read_dir(t.state_dir().join("runs"))
            .unwrap()
            .next()
            .is_none(),
        "no run was made"
    );
}

#[tokio::test]
async fn a_million_element_tensor_is_invalid_argument_and_the_episode_stays_put() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let handle = common::practice_env(&mut agent, "cartpole-balance").await;
    common::reset(&mut agent, &handle, Some(1)).await;
    let million = [
        Tensor::new(vec![1_000_000], TensorData::F32(vec![0.5; 1_000_000])).unwrap(),
        Tensor::new(vec![1000, 1000], TensorData::U8(vec![1; 1_000_000])).unwrap(),
        Tensor::new(vec![1_000_000], TensorData::Bool(vec![true; 1_000_000])).unwrap(),
    ];
    for tensor in million {
        let e = agent
            .step(pb::StepRequest {
                handle: handle.clone(),
                action: Some(tensor.into()),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
        assert!(e.message().len() < 1000, "{} bytes", e.message().len());
    }
    steps_on_from(&mut agent, &handle, 1).await;
}

#[tokio::test]
async fn guessed_handles_and_session_ids_are_not_found_and_change_nothing() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let mut harness = t.harness().await;
    let (handle, session, run_id) = t.official_env("cartpole-balance").await;
    let before = t.server.evaluator().env_counts();
    let mut guesses: Vec<String> = vec![
        "env-00000000000000000000000000000000".into(),
        "env-".into(),
        String::new(),
        handle[..handle.len() - 1].to_string(),
        format!("{handle}0"),
        handle.to_uppercase(),
        session.clone(),
        run_id.clone(),
        "../runs".into(),
    ];
    // The handle with each hex digit changed in turn: near misses.
    for i in 4..handle.len() {
        let mut near = handle.clone().into_bytes();
        near[i] = if near[i] == b'0' { b'1' } else { b'0' };
        guesses.push(String::from_utf8(near).unwrap());
    }
    for guess in &guesses {
        let reset = agent
            .reset(pb::ResetRequest {
                handle: guess.clone(),
                seed: None,
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(reset.code(), Code::NotFound, "{guess}: {reset:?}");
        let start = agent
            .start_eval_session(pb::StartEvalSessionRequest {
                handle: guess.clone(),
            })
            .await
            .unwrap_err();
        assert_eq!(start.code(), Code::NotFound, "{guess}");
        if guess != &session {
            let result = harness
                .get_eval_result(pb::GetEvalResultRequest {
                    session_id: guess.clone(),
                    end_session: true,
                })
                .await
                .unwrap_err();
            assert_eq!(result.code(), Code::NotFound, "{guess}");
        }
    }
    assert_eq!(t.server.evaluator().env_counts(), before);
    // The official env is untouched: its session has not started.
    let e = agent
        .reset(pb::ResetRequest {
            handle: handle.clone(),
            seed: None,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
}

#[tokio::test]
async fn a_session_id_or_handle_replayed_from_another_evaluators_run_is_not_found() {
    let first = TestServer::start().await;
    let second = TestServer::start().await;
    let (handle, session, _) = first.official_env("cartpole-balance").await;
    let mut first_agent = first.agent().await;
    first_agent
        .start_eval_session(pb::StartEvalSessionRequest {
            handle: handle.clone(),
        })
        .await
        .unwrap();
    let mut agent = second.agent().await;
    let mut harness = second.harness().await;
    let e = agent
        .start_eval_session(pb::StartEvalSessionRequest {
            handle: handle.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let e = harness
        .get_eval_result(pb::GetEvalResultRequest {
            session_id: session.clone(),
            end_session: true,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    // The session it belongs to runs on, unaffected.
    let result = common::result(&mut first.harness().await, &session, false).await;
    assert_eq!(result.status, pb::EvalStatus::Running as i32);
}

#[tokio::test]
async fn a_gzip_compressed_request_is_unimplemented_and_changes_nothing() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let before = t.server.evaluator().env_counts();
    let mut request = tonic::Request::new(pb::CreateEnvRequest {
        task_id: "cartpole-balance".into(),
        official: false,
        ..Default::default()
    });
    request
        .metadata_mut()
        .insert("grpc-encoding", "gzip".parse().unwrap());
    let e = agent.create_env(request).await.unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented, "{e:?}");
    assert!(
        e.message()
            .starts_with("the request is compressed with \"gzip\", and the evaluator reads"),
        "{}",
        e.message()
    );
    assert_eq!(
        e.metadata()
            .get("grpc-accept-encoding")
            .and_then(|v| v.to_str().ok()),
        Some("identity"),
        "the answer says what is accepted"
    );
    assert_eq!(t.server.evaluator().env_counts(), before);

    // Found by an attacker helper: tonic's own refusal repeated the header whole, so a 15,000
    // byte encoding came back as a 15 KB message.
    let mut request = tonic::Request::new(pb::CreateEnvRequest {
        task_id: "cartpole-balance".into(),
        official: false,
        ..Default::default()
    });
    request
        .metadata_mut()
        .insert("grpc-encoding", "g".repeat(15_000).parse().unwrap());
    let e = agent.create_env(request).await.unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented, "{e:?}");
    assert!(e.message().len() < 300, "{} bytes", e.message().len());
    assert!(e.message().contains("(15000 bytes)"), "{}", e.message());
}
