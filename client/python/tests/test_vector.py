"""`AleVectorEnv`: one vector handle, one RPC a step; Gymnasium's own vector env as the reference."""

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import ale_client

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]


def test_sub_env_i_plays_what_a_single_env_on_seed_plus_i_plays(evaluator):
    envs = ale_client.make_vec("cartpole-balance", 4, endpoint=evaluator.endpoint)
    assert envs.observation_space.shape == (4, 4) and envs.action_space.shape == (4,)
    obs, infos = envs.reset(seed=10)
    assert obs.shape == (4, 4) and obs.dtype == np.float32
    assert envs.observation_space.contains(obs)
    assert list(infos["episode_steps"]) == [0, 0, 0, 0] and infos["_episode_steps"].all()
    single = ale_client.make("cartpole-balance", endpoint=evaluator.endpoint)
    for i in range(4):
        np.testing.assert_array_equal(single.reset(seed=10 + i)[0], obs[i])
    actions = np.array([0, 1, 0, 1])
    obs, rewards, terminations, truncations, infos = envs.step(actions)
    single.reset(seed=12)
    np.testing.assert_array_equal(single.step(0)[0], obs[2])
    assert rewards.dtype == np.float64 and list(rewards) == [1.0] * 4
    assert terminations.dtype == np.bool_ and not terminations.any() and not truncations.any()
    envs.close()
    envs.close()
    single.close()


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_each_autoreset_mode_matches_gymnasiums_own_vector_env_step_for_step(evaluator, mode):
    """The reference is Gymnasium's SyncVectorEnv of CartPole-v1 in this process: the same
    seeds and actions give the same observations, rewards, flags and final observations,
    across autoresets (which continue each sub-env's own generator, as Gymnasium's do)."""
    n = 6
    ours = ale_client.make_vec("cartpole-balance", n, endpoint=evaluator.endpoint, autoreset_mode=mode)
    theirs = gymnasium.make_vec(
        "CartPole-v1", num_envs=n, vectorization_mode="sync", vector_kwargs={"autoreset_mode": mode}
    )
    obs, _ = ours.reset(seed=123)
    ref, _ = theirs.reset(seed=123)
    np.testing.assert_array_equal(obs, ref)
    rng = np.random.default_rng(5)
    ended_episodes = 0
    for t in range(700):
        # Mostly pushing one way, so episodes end often.
        actions = (rng.random(n) < 0.8).astype(np.int64)
        obs, rewards, terminations, truncations, infos = ours.step(actions)
        ref, ref_rewards, ref_terminations, ref_truncations, ref_infos = theirs.step(actions)
        np.testing.assert_array_equal(obs, ref, err_msg=f"step {t}")
        np.testing.assert_array_equal(rewards, ref_rewards)
        np.testing.assert_array_equal(terminations, ref_terminations)
        np.testing.assert_array_equal(truncations, ref_truncations)
        done = terminations | truncations
        ended_episodes += int(done.sum())
        if mode == AutoresetMode.SAME_STEP:
            np.testing.assert_array_equal(infos.get("_final_obs", np.zeros(n, bool)), ref_infos.get("_final_obs", np.zeros(n, bool)))
            for i in np.flatnonzero(done):
                np.testing.assert_array_equal(infos["final_obs"][i], ref_infos["final_obs"][i])
        if mode == AutoresetMode.DISABLED and done.any():
            obs, _ = ours.reset(options={"reset_mask": done})
            ref, _ = theirs.reset(options={"reset_mask": done})
            np.testing.assert_array_equal(obs, ref)
    assert ended_episodes >= 20, ended_episodes
    ours.close()
    theirs.close()


def test_same_step_final_info_is_in_the_vector_layout(evaluator):
    envs = ale_client.make_vec(
        "cartpole-balance", 2, endpoint=evaluator.endpoint, autoreset_mode=AutoresetMode.SAME_STEP
    )
    envs.reset(seed=0)
    for _ in range(600):
        obs, rewards, terminations, truncations, infos = envs.step(np.array([1, 1]))
        if terminations.any():
            i = int(np.flatnonzero(terminations)[0])
            assert infos["_final_obs"][i] and infos["_final_info"][i]
            assert infos["final_info"]["_episode_steps"][i]
            assert infos["final_info"]["episode_steps"][i] > 0
            assert infos["episode_steps"][i] == 0, "the returned observation is the new episode's"
            break
    else:
        pytest.fail("no episode ended")
    envs.close()


def test_disabled_autoreset_needs_a_masked_reset(evaluator):
    envs = ale_client.make_vec("cartpole-balance", 2, endpoint=evaluator.endpoint, autoreset_mode="Disabled")
    envs.reset(seed=0)
    while True:
        _, _, terminations, truncations, _ = envs.step(np.array([1, 1]))
        done = terminations | truncations
        if done.any():
            break
    with pytest.raises(ale_client.FailedPrecondition, match="reset_mask"):
        envs.step(np.array([1, 1]))
    obs, infos = envs.reset(options={"reset_mask": done})
    assert infos["_episode_steps"].tolist() == done.tolist()
    envs.step(np.array([1, 1]))
    envs.close()


