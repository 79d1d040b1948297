"""The CLI a user expects (issue 30): the default allocator follows the topology, ``down
--connect --key`` stops a tcp cluster (an admin's key only), a closed pipe ends a command
quietly, text another user gave is shown escaped, and a command builds only its own parser.
The live ones run the real ``mcemu`` as a subprocess against a cluster of tests/conftest.py."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from conftest import free_port, wait_for
from emulator.cli import COMMAND_MODULE, build_parser, main
from emulator.cli._client import printable, table
from emulator.live import config as configmod
from emulator.monitor.model import MonitorState
from scheduler import allocators

EVIL = "evil\x1b[2J\x1b]0;owned\x07[red]x[/]\nline2\u202e"


def _subcommands(parser) -> set:
    return {c for a in parser._actions if a.__class__.__name__ == "_SubParsersAction" for c in a.choices}


# ---------------------------------------------------------------------- no process


def test_each_command_is_built_by_the_module_the_table_names():
    """``main`` builds only the asked command's module: the table must name every command."""
    every = _subcommands(build_parser())
    assert set(COMMAND_MODULE) == every
    for command in every:
        assert command in _subcommands(build_parser(command)), command


def test_the_default_allocator_follows_the_topology_and_is_decided_once():
    assert allocators.DEFAULTS == {"hypercube": "buddy", "mesh": "first-fit"}
    for kind, name in allocators.DEFAULTS.items():
        assert kind in allocators.REGISTRY.get(name).kinds  # it serves the kind it is the default of
    resolved = {t: configmod.resolve(None, configmod.given(topology=t))["allocator"]
                for t in ("mesh:8x8", "mesh:5x3", "hypercube:3")}
    assert resolved == {"mesh:8x8": "first-fit", "mesh:5x3": "first-fit", "hypercube:3": "buddy"}
    assert configmod.resolve(None, configmod.given(topology="mesh:4x4", allocator="frame-sliding"))["allocator"] \
        == "frame-sliding"
    # a journal keeps the allocator it was started with
    journal = configmod.resolve(None, configmod.given(topology="mesh:4x4", allocator="naive"))
    assert configmod.resolve(journal, configmod.given(topology="mesh:4x4"))["allocator"] == "naive"


