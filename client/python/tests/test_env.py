"""`AleEnv` against a real evaluator: Gymnasium's checker, the 5-tuple, dtypes, errors."""

import math
import os
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import ale_client

# Space-design remarks Gymnasium's checker makes about a task's spaces themselves, not about
# this package: infinite observation bounds (CartPole-v1 has them too) and action boxes that are
# not [-1, 1] (Pendulum-v1's is [-2, 2]). They are allowed only for the tasks listed.
INFINITE_BOUNDS = {
    "A Box observation space minimum value is -infinity. This is probably too low.",
    "A Box observation space maximum value is infinity. This is probably too high.",
}
UNNORMALISED_ACTIONS = {
    "For Box action spaces, we recommend using a symmetric and normalized space (range=[-1, 1] or [0, 1]). "
    "See https://stable-baselines3.readthedocs.io/en/master/guide/rl_tips.html for more information."
}
SPACE_REMARKS = {
    "cartpole-balance": INFINITE_BOUNDS,
    "reacher-reach": INFINITE_BOUNDS,
    "pendulum-swingup": UNNORMALISED_ACTIONS,
    "nav2d-barn": UNNORMALISED_ACTIONS,
    # Gymnasium's MuJoCo envs observe in (-inf, inf); InvertedPendulum pushes in [-3, 3].
    "inverted-pendulum": INFINITE_BOUNDS | UNNORMALISED_ACTIONS,
    "inverted-double-pendulum": INFINITE_BOUNDS,
    "reacher-mujoco": INFINITE_BOUNDS,
    "halfcheetah-run": INFINITE_BOUNDS,
    "hopper-hop": INFINITE_BOUNDS,
    "walker2d-walk": INFINITE_BOUNDS,
    "swimmer-swim": INFINITE_BOUNDS,
    "ant-walk": INFINITE_BOUNDS,
    # The Go1's observation (IMU, joints, last action, command) is unbounded too.
    "go1-joystick": INFINITE_BOUNDS,
    "humanoid-walk": INFINITE_BOUNDS,
    "humanoid-standup": INFINITE_BOUNDS,
    # Pusher's arm pushes in [-2, 2].
    "pusher-push": INFINITE_BOUNDS | UNNORMALISED_ACTIONS,
}
# The tasks on sims with no drawing (render.py): their envs render in no mode. Every bundled
# sim draws (the MuJoCo ones with the mujoco package, which the dev extra installs; the Go1
# with its model too, which conftest finds where scripts/fetch-mujoco put it).
UNDRAWN: set[str] = set()


def checker_warnings(env, skip_render_check=False) -> set[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=skip_render_check)
    # Gymnasium's logger colours its messages.
    return {str(w.message).replace("\x1b[33mWARN: ", "").replace("\x1b[0m", "") for w in caught}


@pytest.mark.parametrize("task_id", ale_client.BUILTIN_TASKS)
def test_gymnasiums_env_checker_passes_on_every_tasks_practice_env(evaluator, task_id):
    # Made through Gymnasium, so the checker can also try the render modes from the spec.
    render_mode = None if task_id in UNDRAWN else "rgb_array"
    env = gymnasium.make(f"ale/{task_id}", endpoint=evaluator.endpoint, render_mode=render_mode).unwrapped
    try:
        remarks = checker_warnings(env)
    finally:
        env.close()
    assert remarks <= SPACE_REMARKS.get(task_id, set()), remarks


def test_a_mujoco_sim_without_the_mujoco_package_renders_in_no_mode(evaluator, monkeypatch):
    from ale_client import mujoco_view

    monkeypatch.setattr(mujoco_view, "available", lambda: False)
    env = ale_client.make("hopper-hop", endpoint=evaluator.endpoint)
    try:
        assert env.metadata["render_modes"] == []
    finally:
        env.close()
    assert ale_client.AleEnv.metadata["render_modes"] == ["rgb_array"]
    with pytest.raises(ValueError, match=r"Hopper-v5 is drawn with MuJoCo.*pip install 'ale-client\[mujoco\]'"):
        ale_client.make("hopper-hop", endpoint=evaluator.endpoint, render_mode="rgb_array")


