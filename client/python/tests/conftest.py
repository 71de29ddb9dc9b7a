"""Fixtures: a real `ale serve` evaluator on loopback and its sockets, for the whole session.

The binary is `$ALE_BIN`, else the workspace's `target/debug/ale` (`scripts/test-python`
builds it first). Tests never fake the server.
"""

from __future__ import annotations

import os
import pathlib
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
PACKAGE = REPO / "client" / "python"


def ale_binary() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("ALE_BIN") or REPO / "target" / "debug" / "ale")
    if not path.is_file():
        pytest.fail(f"no ale binary at {path}: run `cargo build --bin ale` or set ALE_BIN", pytrace=False)
    return path


@dataclass
class Evaluator:
    process: subprocess.Popen
    state_dir: pathlib.Path
    endpoint: str  # the agent channel over TCP
    agent_socket: pathlib.Path
    harness_socket: pathlib.Path

    @property
    def unix_endpoint(self) -> str:
        return f"unix://{self.agent_socket}"


def start_evaluator(state_dir: pathlib.Path, *extra: str) -> Evaluator:
    """`ale serve` on a fresh state dir and a free port; returns once it says it is ready."""
    process = subprocess.Popen(
        [str(ale_binary()), "serve", "--state-dir", str(state_dir), "--listen", "127.0.0.1:0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: dict[str, str] = {}
    deadline = time.monotonic() + 30
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"ale serve exited ({process.wait()}) before it was ready")
        match = re.match(r"\s+([a-z ]+):\s+(\S+)", line)
        if match:
            lines[match.group(1)] = match.group(2)
        if "evaluator key" in lines:
            break
    else:
        process.kill()
        raise RuntimeError("ale serve did not say it was ready within 30 s")
    return Evaluator(
        process=process,
        state_dir=state_dir,
        endpoint=lines["agent channel"],
        agent_socket=pathlib.Path(lines["agent socket"]),
        harness_socket=pathlib.Path(lines["harness channel"]),
    )


def stop_evaluator(evaluator: Evaluator) -> None:
    evaluator.process.send_signal(signal.SIGTERM)
    try:
        evaluator.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        evaluator.process.kill()
        evaluator.process.wait()


@pytest.fixture(scope="session")
def evaluator(tmp_path_factory: pytest.TempPathFactory) -> Evaluator:
    state = tmp_path_factory.mktemp("ale") / "state"
    running = start_evaluator(state)
    yield running
    stop_evaluator(running)


@pytest.fixture(scope="session")
def python() -> str:
    """The interpreter the tests run on (the venv's), for agent subprocesses."""
    return sys.executable
