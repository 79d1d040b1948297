"""Policies from a separate installed package, through the entry-point group ``mcemu.policies``.

The package is built in tmp_path as an installed distribution would be: the module and a
``*.dist-info`` folder with ``METADATA`` and ``entry_points.txt``, on the path of the ``mcemu``
processes (real importlib.metadata discovery, as after ``pip install``); and once by a real
``pip install`` of the README's example project."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler import allocators, disciplines, gang, registry
from scheduler.allocators.buddy import Buddy
from scheduler.disciplines.fcfs import FCFS
from scheduler.gang.multilevel import Multilevel

REPO = Path(__file__).resolve().parents[1]

PLUGIN = '''\
"""A researcher's policies, outside mcemu."""
from scheduler.disciplines.fcfs import FCFS


class ToyFCFS(FCFS):
    """FCFS again, from a plugin (the same decisions as fcfs)."""
'''

ALLOCS = '''\
from scheduler import allocators
from scheduler.allocators.buddy import Buddy


@allocators.register("toy-buddy")
class ToyBuddy(Buddy):
    """The buddy system again, registered by a module-form plugin."""
'''


def make_plugin(site: Path, entry_points: str, name: str = "mcemu-toy-plugin") -> Path:
    pkg = site / "mcemu_toy_plugin"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(PLUGIN)
    (pkg / "allocs.py").write_text(ALLOCS)
    dist = site / f"{name.replace('-', '_')}-0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[mcemu.policies]\n" + entry_points)
    return site


def mcemu(site: Path, *args, timeout=120):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(REPO)]))
    return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=timeout)


GOOD = "toy-fcfs = mcemu_toy_plugin:ToyFCFS\ntoy-allocators = mcemu_toy_plugin.allocs\n"


@pytest.mark.live
def test_simulate_and_policies_find_a_plugin(tmp_path):
    site = make_plugin(tmp_path / "site", GOOD)
    run = ["simulate", "--topology", "hypercube:5", "--load", "0.7", "--jobs", "300", "--seed", "4", "--json"]
    r = mcemu(site, *run, "--scheduler", "toy-fcfs", "--allocator", "toy-buddy")
    assert r.returncode == 0, r.stderr
    mine = json.loads(r.stdout)
    ref = json.loads(mcemu(site, *run, "--scheduler", "fcfs", "--allocator", "buddy").stdout)
    assert mine["scheduler"] == "toy-fcfs" and mine["allocator"] == "toy-buddy"
    for k in ("completed", "mean_queueing_delay", "utilization", "observation_time"):
        assert mine["metrics"][k] == ref["metrics"][k]  # the same decisions as the policies it copies
    r = mcemu(site, "policies", "--json")
    assert r.returncode == 0, r.stderr
    assert "toy-fcfs" in r.stdout and "toy-buddy" in r.stdout


@pytest.mark.live
def test_a_sweep_on_dask_workers_finds_a_plugin(tmp_path):
    pytest.importorskip("distributed")
    site = make_plugin(tmp_path / "site", GOOD)
    r = mcemu(site, "sweep", "--name", "p", "--topology", "hypercube:4", "--scheduler", "toy-fcfs,fcfs",
              "--load", "0.6", "--time", "80", "--seeds", "2", "--dask", "local:1", "--out", tmp_path, "--json")
    assert r.returncode == 0, r.stderr
    pts = {p["params"]["scheduler"]: p["metrics"] for p in json.loads(r.stdout)["points"]}
    assert pts["toy-fcfs"] == pts["fcfs"]


@pytest.mark.parametrize("entry, words", [
    ("lazy = mcemu_toy_plugin:ToyFCFS\n", "discipline 'lazy' is already registered"),
    ("broken = mcemu_toy_plugin.nothing_here\n", "fails to load"),
    ("odd = mcemu_toy_plugin:PLUGIN_TEXT\n", "fails to load"),
])
@pytest.mark.live
def test_a_bad_plugin_is_a_one_line_error(tmp_path, entry, words):
    site = make_plugin(tmp_path / "site", entry)
    r = mcemu(site, "simulate", "--topology", "hypercube:4", "--load", "0.5", "--jobs", "20", "--json")
    assert r.returncode == 2, r.stdout
    err = r.stderr.strip()
    assert words in err and "mcemu-toy-plugin 0.1" in err and len(err.splitlines()) == 1, err


def test_plugins_load_in_process_once_and_refuse_duplicates(tmp_path, monkeypatch):
    """importlib.metadata in this process: registered at the first lookup, and a plugin taking a
    name of the papers is refused, naming the plugin."""
    site = make_plugin(tmp_path / "site", "toy-fcfs-2 = mcemu_toy_plugin:ToyFCFS\n", name="mcemu-toy-two")
    monkeypatch.syspath_prepend(str(site))
    registry.reset_plugins()
    try:
        assert "toy-fcfs-2" in disciplines.names()
        assert disciplines.REGISTRY.get("toy-fcfs-2").__name__ == "ToyFCFS"
    finally:
        disciplines.REGISTRY.unregister("toy-fcfs-2")
    (site / "mcemu_toy_two-0.1.dist-info" / "entry_points.txt").write_text(
        "[mcemu.policies]\nfcfs = mcemu_toy_plugin:ToyFCFS\n")
    registry.reset_plugins()
    with pytest.raises(registry.PluginError, match="'fcfs' is already registered.*rename"):
        disciplines.REGISTRY.get("fcfs")
    assert disciplines.REGISTRY.get("fcfs").__name__ == "FCFS"  # the paper's policy stays
    monkeypatch.undo()
    registry.reset_plugins()


def test_a_class_finds_the_registry_of_its_kind_and_the_registry_imports_no_policy_package():
    """No import cycle: scheduler.registry imports none of the packages that import it; each
    package declares its kind's base class, by which a plugin's class finds its registry."""
    tree = ast.parse((REPO / "scheduler" / "registry.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and m.startswith("scheduler")}, imported
    for cls, reg in ((FCFS, disciplines.REGISTRY), (Buddy, allocators.REGISTRY), (Multilevel, gang.REGISTRY)):
        assert registry._registry_for(type("Mine", (cls,), {})) is reg
    assert registry._registry_for(type("Other", (), {})) is None


README_PLUGIN = '''\
from scheduler.disciplines.fcfs import FCFS


