"""The harness channel from Python: official envs, sessions, results, privilege."""

import subprocess
import sys
import textwrap

import pytest

import ale_client


def play(env, policy):
    obs, _ = env.reset()
    while True:
        obs, _, terminated, truncated, _ = env.step(policy(obs))
        if terminated or truncated:
            return


def balance(obs):
    return int(obs[2] + 0.5 * obs[3] > 0)


def test_a_python_harness_script_reads_the_eval_result_over_the_harness_socket(evaluator, tmp_path):
    # The agent: a separate process on the agent socket, as under a harness.
    with ale_client.HarnessChannel(evaluator.harness_socket) as harness:
        official = harness.create_official("cartpole-balance")
        agent = tmp_path / "agent.py"
        agent.write_text(
            textwrap.dedent(
                """
                import ale_client
                env = ale_client.from_env()
                session = env.start_eval_session()
                for _ in range(session.episodes):
                    obs, _ = env.reset()
                    done = False
                    while not done:
                        obs, _, terminated, truncated, _ = env.step(int(obs[2] + 0.5 * obs[3] > 0))
                        done = terminated or truncated
                print("played", session.episodes)
                """
            )
        )
        done = subprocess.run(
            [sys.executable, str(agent)],
            env={"ALE_ENDPOINT": evaluator.unix_endpoint, "ALE_ENV_HANDLE": official.handle, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        result = harness.wait_for_result(official.session_id, timeout=30)
    assert result.status == "completed" and result.run_id == official.run_id
    assert len(result.episodes) == len(result.seed_commitments) > 0
    assert all(e.outcome == "completed" for e in result.episodes)
    assert result.value == pytest.approx(sum(e.metric for e in result.episodes) / len(result.episodes))
    assert len(result.trajectory_head) == 64
    assert (evaluator.state_dir / "runs" / official.run_id / "trajectory.jsonl").is_file()


def test_the_agent_channel_may_not_read_results_nor_create_official_envs(evaluator):
    with ale_client.HarnessChannel(evaluator.harness_socket) as harness:
        official = harness.create_official("cartpole-balance")
        agent_env = ale_client.AleEnv.attach(official.handle, evaluator.endpoint)
        assert agent_env.official
        session = agent_env.start_eval_session()
        from ale_client._proto import ale_env_pb2 as pb

        for endpoint in (evaluator.endpoint, evaluator.unix_endpoint):
            with ale_client.Connection(endpoint) as agent:
                with pytest.raises(ale_client.PermissionDenied):
                    agent.call("GetEvalResult", pb.GetEvalResultRequest(session_id=session.session_id))
                with pytest.raises(ale_client.PermissionDenied):
                    agent.call("CreateEnv", pb.CreateEnvRequest(task_id="cartpole-balance", official=True))
        # The harness ends the session; the rollouts not played count as failed.
        result = harness.eval_result(session.session_id, end_session=True)
        assert result.status == "ended_early"
        agent_env.close()


def test_an_eval_session_ignores_the_seed_and_aborts_on_a_mid_episode_reset(evaluator):
    with ale_client.HarnessChannel(evaluator.harness_socket) as harness:
        official = harness.create_official("cartpole-balance")
        env = ale_client.AleEnv(official.handle, connection=harness.connection, owns_connection=False)
        env.start_eval_session()
        a, _ = env.reset(seed=1)
        env.step(1)
        b, _ = env.reset(seed=1)  # aborts rollout 0; rollout 1 has its own hidden seed
        assert not (a == b).all()
        result = harness.eval_result(official.session_id)
        assert result.episodes[0].outcome == "aborted"
        env.close()  # an env handed a connection leaves it open
        harness.eval_result(official.session_id, end_session=True)
    with pytest.raises(ale_client.Closed):
        harness.eval_result(official.session_id)


def test_without_a_plain_authority_grpcio_is_refused_on_a_unix_socket(evaluator):
    """The reason the package names the authority (docs/protocol.md): grpc-core sends the
    socket path as `:authority`, which the evaluator's HTTP/2 stack resets. If this ever
    passes, the server accepts such requests and the doc should say so."""
    import grpc

    from ale_client._proto import catalog_pb2, catalog_pb2_grpc

    for socket in (evaluator.harness_socket, evaluator.agent_socket):
        with grpc.insecure_channel(f"unix:{socket}") as raw:
            with pytest.raises(grpc.RpcError) as refused:
                catalog_pb2_grpc.CatalogStub(raw).ListTasks(catalog_pb2.ListTasksRequest(), timeout=10)
            assert refused.value.code() == grpc.StatusCode.INTERNAL
        # The same call through the package answers.
        with ale_client.Connection(f"unix://{socket}") as connection:
            assert len(connection.task_messages()) == len(ale_client.BUILTIN_TASKS)