def test_one_bad_action_refuses_the_whole_step_naming_its_sub_env(evaluator):
    envs = ale_client.make_vec("pendulum-swingup", 3, endpoint=evaluator.endpoint)
    envs.reset(seed=0)
    with pytest.raises(ale_client.InvalidArgument, match="sub-env 1"):
        envs.step(np.array([[0.0], [9.0], [0.0]]))
    with pytest.raises(ale_client.InvalidArgument, match="sub-env 2"):
        envs.step(np.array([[0.0], [0.0], [np.nan]]))
    with pytest.raises(ale_client.InvalidArgument, match="shape"):
        envs.step(np.zeros((2, 1)))
    _, _, _, _, infos = envs.step(np.zeros((3, 1)))
    assert infos["episode_steps"].tolist() == [1, 1, 1], "no refused step moved any sub-env"
    envs.close()


def test_a_vector_counts_its_sub_envs_against_the_caps(capped_evaluator):
    # At most 2 practice envs per connection here.
    with pytest.raises(ale_client.ResourceExhausted, match="can never fit"):
        ale_client.make_vec("mountaincar", 3, capped_evaluator.endpoint)
    envs = ale_client.make_vec("mountaincar", 2, capped_evaluator.endpoint)
    obs, _ = envs.reset(seed=1)
    assert obs.shape == (2, 2)
    envs.step(envs.action_space.sample())
    envs.close()


def test_an_official_vector_env_is_refused(evaluator):
    from ale_client._proto import ale_env_pb2 as pb

    with ale_client.channel.Connection(f"unix://{evaluator.harness_socket}") as harness:
        with pytest.raises(ale_client.InvalidArgument, match="official envs are single"):
            harness.call("CreateEnv", pb.CreateEnvRequest(task_id="cartpole-balance", official=True, num_envs=4))


def test_batched_answers_decode_without_a_copy(evaluator):
    envs = ale_client.make_vec("cartpole-balance", 8, endpoint=evaluator.endpoint)
    obs, _ = envs.reset(seed=3)
    # A view of the answer's bytes: NumPy did not copy them (and so may not write them).
    assert not obs.flags.owndata and not obs.flags.writeable
    obs, rewards, terminations, _, _ = envs.step(np.ones(8, dtype=np.int64))
    assert not obs.flags.owndata and not rewards.flags.owndata and not terminations.flags.owndata
    envs.close()


def test_a_vector_of_one_is_still_batched(evaluator):
    envs = ale_client.make_vec("cartpole-balance", 1, endpoint=evaluator.endpoint)
    obs, _ = envs.reset(seed=2)
    assert obs.shape == (1, 4)
    _, rewards, _, _, _ = envs.step(np.array([1]))
    assert rewards.shape == (1,)
    envs.close()


def test_gymnasiums_vector_wrappers_run_on_it(evaluator):
    from gymnasium.wrappers.vector import NormalizeObservation, RecordEpisodeStatistics

    envs = RecordEpisodeStatistics(
        NormalizeObservation(ale_client.make_vec("cartpole-balance", 4, endpoint=evaluator.endpoint))
    )
    envs.reset(seed=0)
    episodes = 0
    for _ in range(200):
        _, _, _, _, infos = envs.step(envs.action_space.sample())
        if "episode" in infos:
            episodes += int(infos["_episode"].sum())
    assert episodes > 0
    envs.close()


def test_gymnasiums_make_vec_uses_one_vector_handle(evaluator):
    envs = gymnasium.make_vec(
        "ale/cartpole-balance", num_envs=3, vectorization_mode="vector_entry_point", endpoint=evaluator.endpoint
    )
    assert isinstance(envs.unwrapped, ale_client.AleVectorEnv)
    assert isinstance(envs.unwrapped.handle, str)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (3, 4)
    envs.close()
    with pytest.raises(ale_client.Closed):
        envs.unwrapped.step(np.zeros(3, dtype=np.int64))


def test_a_vector_env_works_inside_a_running_event_loop(evaluator):
    """In a notebook or an async program: plain blocking calls, no loop of its own."""
    import asyncio

    async def inside():
        envs = ale_client.make_vec("cartpole-balance", 3, endpoint=evaluator.endpoint)
        obs, _ = envs.reset(seed=4)
        envs.step(np.zeros(3, dtype=np.int64))
        envs.close()
        return obs

    single = ale_client.make("cartpole-balance", endpoint=evaluator.endpoint)
    np.testing.assert_array_equal(asyncio.run(inside())[1], single.reset(seed=5)[0])
    single.close()
