"""Sims hosted in processes of their own, end to end through a real `ale serve`.

Task files name Gymnasium envs served by `ale_client.sim_host` (this venv's interpreter) and
the Rust host `ale-rust-host` (built beside `ale`), which misbehaves on request. Each fault is a
real host process crashing, hanging, writing garbage, sending a wrong shape or a NaN, or
outgrowing its memory.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

import gymnasium
import numpy as np
import pytest

import ale_client
from conftest import PACKAGE, REPO, ale_binary, start_evaluator
from test_sandbox import harness_run

RUST_HOST = pathlib.Path(ale_binary()).with_name("ale-rust-host")
FAULTS = ["crash", "hang", "garbage", "wrong-shape", "nan", "memory"]


def task_file(task_id: str, sim: str, *, mode: str = "interactive", episodes: int = 3, steps: int = 50,
              extra: str = "") -> str:
    text = f"""
        id = "{task_id}"
        title = "{task_id}"
        mode = "{mode}"
        genre = "open"

        [sim]
        kind = "process"
        {sim}

        [metric]
        name = "mean_return"
        episode_metric = "return"
        direction = "higher_is_better"
        target = 100.0
        failure_value = 0.0

        [eval]
        episodes = {episodes}
        max_steps_per_episode = {steps}
        time_budget_seconds = 300
        """
    return textwrap.dedent(text) + textwrap.dedent(extra)


def gym_sim(env: str, *more: str) -> str:
    lines = [f'gymnasium = "{env}"', f'python = "{sys.executable}"', "timeout_seconds = 30", *more]
    return "\n        ".join(lines)


def rust_sim(*args: str, more: str = "") -> str:
    command = json.dumps([str(RUST_HOST), *args])
    return f"command = {command}\n        timeout_seconds = 2\n        {more}"


@pytest.fixture(scope="module")
def hosted(tmp_path_factory):
    if not RUST_HOST.is_file():
        pytest.fail(f"no {RUST_HOST}: run `cargo build -p ale-sims-remote --bin ale-rust-host`", pytrace=False)
    tasks = tmp_path_factory.mktemp("tasks")
    root = tmp_path_factory.mktemp("ale-hosted")
    state = root / "state"
    files = {
        "hosted-cartpole": task_file("hosted-cartpole", gym_sim("CartPole-v1"), steps=500),
        "hosted-ant": task_file("hosted-ant", gym_sim("Ant-v5"), steps=1000),
        "hosted-spy": task_file(
            "hosted-spy",
            gym_sim("hosted_envs:HostTest/Spy-v0", f'kwargs = {{ state_dir = "{state}", port = 1 }}',
                    'counters = ["saw_state_dir", "reached_network"]',
                    f'env = {{ PYTHONPATH = "{PACKAGE / "tests"}" }}'),
        ),
        "hosted-maze": task_file(
            "hosted-maze", gym_sim("gymnasium_robotics:PointMaze_UMaze-v3", 'counters = ["success"]'),
            episodes=2, steps=100,
        ),
        "hosted-pointmass": task_file("hosted-pointmass", rust_sim(), steps=40),
        "hosted-pointmass-batch": task_file(
            "hosted-pointmass-batch", rust_sim(more="batch = true"), mode="batch", episodes=6, steps=40,
            extra="""
            [submission]
            submission_path = "/run/ale/submission"
            entrypoint = "policy.safetensors"
            format = "mlp-safetensors"
            """,
        ),
        "fault-official": task_file("fault-official", rust_sim("--fault", "crash", "--at-step", "25"), steps=20),
        "fault-reset-official": task_file("fault-reset-official", rust_sim("--fault", "fail-reset", "--at-step", "1"),
                                          episodes=2, steps=20),
    }
    for fault in FAULTS:
        memory = "memory_mb = 256" if fault == "memory" else ""
        files[f"fault-{fault}"] = task_file(f"fault-{fault}", rust_sim("--fault", fault, "--at-step", "3", more=memory))
    for name, text in files.items():
        (tasks / f"{name}.toml").write_text(text)
    # Closed practice envs keep their hosts until reaped (no RPC closes an env): room for all
    # this module's.
    running = start_evaluator(state, "--tasks-dir", str(tasks), "--threads", "1",
                              "--max-run-practice-sim-hosts", "32")
    running.port = int(running.endpoint.rsplit(":", 1)[1])
    yield running
    running.stop()


def practice(evaluator, task: str) -> ale_client.AleEnv:
    return ale_client.make(task, endpoint=evaluator.endpoint)


def test_hosted_cartpole_is_gymnasiums_native_cartpole_seed_for_seed(hosted):
    """Gymnasium's CartPole-v1 in a host gives, bit for bit, what the evaluator's own CartPole
    (NumPy's generator ported) gives on the same seeds and actions."""
    ours, theirs = practice(hosted, "cartpole-balance"), practice(hosted, "hosted-cartpole")
    reference = gymnasium.make("CartPole-v1")
    rng = np.random.default_rng(0)
    for seed in (0, 1, 42, 2**40 + 3):
        a, _ = ours.reset(seed=seed)
        b, _ = theirs.reset(seed=seed)
        c, _ = reference.reset(seed=seed)
        assert a.tobytes() == b.tobytes() == c.tobytes()
        for _ in range(500):
            action = int(rng.integers(2))
            a, ra, ta, ua, _ = ours.step(action)
            b, rb, tb, ub, _ = theirs.step(action)
            assert a.tobytes() == b.tobytes() and (ra, ta, ua) == (rb, tb, ub)
            if ta or ua:
                break
    ours.close()
    theirs.close()


def test_hosted_ant_is_the_native_mujoco_ant(hosted):
    """Gymnasium's Ant-v5 in a host (mujoco 3.17.0, gymnasium 1.4.0, numpy 2.4.6, as pinned)
    against the evaluator's own Ant-v5 on MuJoCo 3.17.0: the same observations and rewards, bit
    for bit."""
    ours, theirs = practice(hosted, "ant-walk"), practice(hosted, "hosted-ant")
    rng = np.random.default_rng(7)
    for seed in (3, 11):
        a, _ = ours.reset(seed=seed)
        b, _ = theirs.reset(seed=seed)
        assert a.tobytes() == b.tobytes()
        for _ in range(200):
            action = rng.uniform(-1, 1, ours.action_space.shape).astype(np.float32)
            a, ra, ta, ua, _ = ours.step(action)
            b, rb, tb, ub, _ = theirs.step(action)
            assert a.tobytes() == b.tobytes() and (ra, ta, ua) == (rb, tb, ub)
            if ta:
                break
    ours.close()
    theirs.close()


def test_a_host_sees_no_state_dir_and_no_network(hosted):
    env = practice(hosted, "hosted-spy")
    _, info = env.reset(seed=0)
    assert info["saw_state_dir"] == 0.0, "the host read the evaluator's state dir"
    assert info["reached_network"] == 0.0, "the host reached the evaluator over TCP"
    # The evaluator's own TCP port answers from here: the host's view is what stops it.
    import socket

    with socket.create_connection(("127.0.0.1", hosted.port), timeout=5):
        pass
    env.close()


@pytest.mark.parametrize("fault", FAULTS)
def test_a_failing_host_fails_its_env_clearly_and_nothing_else(hosted, fault):
    env = practice(hosted, f"fault-{fault}")
    bystander = practice(hosted, "cartpole-balance")
    env.reset(seed=1)
    env.step(np.array([0.5], np.float32))
    env.step(np.array([0.5], np.float32))
    with pytest.raises(ale_client.SimFault) as failed:
        env.step(np.array([0.5], np.float32))
    message = failed.value.details
    assert "process:ale-rust-host" in message and "host process failed" in message, message
    expected = {
        "crash": "SIGABRT",
        "hang": "did not answer within 2.0 s",
        "garbage": "not a Reply",
        "wrong-shape": "outside the observation space",
        "nan": "NaN",
        "memory": "misbehaving now",
    }[fault]
    assert expected in message, message
    assert "misbehaving now" in message, "the tail of the host's stderr"
    # The evaluator keeps serving everyone else...
    bystander.reset(seed=0)
    bystander.step(1)
    # ...and the failed env starts a fresh host at its next reset.
    with pytest.raises(ale_client.FailedPrecondition):
        env.step(np.array([0.5], np.float32))
    env.reset(seed=1)
    env.step(np.array([0.5], np.float32))
    env.close()
    bystander.close()


def verify(run_dir: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(ale_binary()), "harness", "verify", str(run_dir)], capture_output=True, text=True)


