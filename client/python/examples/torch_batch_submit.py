"""Train a tiny PyTorch MLP for a batch task, export it as safetensors, and submit it.

Needs PyTorch (`pip install "./client/python[torch]"`). The policy is trained by behaviour
cloning: a practice env of `mountaincar-continuous` is played by a simple teacher (push the way
the car moves), and a 2 → 16 → 1 tanh MLP learns to imitate it. The evaluator plays batch
submissions itself, so what is submitted is the file, not this process.

Practice (writes the file; an evaluator on the default endpoint, or --endpoint):

    python examples/torch_batch_submit.py --out my-submission
    ale harness run --task mountaincar-continuous --submission my-submission

Official, the script itself as the submitting agent (it sees ALE_ENV_HANDLE and
ALE_SUBMISSION_DIR, trains on the practice channel it was handed, and submits):

    ale harness run --task mountaincar-continuous -- .venv/bin/python "$PWD/examples/torch_batch_submit.py"
"""

from __future__ import annotations

import argparse
import os
import pathlib

import numpy as np
import torch

import ale_client

TASK = "mountaincar-continuous"


def teacher(obs: np.ndarray) -> float:
    """Push the way the car is already moving: pumps energy until it reaches the flag."""
    return 1.0 if obs[1] >= 0 else -1.0


def collect(endpoint: str | None, episodes: int) -> tuple[np.ndarray, np.ndarray]:
    env = ale_client.make(TASK, endpoint=endpoint)
    observations, actions = [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=episode)
        done = False
        while not done:
            action = teacher(obs)
            observations.append(obs)
            actions.append([action])
            obs, _, terminated, truncated, _ = env.step(np.array([action]))
            done = terminated or truncated
    env.close()
    return np.asarray(observations, dtype=np.float32), np.asarray(actions, dtype=np.float32)


def train(observations: np.ndarray, actions: np.ndarray, epochs: int) -> tuple[torch.nn.Module, np.ndarray, np.ndarray]:
    mean, std = observations.mean(axis=0), observations.std(axis=0) + 1e-6
    x = torch.from_numpy((observations - mean) / std)
    y = torch.from_numpy(actions)
    model = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(epochs):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(torch.tanh(model(x)) * 1.0, y)
        loss.backward()
        optimiser.step()
        if epoch % 50 == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)
    return model, mean, std


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", default=None, help="default: ALE_ENDPOINT, else http://127.0.0.1:50051")
    parser.add_argument("--out", default="submission", help="folder for the policy file (practice)")
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=300)
    args = parser.parse_args()

    official = ale_client.from_env() if os.environ.get("ALE_ENV_HANDLE") else None
    observations, actions = collect(args.endpoint, args.episodes)
    model, mean, std = train(observations, actions, args.epochs)
    # The evaluator clips a Box action to its bounds, which plays the role of the tanh above.
    if official is not None:
        path = official.submission_path()
    else:
        folder = pathlib.Path(args.out)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "policy.safetensors"
    ale_client.save_mlp(model.state_dict(), path, activation="tanh", obs_mean=mean, obs_std=std)
    print(f"wrote {path}")
    if official is None:
        print(f"submit it with: ale harness run --task {TASK} --submission {path.parent}")
        return
    run = official.submit_batch()
    status = run.wait(timeout=600)
    print(f"batch run {run.batch_id}: {status.state} {status.message}")


if __name__ == "__main__":
    main()
