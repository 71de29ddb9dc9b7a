"""The examples run as a user would run them, against a real evaluator."""

import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

from conftest import PACKAGE, ale_binary

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


CARTPOLE_BATCH = """
id = "cartpole-batch"
title = "CartPole, batch"
description = "CartPole-v1; submit an mlp-safetensors policy, which the evaluator rolls out itself."
sim = "CartPole-v1"
mode = "batch"
genre = "open"

[metric]
name = "mean_return"
episode_metric = "return"
direction = "higher_is_better"
target = 475.0
cap = 1.5
failure_value = 0.0

[eval]
episodes = 20
max_steps_per_episode = 500
time_budget_seconds = 600

[submission]
submission_path = "/run/ale/submission"
entrypoint = "policy.safetensors"
format = "mlp-safetensors"
notes = "A linear or MLP policy; two logits, argmax is the action."
"""


def test_the_cem_learner_trains_on_vector_envs_under_a_harness_and_submits_for_batch_scoring(tmp_path):
    """The whole loop an agent runs: practice on its run's own channel through vector envs,
    reach the target, write the policy file and submit it; the evaluator rolls it out on hidden
    seeds, and the harness's record verifies."""
    from conftest import start_evaluator
    from test_sandbox import hidden_by_the_sandbox

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "cartpole-batch.toml").write_text(CARTPOLE_BATCH)
    evaluator = start_evaluator(tmp_path / "state", "--tasks-dir", str(tasks))
    try:
        workdir = tmp_path / "work"
        workdir.mkdir()
        workdir.chmod(0o777)  # the agent runs as another user when the harness is root
        command = [str(ale_binary()), "harness", "run", "--task", "cartpole-batch", "--state-dir",
                   str(evaluator.state_dir), "--progress", "json", "--workdir", str(workdir)]
        needed = sorted({pathlib.Path(p).resolve() for p in (sys.base_prefix, sys.prefix, PACKAGE)})
        for path in needed:
            if hidden_by_the_sandbox(path) and not any(other in path.parents for other in needed):
                command += ["--expose", str(path)]
        command += ["--", sys.executable, str(EXAMPLES / "cem_cartpole.py"), "--json"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        reports = [line for line in lines if line.get("event") == "report"]
        assert reports, f"no report (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
        report = reports[-1]["report"]
        log = (pathlib.Path(reports[-1]["run_dir"]) / "agent.log").read_text()
        assert "wrote" in log and "batch run" in log, log
        assert report["status"] == "completed", report.get("status_message")
        assert report["trajectory"]["verified"], report["trajectory"]
        # Scored by the evaluator on hidden seeds: the policy that reached 475 on fresh practice
        # seeds holds there too (CartPole's starts differ little).
        assert report["value"] >= 400, report["value"]
    finally:
        evaluator.stop()


def test_ars_learns_a_linear_mujoco_policy_on_vector_envs_and_writes_it(evaluator, tmp_path):
    done = run_example("ars_mujoco.py", "--endpoint", evaluator.endpoint, "--task", "hopper-hop", "--iterations", "3",
                       "--directions", "4", "--top", "2", "--out", str(tmp_path), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert outcome["task"] == "hopper-hop" and len(outcome["returns"]) == 3 and outcome["env_steps"] > 0, outcome
    assert (tmp_path / "policy.safetensors").stat().st_size > 0
