"""Python agents under `ale harness run`, inside the harness's sandbox (namespaces, offline,
as `nobody` when the tests run as root)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import PACKAGE, ale_binary

AGENTS = PACKAGE / "tests" / "agents"


def hidden_by_the_sandbox(path: pathlib.Path) -> bool:
    """Whether `path` lies in a folder the sandbox hides (users' homes) or replaces (/tmp)."""
    path = path.resolve()
    homes = [pathlib.Path("/home"), pathlib.Path("/root"), pathlib.Path("/tmp")]
    if os.environ.get("HOME"):
        homes.append(pathlib.Path(os.environ["HOME"]))
    return any(path == h.resolve() or h.resolve() in path.parents for h in homes if h.exists())


def harness_run(evaluator, task, agent, tmp_path):
    """`ale harness run` of `agent` with this venv's interpreter; returns (exit, report, log)."""
    command = [str(ale_binary()), "harness", "run", "--task", task, "--state-dir", str(evaluator.state_dir),
               "--progress", "json", "--workdir", str(tmp_path)]
    # What lies in a home or /tmp (an interpreter from pyenv or conda, this venv, this
    # checkout) is exposed read-only, as docs/harness.md tells Python users to do.
    needed = sorted({pathlib.Path(p).resolve() for p in (sys.base_prefix, sys.prefix, PACKAGE)})
    for path in needed:
        if hidden_by_the_sandbox(path) and not any(other in path.parents for other in needed):
            command += ["--expose", str(path)]
    command += ["--", sys.executable, str(AGENTS / agent)]
    tmp_path.chmod(0o777)  # the agent runs as another user when the harness is root
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    reports = [line for line in lines if line.get("event") == "report"]
    assert reports, f"no report (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    run_dir = pathlib.Path(reports[-1]["run_dir"])
    return done.returncode, reports[-1]["report"], (run_dir / "agent.log").read_text(), run_dir


def test_a_python_agent_completes_an_official_session_in_the_sandbox(evaluator, tmp_path):
    code, report, log, run_dir = harness_run(evaluator, "cartpole-balance", "official_agent.py", tmp_path)
    assert code == 0, log
    assert report["status"] == "completed", report["status_message"]
    assert "played" in log and "GetEvalResult refused: PERMISSION_DENIED" in log, log
    assert report["trajectory"]["verified"]
    assert report["sandbox"]["mode"] == "namespaces" and report["sandbox"]["network"] == "none", report["sandbox"]
    verify = subprocess.run([str(ale_binary()), "harness", "verify", str(run_dir)], capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_python_agent_submits_a_batch_policy_from_the_sandbox(evaluator, tmp_path):
    code, report, log, _ = harness_run(evaluator, "mountaincar-continuous", "batch_agent.py", tmp_path)
    assert code == 0, log
    assert "batch run succeeded; result on the agent channel: None" in log, log
    assert report["status"] == "completed", report["status_message"]
    assert report["value"] > 0, "the controller reaches the flag"
