"""Starting an evaluator from Python: `ale serve` as a child process.

    with ale_client.LocalEvaluator.start("ale", state_dir="/tmp/ale-state") as evaluator:
        env = ale_client.make("cartpole-balance", endpoint=evaluator.endpoint)

Useful in notebooks, tests and benchmarks; a shared evaluator is better started by hand. On
Linux the evaluator stops (SIGTERM, a clean shutdown) when the Python process that started it
dies, however it dies: a killed notebook kernel leaves no `ale serve` behind.
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
from typing import Optional

# `ale serve` prints, once both listeners are bound, "ale evaluator ready" and then one
# "  name:   value" line each for these (docs/protocol.md).
_READY_FIELDS = ("agent channel", "agent socket", "harness channel", "evaluator key")


# prctl(2)'s option that sends the calling process a signal when its parent dies.
_PR_SET_PDEATHSIG = 1


def _stop_with_parent(parent: int):
    """A `preexec_fn` (Linux) for a child that gets SIGTERM when `parent` dies. The signal is
    tied to the thread that started the child: start it from a thread that lives as long as
    the evaluator should (the main thread, typically)."""

    def arm() -> None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        # The parent may have died before the signal was armed.
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


@dataclass
class LocalEvaluator:
    """A running `ale serve` and what it printed when it became ready."""

    process: subprocess.Popen
    state_dir: pathlib.Path
    endpoint: str  # the agent channel over TCP
    agent_socket: pathlib.Path
    harness_socket: pathlib.Path
    public_key: str

    @property
    def unix_endpoint(self) -> str:
        """The agent socket as an endpoint (`unix:///PATH`)."""
        return f"unix://{self.agent_socket}"

    @classmethod
    def start(
        cls,
        ale: os.PathLike[str] | str = "ale",
        *,
        state_dir: os.PathLike[str] | str,
        listen: str = "127.0.0.1:0",
        args: tuple[str, ...] = (),
        ready_timeout: float = 30.0,
    ) -> "LocalEvaluator":
        """Runs `ale serve --state-dir STATE_DIR --listen LISTEN ARGS...` (port 0: a free port)
        and returns once it says it is ready; `RuntimeError` if it exits or stays silent."""
        state = pathlib.Path(state_dir)
        process = subprocess.Popen(
            [os.fspath(ale), "serve", "--state-dir", str(state), "--listen", listen, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            preexec_fn=_stop_with_parent(os.getpid()) if sys.platform.startswith("linux") else None,
        )
        assert process.stdout is not None
        found: dict[str, str] = {}
        deadline = time.monotonic() + ready_timeout
        while not all(f in found for f in _READY_FIELDS):
            line = process.stdout.readline()
            if not line:
                code = process.wait()
                process.stdout.close()
                raise RuntimeError(f"ale serve exited with {code} before it was ready (is {state} usable?)")
            match = re.match(r"\s+([a-z ]+):\s+(\S+)", line)
            if match:
                found[match.group(1)] = match.group(2)
            if time.monotonic() > deadline:
                process.kill()
                process.wait()
                process.stdout.close()
                raise RuntimeError(f"ale serve did not say it was ready within {ready_timeout}s")
        return cls(
            process=process,
            state_dir=state,
            endpoint=found["agent channel"],
            agent_socket=pathlib.Path(found["agent socket"]),
            harness_socket=pathlib.Path(found["harness channel"]),
            public_key=found["evaluator key"],
        )

    def stop(self, timeout: Optional[float] = 10.0) -> int:
        """SIGTERM (a clean shutdown: sessions ended and flushed), then SIGKILL after
        `timeout` seconds; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.process.returncode

    def __enter__(self) -> "LocalEvaluator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