def test_a_mujoco_task_renders_the_robot_it_steps(evaluator):
    env = ale_client.make("hopper-hop", endpoint=evaluator.endpoint, render_mode="rgb_array")
    try:
        env.reset(seed=0)
        first = env.render()
        for _ in range(20):
            env.step(np.ones(3, dtype=np.float32))
        later = env.render()
    finally:
        env.close()
    assert first.shape == later.shape and first.dtype == np.uint8 and first.shape[2] == 3
    assert not np.array_equal(first, later), "the picture follows the robot"
    assert len(np.unique(first.reshape(-1, 3), axis=0)) >= 3, "background, ground and robot"


@pytest.mark.parametrize("task_id, gymnasium_id", [("cartpole-balance", "CartPole-v1"), ("pendulum-swingup", "Pendulum-v1")])
def test_the_allowed_remarks_are_what_gymnasiums_own_env_gets(evaluator, task_id, gymnasium_id):
    ours = ale_client.make(task_id, endpoint=evaluator.endpoint)
    try:
        theirs = checker_warnings(gymnasium.make(gymnasium_id).unwrapped, skip_render_check=True)
        assert checker_warnings(ours, skip_render_check=True) == theirs == SPACE_REMARKS[task_id]
    finally:
        ours.close()


def test_the_registered_tasks_are_the_evaluators(evaluator):
    hosted = [t.id for t in ale_client.list_tasks(evaluator.endpoint)]
    assert sorted(hosted) == sorted(ale_client.BUILTIN_TASKS)
    assert ale_client.register_tasks(evaluator.endpoint) == [f"ale/{t}" for t in hosted]
    env = gymnasium.make("ale/cartpole-balance", endpoint=evaluator.endpoint)
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    assert env.unwrapped.task.id == "cartpole-balance"
    env.close()


def test_reset_and_step_follow_gymnasium_and_a_seed_repeats_an_episode(evaluator):
    env = ale_client.make("cartpole-balance", endpoint=evaluator.endpoint)
    obs, info = env.reset(seed=42)
    assert obs.dtype == np.float32 and obs.shape == (4,)
    assert info["episode_steps"] == 0
    first = [obs]
    for _ in range(5):
        obs, reward, terminated, truncated, info = env.step(1)
        assert isinstance(reward, float) and reward == 1.0
        assert terminated is False and truncated is False
        first.append(obs)
    again, _ = env.reset(seed=42)
    np.testing.assert_array_equal(again, first[0])
    # Seeded once, later resets draw their seeds from np_random, as Gymnasium's envs do.
    env.reset(seed=7)
    a = env.reset()[0]
    env.reset(seed=7)
    b = env.reset()[0]
    np.testing.assert_array_equal(a, b)
    env.close()


@pytest.mark.parametrize(
    "task_id, gymnasium_id",
    [
        ("acrobot-swingup", "Acrobot-v1"),
        ("cartpole-balance", "CartPole-v1"),
        ("mountaincar", "MountainCar-v0"),
        ("mountaincar-continuous", "MountainCarContinuous-v0"),
        ("pendulum-swingup", "Pendulum-v1"),
    ],
)
def test_a_seeded_reset_starts_where_gymnasiums_env_starts(evaluator, task_id, gymnasium_id):
    ours = ale_client.make(task_id, endpoint=evaluator.endpoint)
    theirs = gymnasium.make(gymnasium_id)
    try:
        # 835 is a seed whose Acrobot start needs NumPy's own float32 cos to match.
        for seed in (0, 42, 835, 2**63 + 7, 2**64 - 1):
            np.testing.assert_array_equal(ours.reset(seed=seed)[0], theirs.reset(seed=seed)[0])
    finally:
        ours.close()
        theirs.close()


def test_the_episode_ends_and_stepping_on_is_refused(evaluator):
    env = ale_client.make("cartpole-balance", endpoint=evaluator.endpoint)
    env.reset(seed=0)
    steps, done = 0, False
    while not done:
        _, _, terminated, truncated, info = env.step(1)
        steps += 1
        done = terminated or truncated
    assert terminated and info["episode_steps"] == steps
    with pytest.raises(ale_client.FailedPrecondition) as refused:
        env.step(0)
    assert refused.value.code.name == "FAILED_PRECONDITION" and "Reset" in refused.value.details
    env.close()


