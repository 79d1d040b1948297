"""scripts/bench_chain.py (the floor under a virtual-time ping-pong) runs its chain to the end,
relays tokens of any size whole, and leaves no worker behind."""
import importlib.util
import os
from pathlib import Path

import psutil
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_chain.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_chain", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("nbytes", [32, 65536, 200_001])
def test_the_chain_relays_whole_tokens_and_leaves_no_worker(nbytes):
    bench = _load()
    before = {p.pid for p in psutil.Process().children()}
    row = bench.chain(3, 30, 10, nbytes)
    assert row["steps"] == 30 and row["bytes"] == nbytes and row["steps_per_s"] > 0
    assert {p.pid for p in psutil.Process(os.getpid()).children()} == before


def test_bad_sizes_are_refused(capsys):
    with pytest.raises(SystemExit) as e:
        _load().main(["--bytes", "0"])
    assert e.value.code == 2 and "at least 1" in capsys.readouterr().err
