"""The examples run as a user would run them, against a real evaluator."""

import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import PACKAGE

EXAMPLES = PACKAGE / "examples"
# The CEM learner's budget: it must reach the target within this many env steps (its default
# seed, 1, takes 45,435, as on Gymnasium's own CartPole-v1; the bound leaves room for other NumPy
# versions' sampling, not for a broken learner).
CEM_STEP_BOUND = 250_000


def run_example(name, *args, timeout=600):
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=timeout
    )


def test_the_random_agent_plays_practice_episodes(evaluator):
    done = run_example("random_agent.py", "--endpoint", evaluator.endpoint, "--episodes", "2", "--task", "pendulum-swingup")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all("in 200 steps" in line for line in lines), lines


def test_the_numpy_cem_learner_reaches_the_cartpole_target_within_its_step_bound(evaluator):
    done = run_example("cem_cartpole.py", "--endpoint", evaluator.endpoint, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert outcome["reached"] and outcome["return"] >= outcome["target"] == 475.0
    assert outcome["env_steps"] <= CEM_STEP_BOUND, outcome


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is an optional dependency (the [torch] extra)")
def test_the_torch_example_writes_a_policy_the_evaluator_accepts(evaluator, tmp_path):
    done = run_example("torch_batch_submit.py", "--endpoint", evaluator.endpoint, "--out", str(tmp_path), "--epochs", "100")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "policy.safetensors").stat().st_size > 0


def test_every_example_compiles():
    for path in EXAMPLES.glob("*.py"):
        compile(path.read_text(), str(path), "exec")
