"""Fixtures: a real `ale serve` evaluator on loopback and its sockets, for the whole session.

The binary is `$ALE_BIN`, else the workspace's `target/debug/ale` (`scripts/test-python`
builds it first). Tests never fake the server.
"""

from __future__ import annotations

import os
import pathlib

import pytest

from ale_client.local import LocalEvaluator

REPO = pathlib.Path(__file__).resolve().parents[3]
PACKAGE = REPO / "client" / "python"

# The Go1's model for render() (ale_client.mujoco_view), where scripts/fetch-mujoco put it for
# the evaluator, unless the caller named one.
GO1_ASSETS = REPO / "target" / "mujoco-menagerie" / "unitree_go1"
if not os.environ.get("ALE_GO1_ASSETS") and (GO1_ASSETS / "go1.xml").is_file():
    os.environ["ALE_GO1_ASSETS"] = str(GO1_ASSETS)


def ale_binary() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("ALE_BIN") or REPO / "target" / "debug" / "ale")
    if not path.is_file():
        pytest.fail(f"no ale binary at {path}: run `cargo build --bin ale` or set ALE_BIN", pytrace=False)
    return path


def start_evaluator(state_dir: pathlib.Path, *args: str) -> LocalEvaluator:
    return LocalEvaluator.start(ale_binary(), state_dir=state_dir, args=args)


@pytest.fixture(scope="session")
def evaluator(tmp_path_factory: pytest.TempPathFactory) -> LocalEvaluator:
    state = tmp_path_factory.mktemp("ale") / "state"
    running = start_evaluator(state)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def capped_evaluator(tmp_path_factory: pytest.TempPathFactory) -> LocalEvaluator:
    """An evaluator that lets one connection hold only 2 practice envs."""
    running = start_evaluator(tmp_path_factory.mktemp("ale-capped") / "state", "--max-practice-envs-per-connection", "2")
    yield running
    running.stop()