class SmallestFirst(FCFS):
    """The smallest waiting request first (its head blocks, like FCFS)."""

    def _enqueue(self, job, now):
        size = self.normalize(job.request).processors_needed
        q = self._queue
        i = next((i for i, j in enumerate(q) if self.normalize(j.request).processors_needed > size), len(q))
        q.insert(i, job)
        self._blocked = None
'''


@pytest.mark.live
def test_a_pip_installed_plugin_as_the_readme_shows(tmp_path):
    """The README's plugin project, installed by a real ``pip install`` (into a target folder
    of its own, so the test leaves the environment as it was): ``mcemu policies`` lists it and
    ``mcemu simulate`` runs it."""
    proj = tmp_path / "my-policies"
    (proj / "my_policies").mkdir(parents=True)
    (proj / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "my-policies"\nversion = "0.1"\n\n'
        '[project.entry-points."mcemu.policies"]\nsmallest-first = "my_policies:SmallestFirst"\n')
    (proj / "my_policies" / "__init__.py").write_text(README_PLUGIN)
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--no-index", "--target", str(site), str(proj)], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
    assert r.returncode == 0, r.stderr
    assert list(site.glob("my_policies-0.1.dist-info/entry_points.txt"))
    r = mcemu(site, "policies", "--json")
    assert r.returncode == 0, r.stderr
    assert "smallest-first" in r.stdout
    run = ["simulate", "--topology", "hypercube:5", "--load", "0.8", "--jobs", "400", "--seed", "3", "--json"]
    mine, fcfs = (json.loads(mcemu(site, *run, "--scheduler", s).stdout) for s in ("smallest-first", "fcfs"))
    assert mine["scheduler"] == "smallest-first" and mine["metrics"]["completed"] == fcfs["metrics"]["completed"]
    assert mine["metrics"]["mean_queueing_delay"] != fcfs["metrics"]["mean_queueing_delay"]  # its own order
