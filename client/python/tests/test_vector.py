"""`AleVectorEnv`: batched spaces, parallel steps, Gymnasium's autoreset modes."""

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import ale_client


def test_sub_env_i_plays_what_a_single_env_on_seed_plus_i_plays(evaluator):
    envs = ale_client.make_vec("cartpole-balance", 4, endpoint=evaluator.endpoint)
    assert envs.observation_space.shape == (4, 4) and envs.action_space.shape == (4,)
    obs, infos = envs.reset(seed=10)
    assert obs.shape == (4, 4) and obs.dtype == np.float32
    assert list(infos["episode_steps"]) == [0, 0, 0, 0]
    single = ale_client.make("cartpole-balance", endpoint=evaluator.endpoint)
    for i in range(4):
        np.testing.assert_array_equal(single.reset(seed=10 + i)[0], obs[i])
    actions = np.array([0, 1, 0, 1])
    obs, rewards, terminations, truncations, infos = envs.step(actions)
    single.reset(seed=12)
    np.testing.assert_array_equal(single.step(0)[0], obs[2])
    assert rewards.dtype == np.float64 and list(rewards) == [1.0] * 4
    assert not terminations.any() and not truncations.any()
    envs.close()
    envs.close()
    single.close()


def test_next_step_autoreset_resets_an_ended_sub_env_on_the_following_step(evaluator):
    envs = ale_client.make_vec("cartpole-balance", 2, endpoint=evaluator.endpoint)
    envs.reset(seed=0)
    ended_at = None
    for t in range(600):
        obs, rewards, terminations, truncations, infos = envs.step(np.array([1, 0]))
        if ended_at is not None:
            # The step after the end: sub-env 0 began a new episode, with reward 0.
            assert rewards[0] == 0.0 and not terminations[0]
            assert infos["episode_steps"][0] == 0
            break
        if terminations[0] or truncations[0]:
            ended_at = t
    assert ended_at is not None
    envs.close()


def test_same_step_autoreset_hands_back_the_final_observation(evaluator):
    envs = ale_client.make_vec(
        "cartpole-balance", 2, endpoint=evaluator.endpoint, autoreset_mode=AutoresetMode.SAME_STEP
    )
    envs.reset(seed=0)
    for _ in range(600):
        obs, rewards, terminations, truncations, infos = envs.step(np.array([1, 1]))
        if terminations.any():
            i = int(np.flatnonzero(terminations)[0])
            assert infos["_final_obs"][i]
            final = infos["final_obs"][i]
            assert abs(final[2]) > 0.2 or abs(final[0]) > 2.4, "the last observation is past a limit"
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
    with pytest.raises(RuntimeError, match="reset_mask"):
        envs.step(np.array([1, 1]))
    obs, infos = envs.reset(options={"reset_mask": done})
    assert infos["_episode_steps"].tolist() == done.tolist()
    envs.step(np.array([1, 1]))
    envs.close()


def test_more_envs_than_one_connection_may_hold_spread_over_connections(capped_evaluator):
    # The evaluator counts envs per TCP connection; grpcio would share one connection between
    # channels to the same target unless told not to.
    envs = ale_client.make_vec("mountaincar", 5, capped_evaluator.endpoint, envs_per_connection=2)
    assert len(set(envs.handles)) == 5
    obs, _ = envs.reset(seed=1)
    assert obs.shape == (5, 2)
    envs.step(envs.action_space.sample())
    envs.close()
    with pytest.raises(ale_client.ResourceExhausted, match="per-connection cap"):
        ale_client.make_vec("mountaincar", 3, capped_evaluator.endpoint, envs_per_connection=3)
    singles = [ale_client.make("mountaincar", endpoint=capped_evaluator.endpoint) for _ in range(3)]
    for env in singles:
        env.close()


def test_a_refused_action_fails_its_sub_env_alone_and_the_others_step_on(evaluator):
    envs = ale_client.make_vec("pendulum-swingup", 2, endpoint=evaluator.endpoint)
    envs.reset(seed=0)
    with pytest.raises(ale_client.SubEnvErrors) as failed:
        envs.step(np.array([[0.0], [9.0]]))
    assert list(failed.value.errors) == [1]
    assert isinstance(failed.value.errors[1], ale_client.InvalidArgument)
    _, _, _, _, infos = envs.step(np.zeros((2, 1)))
    assert infos["episode_steps"].tolist() == [2, 1], "sub-env 0's first step was kept"
    envs.close()


def test_gymnasiums_make_vec_uses_the_parallel_vector_env(evaluator):
    envs = gymnasium.make_vec(
        "ale/cartpole-balance", num_envs=3, vectorization_mode="vector_entry_point", endpoint=evaluator.endpoint
    )
    assert isinstance(envs.unwrapped, ale_client.AleVectorEnv)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (3, 4)
    envs.close()
    with pytest.raises(ale_client.Closed):
        envs.unwrapped.step(np.zeros(3, dtype=np.int64))


def test_a_vector_env_works_inside_a_running_event_loop(evaluator):
    """In a notebook or an async program its calls run on a loop thread of their own."""
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