def test_a_hosted_sim_plays_an_official_interactive_run_that_verifies(hosted, tmp_path):
    code, report, log, run_dir = harness_run(hosted, "hosted-cartpole", "official_agent.py", tmp_path)
    assert code == 0, log
    assert report["status"] == "completed", report["status_message"]
    assert report["value"] > 100, "the balancing controller keeps Gymnasium's pole up"
    assert verify(run_dir).returncode == 0


def test_a_sim_fault_mid_rollout_is_the_sims_on_record_and_the_record_verifies(hosted, tmp_path):
    code, report, log, run_dir = harness_run(hosted, "fault-official", "hosted_agent.py", tmp_path)
    assert code == 5, "a rollout lost to the sim: exit 5"
    assert "1 lost to the sim" in log, log
    outcomes = [e["outcome"] for e in report["episodes"]]
    assert outcomes == ["completed", "sim_fault", "completed"], outcomes
    assert report["status"] == "completed", report["status_message"]
    trajectory = (run_dir / "trajectory.jsonl").read_text()
    assert "SIGABRT" not in trajectory and "misbehaving" not in trajectory, "the host's words stay in the log"
    done = verify(run_dir)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_sim_that_cannot_start_a_rollout_gives_it_up_on_record_and_the_session_ends(hosted, tmp_path):
    """A host that fails every reset does not hold the session: each rollout is tried a few
    times, then recorded as the sim's, and the record verifies."""
    code, report, log, run_dir = harness_run(hosted, "fault-reset-official", "hosted_agent.py", tmp_path)
    assert code == 5, "rollouts lost to the sim: exit 5"
    assert [e["outcome"] for e in report["episodes"]] == ["sim_fault", "sim_fault"], log
    assert report["status"] == "completed", report["status_message"]
    assert "asked to fail" not in (run_dir / "trajectory.jsonl").read_text()
    done = verify(run_dir)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_hosted_sim_plays_a_batch_run_that_verifies(hosted, tmp_path):
    submission = tmp_path / "submission"
    submission.mkdir()
    # A linear controller: push against position and velocity.
    ale_client.save_mlp({"0.weight": np.array([[-1.0, -1.5]], np.float32), "0.bias": np.zeros(1, np.float32)},
                        submission / "policy.safetensors")
    done = subprocess.run(
        [str(ale_binary()), "harness", "run", "--task", "hosted-pointmass-batch", "--state-dir",
         str(hosted.state_dir), "--submission", str(submission), "--progress", "json"],
        capture_output=True, text=True, timeout=300,
    )
    reports = [json.loads(line) for line in done.stdout.splitlines() if '"event":"report"' in line.replace(" ", "")]
    assert reports, done.stdout + done.stderr
    report, run_dir = reports[-1]["report"], pathlib.Path(reports[-1]["run_dir"])
    assert report["status"] == "completed", report["status_message"]
    assert [e["outcome"] for e in report["episodes"]] == ["completed"] * 6
    assert verify(run_dir).returncode == 0


