"""One cluster configuration schema (emulator.live.config.SETTINGS): the flags of ``mcemu up``
(and the few ``mcemu demo`` shares), the argv that ``mcemu up`` passes to the daemon and the
launcher, their parsers, the node agents' keywords and the journal's configuration all come
from it, so a setting added there reaches every one of them. No process is started."""
from __future__ import annotations

import argparse

import pytest

from emulator.cli import build_parser, main
from emulator.cli import lifecycle
from emulator.cli.monitor import DEMO_DEFAULTS
from emulator.live import config as configmod
from emulator.live.config import DAEMON, NODE, POLICY, TUNABLE, Setting
from emulator.live.daemon import _arguments as daemon_arguments
from nodes.launcher import _arguments as launcher_arguments
from scheduler import allocators
from scheduler.stack import DEFAULT_DISCIPLINE, DEFAULT_TOPOLOGY

LAUNCH = ["--connect", "ipc:///nowhere", "--nodes", "4"]


def _up(*argv) -> dict:
    return configmod.values(build_parser().parse_args(["up", *argv]), "up")


def _node_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    configmod.add_arguments(p, NODE)
    return p


def test_every_up_setting_is_a_flag_of_mcemu_up_and_unset_until_given():
    asked = _up()
    assert set(asked) == {s.name for s in configmod.SETTINGS if "up" in s.commands}
    assert all(v in (None, False, []) for v in asked.values())  # the journal's value stands


def test_the_journal_keeps_the_policy_and_tunable_settings():
    cfg = configmod.resolve(None, configmod.given(**_up()))
    assert set(cfg) == set(configmod.POLICY_KEYS) | set(configmod.TUNABLE_KEYS)
    assert set(configmod.TUNABLE_KEYS) == {"heartbeat", "liveness", "hang", "max_requeue", "client_max_jobs",
                                           "client_rate"}
    assert {"listen", "rt_priority", "max_restarts"}.isdisjoint(cfg)  # how this run runs, not the journal's


def test_defaults_are_the_policy_stacks():
    by = configmod.SCHEMA.by_name
    assert (by["topology"].default, by["scheduler"].shown) == (DEFAULT_TOPOLOGY, DEFAULT_DISCIPLINE["live"])
    resolved = configmod.resolve(None, configmod.given())
    assert resolved["scheduler"] == DEFAULT_DISCIPLINE["live"]
    assert resolved["allocator"] == allocators.default(DEFAULT_TOPOLOGY) == "buddy"
    assert configmod.resolve(None, configmod.given(topology="mesh:8x8"))["allocator"] == "first-fit"


def test_heartbeat_and_liveness_defaults_are_declared_once():
    """The node agents' parsers (``mcemu node``, ``python -m nodes.agent``, the launcher) default
    to the schema's values; the daemon's leave them to the journal."""
    want = {"heartbeat": configmod.DEFAULTS["heartbeat"], "liveness": configmod.DEFAULTS["liveness"]}
    node = configmod.node_keywords(build_parser().parse_args(["node", "--id", "1", "--connect", "ipc:///x"]))
    launcher = configmod.node_keywords(launcher_arguments(LAUNCH))
    assert {k: node[k] for k in want} == {k: launcher[k] for k in want} == want
    assert launcher_arguments(LAUNCH).max_restarts == configmod.default("max_restarts")
    a = daemon_arguments([])
    assert (a.heartbeat, a.liveness, a.grace) == (None, None, configmod.default("grace"))


