"""`LocalEvaluator`: its `ale serve` does not outlive the Python process that started it."""

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ale_binary

# A Python process that starts an evaluator, says its pid, and waits to be killed.
HOLDER = """
import sys, time
from ale_client import LocalEvaluator
evaluator = LocalEvaluator.start(sys.argv[1], state_dir=sys.argv[2])
print(evaluator.process.pid, flush=True)
time.sleep(600)
"""


def is_gone(pid: int) -> bool:
    """No such process, or a zombie waiting to be reaped (it has exited)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a parent-death signal is Linux's")
def test_the_evaluator_stops_when_its_python_process_is_killed(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(ale_binary()), str(tmp_path / "state")],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        line = holder.stdout.readline()
        assert line.strip().isdigit(), f"the holder said {line!r}"
        serve = int(line)
        assert not is_gone(serve), "ale serve is running while its holder lives"
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        deadline = time.monotonic() + 15
        while not is_gone(serve) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert is_gone(serve), f"ale serve (pid {serve}) outlived the Python process that started it"
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        holder.stdout.close()
