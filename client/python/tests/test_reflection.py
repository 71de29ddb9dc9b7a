"""The evaluator as a generic gRPC tool finds it: a third-party client (grpcio-reflection, which
speaks `grpc.reflection.v1alpha` only) lists the services, resolves `Step` and drives an env with
messages built from the descriptors alone — no generated code — and grpcio-health-checking
checks health. Over TCP and over the agent socket."""

import grpc
import numpy as np
import pytest
from google.protobuf import descriptor_pool, message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

SERVICES = {
    "ale.v1.AleEnv",
    "ale.v1.Catalog",
    "grpc.health.v1.Health",
    "grpc.reflection.v1alpha.ServerReflection",
}


def open_channel(evaluator, transport):
    if transport == "tcp":
        return grpc.insecure_channel(evaluator.endpoint.removeprefix("http://"))
    # grpc-core names the socket path as :authority unless told otherwise (docs/protocol.md).
    return grpc.insecure_channel(f"unix:{evaluator.agent_socket}", options=[("grpc.default_authority", "localhost")])


@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_a_reflection_client_lists_resolves_and_calls_with_dynamic_messages(evaluator, transport):
    with open_channel(evaluator, transport) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        assert SERVICES <= set(database.get_services())
        pool = descriptor_pool.DescriptorPool(database)
        service = pool.FindServiceByName("ale.v1.AleEnv")
        step = service.FindMethodByName("Step")
        assert step.input_type.full_name == "ale.v1.StepRequest"
        assert step.output_type.full_name == "ale.v1.StepResponse"

        def call(method_name, **fields):
            method = service.FindMethodByName(method_name)
            request_class = message_factory.GetMessageClass(method.input_type)
            response_class = message_factory.GetMessageClass(method.output_type)
            rpc = channel.unary_unary(
                f"/{service.full_name}/{method_name}",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=response_class.FromString,
            )
            return rpc(request_class(**fields), timeout=10)

        created = call("CreateEnv", task_id="cartpole-balance")
        assert created.handle.startswith("env-")
        reset = call("Reset", handle=created.handle, seed=3)
        assert list(reset.observation.shape) == [4] and len(reset.observation.f32) == 4
        # A Discrete action is a scalar int64 tensor: dtype 3 is DTYPE_INT64 in ale.v1.DType.
        int64 = pool.FindEnumTypeByName("ale.v1.DType").values_by_name["DTYPE_INT64"].number
        tensor_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("ale.v1.Tensor"))
        stepped = call("Step", handle=created.handle, action=tensor_class(dtype=int64, shape=[], i64=[1]))
        assert stepped.reward == 1.0 and not stepped.terminated
        assert not np.array_equal(np.array(stepped.observation.f32), np.array(reset.observation.f32))


@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_health_answers_serving_for_the_server_and_each_service(evaluator, transport):
    with open_channel(evaluator, transport) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "ale.v1.AleEnv", "ale.v1.Catalog"):
            answer = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING, service
        with pytest.raises(grpc.RpcError) as unknown:
            health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


def test_the_harness_socket_answers_reflection_too(evaluator):
    options = [("grpc.default_authority", "localhost")]
    with grpc.insecure_channel(f"unix:{evaluator.harness_socket}", options=options) as channel:
        assert SERVICES <= set(ProtoReflectionDescriptorDatabase(channel).get_services())