def test_the_argv_up_passes_is_read_back_alike():
    asked = _up("--topology", "mesh:4x4", "--gang", "multilevel", "--mpl", "3", "--param", "alternate=on",
                "--param", "service_queue=inf", "--heartbeat", "0.5", "--liveness", "9", "--insecure",
                "--rt-priority", "--node-sched", "normal", "--no-restart", "--max-restarts", "2",
                "--network", "none", "--net-dilation", "50", "--listen", "tcp://127.0.0.1:7700")
    daemon = configmod.values(daemon_arguments(configmod.argv(DAEMON, asked)), DAEMON)
    assert daemon == {s.name: asked[s.name] if s.name in asked else s.default for s in configmod.SCHEMA.where(DAEMON)}
    launcher = launcher_arguments(LAUNCH + configmod.argv("launcher", asked))
    assert configmod.node_keywords(launcher) == {"heartbeat": 0.5, "liveness": 9, "rt_priority": 10,
                                                 "sched": "normal"}
    assert (launcher.no_restart, launcher.max_restarts) == (True, 2)
    assert configmod.given(**daemon) == configmod.given(**asked)


def test_demo_shares_the_cluster_settings_with_its_own_defaults(capsys):
    args = build_parser().parse_args(["demo", "--topology", "mesh:4x4", "--time-unit", "0.5"])
    assert configmod.values(args, "demo") == {"topology": "mesh:4x4", "allocator": None, "scheduler": None,
                                              "time_unit": 0.5}
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", "--help"])
    assert f"(default {DEMO_DEFAULTS['time_unit']:g})" in capsys.readouterr().out


def test_a_setting_added_to_the_schema_reaches_every_parser(monkeypatch, tmp_path):
    """Adding a setting touches one place: a tunable one for the daemon and the nodes and a
    policy one for the daemon, added to a copy of the schema, become flags of ``mcemu up``,
    travel on the daemon's and the launcher's argv, are read by their parsers, reach the node
    agents' keywords and the journal's configuration, and resolve by their kind."""
    probe = Setting("probe", TUNABLE, (DAEMON, NODE), "a probe (default {default})", type=int, default=7)
    fixed = Setting("fixed_thing", POLICY, (DAEMON,), "a policy probe", default="a")
    monkeypatch.setattr(configmod, "SCHEMA", configmod.SCHEMA.extended(probe, fixed))

    asked = _up("--probe", "9", "--fixed-thing", "b")
    assert (asked["probe"], asked["fixed_thing"]) == (9, "b")
    d_argv = configmod.argv(DAEMON, asked)
    assert d_argv == ["--probe", "9", "--fixed-thing", "b"]
    assert configmod.values(daemon_arguments(d_argv), DAEMON)["probe"] == 9
    cfg, _topo = lifecycle._check_config(tmp_path, asked)  # what mcemu up checks, and the journal's
    assert (cfg["probe"], cfg["fixed_thing"]) == (9, "b")
    assert configmod.resolve(None, configmod.given())["probe"] == 7
    assert configmod.resolve(cfg, configmod.given(probe=3))["probe"] == 3  # tunable
    with pytest.raises(ValueError, match="fixed_thing='b'"):  # policy: the journal's stands
        configmod.resolve(cfg, configmod.given(fixed_thing="c"))
    launcher = launcher_arguments(LAUNCH + configmod.argv("launcher", {**asked, **cfg}))
    assert configmod.node_keywords(launcher)["probe"] == 9
    assert configmod.node_keywords(_node_parser().parse_args([]))["probe"] == 7
    configmod.known({"probe": 1})
    monkeypatch.undo()
    with pytest.raises(TypeError, match="unknown cluster setting: probe"):
        configmod.known({"probe": 1})


def test_a_process_setting_is_checked_before_anything_starts(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MCEMU_HOME", str(tmp_path / "home"))
    assert main(["up", "--max-restarts", "-1"]) == 2
    assert "--max-restarts must be within 0-1000" in capsys.readouterr().err
    assert not (tmp_path / "home" / "daemon.pid").exists()


def test_start_cluster_refuses_an_unknown_setting(tmp_path):
    with pytest.raises(TypeError, match="unknown cluster setting: restart"):
        lifecycle.start_cluster(tmp_path, restart=False)
    assert not (tmp_path / "daemon.pid").exists()