def test_a_float64_action_is_cast_and_wrong_actions_are_refused_with_the_env_intact(evaluator):
    env = ale_client.make("pendulum-swingup", endpoint=evaluator.endpoint)
    assert env.action_space.dtype == np.float32
    env.reset(seed=1)
    obs, reward, *_ = env.step(np.array([1.5], dtype=np.float64))
    assert obs.dtype == np.float32 and math.isfinite(reward)
    for bad, words in [
        (np.array([np.nan]), "NaN"),
        (np.array([1.0, 1.0]), "shape"),
        (np.array([9.0]), "outside [-2, 2]"),
    ]:
        with pytest.raises(ale_client.InvalidArgument) as refused:
            env.step(bad)
        assert words.lower() in refused.value.details.lower(), refused.value.details
    # The refused steps changed nothing: the episode goes on from where it was.
    _, _, _, _, info = env.step(np.zeros(1))
    assert info["episode_steps"] == 2
    env.close()


def test_close_is_idempotent_and_a_closed_env_says_so(evaluator):
    env = ale_client.make("mountaincar", endpoint=evaluator.endpoint)
    env.reset(seed=0)
    env.close()
    env.close()
    with pytest.raises(ale_client.AleError, match="closed"):
        env.step(0)


def test_errors_carry_the_status_code_and_the_servers_message(evaluator):
    with pytest.raises(ale_client.NotFound) as unknown:
        ale_client.make("no-such-task", endpoint=evaluator.endpoint)
    assert "cartpole-balance" in unknown.value.details, "the message lists the known tasks"
    assert unknown.value.method == "CreateEnv"
    with pytest.raises(ale_client.NotFound):
        ale_client.AleEnv.attach("env-00000000000000000000000000000000", evaluator.endpoint)
    assert issubclass(ale_client.NotFound, ale_client.RpcError)


def test_an_evaluator_that_is_not_there_is_unavailable():
    with pytest.raises(ale_client.Unavailable):
        ale_client.make("cartpole-balance", endpoint="http://127.0.0.1:9", timeout=5)


def test_bad_endpoints_are_refused_before_connecting():
    for endpoint, words in [("", "empty"), ("unix:relative.sock", "absolute"), ("https://x:1", "plaintext")]:
        with pytest.raises(ValueError, match=words):
            ale_client.make("cartpole-balance", endpoint=endpoint)


def test_the_agent_socket_works_as_an_endpoint(evaluator):
    env = ale_client.make("cartpole-balance", endpoint=evaluator.unix_endpoint)
    tcp = ale_client.make("cartpole-balance", endpoint=evaluator.endpoint)
    np.testing.assert_array_equal(env.reset(seed=5)[0], tcp.reset(seed=5)[0])
    env.close()
    tcp.close()


def test_from_env_attaches_to_the_handle_the_environment_names(evaluator, monkeypatch):
    practice = ale_client.make("acrobot-swingup", endpoint=evaluator.endpoint)
    monkeypatch.setenv("ALE_ENDPOINT", evaluator.unix_endpoint)
    monkeypatch.setenv("ALE_ENV_HANDLE", practice.handle)
    attached = ale_client.from_env()
    assert attached.handle == practice.handle and attached.task.id == "acrobot-swingup"
    assert not attached.official
    attached.close()
    practice.close()
    monkeypatch.delenv("ALE_ENV_HANDLE")
    with pytest.raises(ale_client.MissingEnvVar, match="ALE_ENV_HANDLE"):
        ale_client.from_env()


def test_render_draws_the_last_observation(evaluator):
    env = ale_client.make("cartpole-balance", endpoint=evaluator.endpoint, render_mode="rgb_array")
    with pytest.raises(ale_client.AleError, match="reset"):
        env.render()
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) > 2, "more than a background"
    env.close()
    with pytest.raises(ValueError, match="render_mode"):
        ale_client.make("cartpole-balance", endpoint=evaluator.endpoint, render_mode="human")


def test_task_metadata_is_plain_python(evaluator):
    tasks = {t.id: t for t in ale_client.list_tasks(evaluator.endpoint)}
    cart = tasks["cartpole-balance"]
    assert cart.mode == "interactive" and cart.metric.higher_is_better and cart.metric.target > 0
    assert cart.submission_contract is None
    batch = tasks["mountaincar-continuous"]
    assert batch.is_batch and batch.submission_contract.format == "mlp-safetensors"
    assert isinstance(batch.action_space, gymnasium.spaces.Box)
    assert os.path.isabs(batch.submission_contract.submission_path)
