"""Options a user can get wrong: one line on stderr, exit status 2, and nothing started
(issue 19's list: endpoints, --max-requeue, --local-nodes, --listen ports, --fps, demo --load)."""
from __future__ import annotations

import pytest

from emulator.cli import main
from emulator.live import home as homemod


@pytest.mark.parametrize("argv,needle", [
    (["nodes", "--connect", "garbage"], "--connect must be tcp://HOST:PORT or ipc://PATH"),
    (["queue", "--connect", "tcp://host"], "--connect must be"),
    (["node", "--id", "1", "--connect", "garbage"], "--connect must be"),
    (["monitor", "--fps", "0"], "--fps must be"),
    (["monitor", "--once", "--width", "3"], "--width must be at least 40"),
    (["up", "--listen", "garbage"], "--listen must be tcp://HOST:PORT, :PORT or HOST:PORT"),
    (["up", "--listen", ":99999"], "(port 1-65535), got ':99999'"),
    (["up", "--listen", ":0"], "--listen must be"),
    (["up", "--listen", "ipc:///tmp/x"], "--listen takes a tcp address"),
    (["up", "--max-requeue", "-1"], "--max-requeue must be within 0-1000"),
    (["up", "--local-nodes", "-1"], "--local-nodes must be within 0-16"),
    (["up", "--local-nodes", "17"], "--local-nodes must be within 0-16"),
    (["up", "--heartbeat", "0"], "--heartbeat must be within"),
    (["up", "--liveness", "0"], "--liveness within 1-1000"),
    (["up", "--gang", "multilevel", "--scheduler", "fcfs"], "does not apply with --gang"),
    (["up", "--allocator", "nosuch"], "unknown allocator 'nosuch'; known:"),
    (["demo", "--load", "0", "--no-monitor"], "--load and --jobs must be > 0"),
])
def test_bad_option_is_one_line_and_starts_nothing(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MCEMU_HOME", str(tmp_path / "home"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err
    home = tmp_path / "home"
    assert not (home / "daemon.pid").exists() and not (home / "launcher.pid").exists()


@pytest.mark.parametrize("text,listen,want", [
    ("ipc:///tmp/mcemu/daemon.sock", False, "ipc:///tmp/mcemu/daemon.sock"),
    ("tcp://10.0.0.5:7700", False, "tcp://10.0.0.5:7700"),
    ("7700", True, "tcp://127.0.0.1:7700"),
    (":7700", True, "tcp://127.0.0.1:7700"),
    ("0.0.0.0:7700", True, "tcp://0.0.0.0:7700"),
    ("tcp://[::1]:7700", False, "tcp://[::1]:7700"),
])
def test_endpoints_that_are_fine(text, listen, want):
    assert homemod.endpoint(text, listen=listen) == want


@pytest.mark.parametrize("text", ["7700", "tcp://:7700", "tcp://h:65536", "tcp://h:x", "ipc://", "udp://h:1"])
def test_endpoints_that_are_not(text):
    with pytest.raises(ValueError, match="must be"):
        homemod.endpoint(text)


def test_the_event_endpoint_beside_a_control_endpoint():
    assert homemod.events_for("tcp://10.0.0.5:7700") == "tcp://10.0.0.5:7701"
    assert homemod.events_for("ipc:///run/m/daemon.sock") == "ipc:///run/m/events.sock"