def test_policies_says_which_allocator_is_the_default_where(capsys):
    assert main(["policies", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["allocator_defaults"] == allocators.DEFAULTS
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    assert "(default on a mesh)" in out and "(default on a hypercube)" in out


def test_simulate_on_a_mesh_needs_no_allocator(capsys):
    assert main(["simulate", "--topology", "mesh:8x8", "--load", "0.3", "--jobs", "30", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["allocator"] == "first-fit"


def test_printable_escapes_what_drives_a_terminal_and_keeps_the_rest():
    assert printable("job-1 é 日本 [red]") == "job-1 é 日本 [red]"
    shown = printable(EVIL)
    assert shown.isprintable() and "\x1b" not in shown and "\n" not in shown
    assert shown == "evil\\x1b[2J\\x1b]0;owned\\x07[red]x[/]\\nline2\\u202e"
    assert printable(None) == ""


def test_a_table_shows_names_escaped_one_row_each_no_markup(capsys):
    table("now 1.00", ["JOBID", "NAME"], [(1, EVIL), (2, "plain")])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "[red]x[/]" in out
    assert out.splitlines() == ["now 1.00", "JOBID  NAME", "1      " + printable(EVIL), "2      plain"]


def test_the_monitor_keeps_names_escaped():
    s = MonitorState("hypercube:2", {"time_unit": 1.0})
    s.apply_jobs([{"id": 1, "name": EVIL, "state": "queued", "submit": 0.0}])
    s.apply_event("job", {"job": 2, "state": "queued", "t": 0.0, "info": {"name": "\x1b[2J"}})
    assert s.jobs[1].name == printable(EVIL) and s.jobs[2].name == "\\x1b[2J"


# ---------------------------------------------------------------------- live


def _closed_stdout(cluster, *args) -> subprocess.CompletedProcess:
    """``mcemu ARGS`` with standard output a pipe whose reader is already gone."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "emulator", *args], env=cluster.env, stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(w)


@pytest.mark.live
def test_a_mesh_cluster_starts_with_no_allocator_given(cluster):
    """The README's ``mcemu up --topology mesh:8x8 --network wormhole``, on a smaller mesh."""
    r = cluster.mcemu("up", "--detach", "--topology", "mesh:3x2", "--network", "wormhole", "--no-restart")
    cluster.record()
    assert "allocator first-fit" in r.stdout, r.stdout
    assert cluster.client.status()["config"]["allocator"] == allocators.default("mesh:3x2") == "first-fit"
    jid = cluster.client.submit({"shape": [2, 1]}, runtime=600)
    wait_for(lambda: {j["id"]: j for j in cluster.client.queue()["jobs"]}[jid]["allocation"], 30,
             "the job placed by first fit")


def _rename_in_journal(path, ids, name: str) -> None:
    """The jobs' name in a (closed) journal: their submit events, which a recovery replays, and
    their rows."""
    db = sqlite3.connect(path)
    try:
        with db:
            for jid in ids:
                (data,), = db.execute("SELECT data FROM events WHERE kind = 'submit' AND job = ?", (jid,))
                db.execute("UPDATE events SET data = ? WHERE kind = 'submit' AND job = ?",
                           (json.dumps({**json.loads(data), "name": name}), jid))
                db.execute("UPDATE jobs SET name = ? WHERE id = ?", (name, jid))
    finally:
        db.close()


@pytest.mark.live
def test_a_name_from_an_old_journal_is_shown_escaped(cluster):
    """The daemon now refuses such a name at submit; one a journal already holds (written
    before, recovered after) still reaches the tables, which escape it."""
    cluster.up("--topology", "hypercube:1", "--allocator", "buddy", "--scheduler", "fcfs")
    jid = cluster.client.submit({"cube": 1}, runtime=600, name="placeholder")
    blocked = cluster.client.submit({"cube": 1}, runtime=600, name="placeholder")
    os.kill(cluster.daemon_pid(), signal.SIGKILL)
    cluster.client.close()
    cluster._client = None
    wait_for(lambda: cluster.daemon_pid() is None, 10, "the daemon to be gone")
    _rename_in_journal(cluster.home / "journal.db", (jid, blocked), EVIL)  # as an older mcemu let it in
    assert "recovered the journal" in cluster.mcemu("up", "--detach").stdout
    cluster.record()
    out = cluster.mcemu("queue").stdout
    assert "\x1b" not in out and out.count(printable(EVIL)) == 2, out
    assert len(out.splitlines()) == 4, out  # the title, the header, a row each: the newline is escaped too
    w = cluster.mcemu("wait", jid, blocked, "--timeout", "0.5", check=False)
    assert w.returncode == 3 and "\x1b" not in w.stdout


@pytest.mark.live
def test_a_closed_pipe_ends_each_command_quietly(cluster):
    cluster.up("--topology", "hypercube:1", "--allocator", "buddy", "--scheduler", "fcfs")
    cluster.client.submit({"cube": 0}, runtime=600, name="one")
    for args in (["nodes"], ["nodes", "-l"], ["queue"], ["queue", "--json"], ["policies"], ["policies", "--json"],
                 ["--help"]):
        r = _closed_stdout(cluster, *args)
        assert (r.returncode, r.stderr) == (141, ""), args
    # through a shell, as a user types it: head may or may not have gone when mcemu writes
    for cmd in ("nodes", "queue", "policies"):
        r = subprocess.run(f"{sys.executable} -m emulator {cmd} | head -1; echo \"status ${{PIPESTATUS[0]}}\"",
                           shell=True, executable="/bin/bash", env=cluster.env, capture_output=True, text=True,
                           timeout=60)
        assert r.stderr == "" and r.stdout.splitlines()[-1] in ("status 0", "status 141"), (cmd, r)


@pytest.mark.live
def test_down_connect_key_stops_a_tcp_cluster_for_its_admin_only(cluster):
    cluster.mcemu("keys", "init", "--admin", "boss")
    cluster.mcemu("keys", "issue", "alice")
    issued = cluster.home / "keys" / "issued"
    port = free_port()
    cluster.up("--topology", "hypercube:1", "--allocator", "buddy", "--scheduler", "fcfs",
               "--listen", f"127.0.0.1:{port}")
    tcp = f"tcp://127.0.0.1:{port}"
    before = cluster.alive()
    assert before
    r = cluster.mcemu("down", "--connect", tcp, "--key", issued / "alice.toml", check=False)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("mcemu down: error: only the cluster's admin may shut it down") \
        and len(r.stderr.splitlines()) == 1
    assert cluster.client.ping() and all(p.is_running() for p in before)
    r = cluster.mcemu("down", "--connect", tcp, "--key", issued / "boss.toml", "--json")
    assert json.loads(r.stdout) == {"endpoint": tcp, "stopped": True}
    wait_for(lambda: not cluster.alive(), 30, "every process of the cluster to end")
