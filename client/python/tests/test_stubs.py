"""The committed stubs are what `proto/` generates today."""

import subprocess
import sys

from conftest import PACKAGE


def test_committed_stubs_match_the_protos():
    done = subprocess.run(
        [sys.executable, str(PACKAGE / "tools" / "generate_stubs.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
