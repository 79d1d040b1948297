"""The soak's 2-minute form (scripts/soak.py): a job stream under node SIGKILLs, daemon
SIGKILLs with recovery and hostile frames; every job finishes exactly once, nothing is left."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "soak.py"


@pytest.mark.timeout(420)
def test_two_minute_soak_loses_doubles_and_leaves_nothing():
    r = subprocess.run([sys.executable, str(SCRIPT), "--minutes", "2", "--daemon-kill", "35", "--json"],
                       capture_output=True, text=True, timeout=400)
    assert r.returncode in (0, 1), r.stderr[-3000:]
    v = json.loads(r.stdout)
    assert (v["lost"], v["doubled"], v["left_running"]) == ([], [], []), v
    assert v["recovery_failures"] == 0 and v["down_exit"] == 0 and v["ok"] and r.returncode == 0
    # the faults really happened, and the jobs really ran through them
    assert v["daemon_kills"] >= 2 and v["recoveries"] == v["daemon_kills"]
    assert v["node_kills"] >= 10 and v["node_restarts"] >= 10 and v["requeues"] >= 1
    assert v["hostile_frames"] >= 5000 and v["raw_garbage"] > 0
    assert v["acknowledged"] >= 300 and v["states"].get("completed", 0) >= v["acknowledged"] * 0.9