def test_a_third_party_env_checks_plays_officially_and_verifies(hosted, tmp_path):
    """Gymnasium-Robotics' PointMaze, as a user brings it: served, checked, run, verified."""
    from gymnasium.utils.env_checker import check_env

    env = practice(hosted, "hosted-maze")
    assert isinstance(env.observation_space, gymnasium.spaces.Dict)
    check_env(env, skip_render_check=True)
    env.close()
    code, report, log, run_dir = harness_run(hosted, "hosted-maze", "../../examples/random_agent.py", tmp_path)
    assert code == 0, log
    assert report["status"] == "completed", report["status_message"]
    assert verify(run_dir).returncode == 0


def children(pid: int) -> set[int]:
    found = set()
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (a host's keeper, its init and its program), by global pid."""
    found = set()
    todo = [pid]
    while todo:
        try:
            below = children(todo.pop())
        except FileNotFoundError:
            continue
        todo.extend(below - found)
        found |= below
    return found


def is_gone(pid: int) -> bool:
    try:
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def test_hosts_die_with_a_killed_evaluator(tmp_path):
    import signal
    import time

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "hosted-pointmass.toml").write_text(task_file("hosted-pointmass", rust_sim(), steps=40))
    running = start_evaluator(tmp_path / "state", "--tasks-dir", str(tasks))
    try:
        before = children(running.process.pid)
        env = practice(running, "hosted-pointmass")
        env.reset(seed=0)
        hosts = children(running.process.pid) - before
        assert len(hosts) == 1, "one host for the env"
        # The host's whole tree (keeper, init, program); other evaluators in this run (the
        # module's `hosted` one) keep their own hosts, so only this tree is checked.
        tree = set().union(*(descendants(pid) | {pid} for pid in hosts))
        program = [pid for pid in tree if str(RUST_HOST) in pathlib.Path(f"/proc/{pid}/cmdline").read_text()]
        assert program, f"the host's program runs below the evaluator: {tree}"
        running.process.send_signal(signal.SIGKILL)
        running.process.wait()
        deadline = time.monotonic() + 10
        while not all(is_gone(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(is_gone(pid) for pid in tree), f"host processes {tree} outlived their evaluator"
    finally:
        running.stop()


def test_a_call_on_an_env_busy_with_its_host_is_refused_not_queued(hosted):
    """While one call waits on a hanging host, a second call on the same env is refused at
    once (it would hold one of the evaluator's threads for as long), and the first ends with
    the host's timeout."""
    import threading

    env = practice(hosted, "fault-hang")
    other = ale_client.AleEnv.attach(env.handle, hosted.endpoint)
    env.reset(seed=1)
    env.step(np.array([0.5], np.float32))
    env.step(np.array([0.5], np.float32))
    outcome = {}

    def hang():
        try:
            env.step(np.array([0.5], np.float32))
        except ale_client.SimFault as fault:
            outcome["fault"] = fault

    stuck = threading.Thread(target=hang)
    stuck.start()
    import time

    time.sleep(0.5)
    with pytest.raises(ale_client.FailedPrecondition) as busy:
        other.step(np.array([0.5], np.float32))
    assert "busy with another call" in busy.value.details
    stuck.join(timeout=30)
    assert "did not answer within 2.0 s" in outcome["fault"].details
    other.close()
    env.close()


def test_a_vector_env_of_a_hosted_sim_plays_gymnasiums_steps(hosted):
    """A hosted CartPole vector (its sub-envs in one block on one host): they play what
    Gymnasium's CartPole plays on the same seeds, and a bad action names its sub-env."""
    envs = ale_client.make_vec("hosted-cartpole", 3, hosted.endpoint)
    obs, _ = envs.reset(seed=7)
    reference = gymnasium.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync")
    ref, _ = reference.reset(seed=7)
    np.testing.assert_array_equal(obs, ref)
    for _ in range(5):
        actions = np.array([0, 1, 1])
        obs, rewards, terminations, truncations, _ = envs.step(actions)
        ref, ref_rewards, _, _, _ = reference.step(actions)
        np.testing.assert_array_equal(obs, ref)
        np.testing.assert_array_equal(rewards, ref_rewards)
    with pytest.raises(ale_client.InvalidArgument, match="sub-env 1"):
        envs.step(np.array([0, 5, 0]))
    envs.close()
    reference.close()
