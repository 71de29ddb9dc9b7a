"""A batch score is what Gymnasium's own evaluation of the same policy file gives.

A linear policy for `hopper-hop` (Gymnasium's Hopper-v5) is fitted here by random search (ARS,
Mania et al. 2018) on practice envs of the real evaluator, with the observation normalised by
statistics of practice rollouts and saved with them as `obs_mean` / `obs_std`. Hopper pays 1
per step it stays up, which makes "stand still" a local optimum; as ARS does, training takes
that bonus out of the reward it ranks directions by. The file is then submitted to an official
batch run, whose hidden seeds the test never sees, and evaluated by Gymnasium itself
(`gymnasium.make("Hopper-v5")`, the pinned MuJoCo) with a NumPy reading of the same file. The
two means must agree within their sampling noise.
"""

from __future__ import annotations

import json
import math
import struct

import gymnasium
import numpy as np
import pytest

import ale_client

TASK = "hopper-hop"
HORIZON = 400
ITERATIONS = 8
DIRECTIONS = 6
TOP = 3
STEP_SIZE = 0.02
NOISE = 0.03
ALIVE_BONUS = 1.0


def act(matrix: np.ndarray, mean: np.ndarray, std: np.ndarray, obs) -> np.ndarray:
    """The linear policy as the evaluator plays it: float32 normalised input, clipped output."""
    x = (np.asarray(obs, dtype=np.float32) - mean) * (np.float32(1.0) / np.maximum(std, np.float32(1e-6)))
    return np.clip(matrix @ x, -1.0, 1.0).astype(np.float32)


def rollout(env, matrix, mean, std, seed: int, horizon: int = HORIZON, shift: float = ALIVE_BONUS) -> float:
    obs, _ = env.reset(seed=seed)
    total = 0.0
    for _ in range(horizon):
        obs, reward, terminated, truncated, _ = env.step(act(matrix, mean, std, obs))
        total += float(reward) - shift
        if terminated or truncated:
            break
    return total


def fit(endpoint: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    env = ale_client.make(TASK, endpoint=endpoint)
    try:
        n_obs = env.observation_space.shape[0]
        n_act = env.action_space.shape[0]
        # Normalisation from a few practice episodes of small random linear policies.
        rng = np.random.default_rng(0)
        states = []
        for seed in range(4):
            matrix = rng.normal(0.0, 0.1, (n_act, n_obs)).astype(np.float32)
            obs, _ = env.reset(seed=1000 + seed)
            for _ in range(HORIZON):
                states.append(obs)
                obs, _, terminated, truncated, _ = env.step(np.clip(matrix @ obs.astype(np.float32), -1, 1))
                if terminated or truncated:
                    break
        states = np.asarray(states, dtype=np.float32)
        mean = states.mean(axis=0)
        std = np.maximum(states.std(axis=0), 1e-2).astype(np.float32)

        matrix = np.zeros((n_act, n_obs), dtype=np.float32)
        seed = 0
        for _ in range(ITERATIONS):
            deltas = rng.standard_normal((DIRECTIONS, n_act, n_obs)).astype(np.float32)
            scores = []
            for delta in deltas:
                seed += 1
                plus = rollout(env, matrix + NOISE * delta, mean, std, seed)
                minus = rollout(env, matrix - NOISE * delta, mean, std, seed)
                scores.append((plus, minus))
            scores = np.asarray(scores)
            best = np.argsort(-scores.max(axis=1))[:TOP]
            sigma = scores[best].std() or 1.0
            step = sum((scores[k, 0] - scores[k, 1]) * deltas[k] for k in best)
            matrix = (matrix + STEP_SIZE / (TOP * sigma) * step).astype(np.float32)
        return matrix, mean, std
    finally:
        env.close()


def read_safetensors(path) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file: an 8-byte header length, a JSON header, data."""
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    data = raw[8 + length :]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        assert entry["dtype"] == "F32", entry
        start, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(data[start:end], dtype="<f4").reshape(entry["shape"])
    return tensors


def gymnasium_evaluation(path, episodes: int) -> list[float]:
    """Gymnasium's own Hopper-v5 playing the file, each episode's return floored at 0."""
    tensors = read_safetensors(path)
    matrix, bias = tensors["0.weight"], tensors["0.bias"]
    mean, std = tensors["obs_mean"], tensors["obs_std"]
    env = gymnasium.make("Hopper-v5")
    returns = []
    try:
        for seed in range(episodes):
            obs, _ = env.reset(seed=seed)
            total, done = 0.0, False
            while not done:
                x = (obs.astype(np.float32) - mean) * (np.float32(1.0) / np.maximum(std, np.float32(1e-6)))
                action = np.clip(matrix @ x + bias, -1.0, 1.0).astype(np.float32)
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(max(total, 0.0))
    finally:
        env.close()
    return returns


def test_the_batch_score_of_a_fitted_policy_is_gymnasiums_own_evaluation(evaluator, tmp_path, monkeypatch):
    matrix, mean, std = fit(evaluator.endpoint)
    path = tmp_path / "policy.safetensors"
    bias = np.zeros(matrix.shape[0], dtype=np.float32)
    ale_client.save_mlp({"0.weight": matrix, "0.bias": bias}, path, obs_mean=mean, obs_std=std)

    with ale_client.HarnessChannel(evaluator.harness_socket) as harness:
        official = harness.create_official(TASK)
        monkeypatch.setenv("ALE_ENDPOINT", evaluator.unix_endpoint)
        monkeypatch.setenv("ALE_ENV_HANDLE", official.handle)
        monkeypatch.setenv("ALE_SUBMISSION_DIR", str(evaluator.state_dir / "submissions" / official.run_id))
        agent = ale_client.from_env()
        try:
            run = agent.submit_batch(path)
            status = run.wait(timeout=600)
        finally:
            agent.close()
        assert status.state == "succeeded", status.message
        result = harness.wait_for_result(official.session_id, timeout=60)

    batch = [e.metric for e in result.episodes]
    ours = gymnasium_evaluation(path, len(batch))
    n = len(batch)
    assert n == 50 and result.status == "completed"
    noise = math.sqrt(np.var(batch, ddof=1) / n + np.var(ours, ddof=1) / n)
    print(f"batch {np.mean(batch):.1f} ± {np.std(batch):.1f}, Gymnasium {np.mean(ours):.1f} ± {np.std(ours):.1f}")
    # A fitted policy, not a trivial one: it beats standing still for a while and falling.
    assert np.mean(ours) > 100.0
    assert abs(result.value - np.mean(ours)) <= 4.0 * noise + 1.0, (result.value, np.mean(ours), noise)
    assert result.value == pytest.approx(np.mean(batch))
