"""The monitor: the model built from daemon events, the pure render functions on fixed
snapshots (cube and mesh, small and large, 80 and 120 columns), ``mcemu monitor --once``
against a live cluster and ``mcemu demo --no-monitor`` leaving no process behind."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import msgpack
import psutil
import pytest
from rich.console import Console

from emulator.cli.cluster import cluster_processes
from emulator.live import protocol as P
from emulator.live.daemon import _jsonable
from emulator.monitor import view as V
from emulator.monitor.feed import decode_event
from emulator.monitor.grid import grid_layout
from emulator.monitor.model import MonitorState
from scheduler.allocators.gray_code import gray
from scheduler import allocators, disciplines
from scheduler.disciplines.base import DisciplineError
from scheduler.jobs import Job
from scheduler.stack import StackConfig, build
from scheduler.topology import Request, parse_topology

from conftest import ALLOCATOR, SCHEDULER, wait_for


# ---------------------------------------------------------------------- fixed snapshots


def make_state(topology, jobs: dict, down=(), queued=(), discipline=None, gang=None, t=10.0, runtime=20.0):
    """A MonitorState fed as the daemon would feed it: job events, job records, a snapshot."""
    s = MonitorState(topology, {"allocator": "buddy", "scheduler": "lazy", "time_unit": 0.1})
    rows = []
    for jid, nodes in jobs.items():
        s.apply_event("job", {"job": jid, "state": "running", "t": 1.0 + jid * 0.01,
                              "info": {"nodes": list(nodes), "attempt": 1, "name": f"j{jid}"}})
        rows.append({"id": jid, "name": f"j{jid}", "state": "running", "attempt": 1, "submit": 0.5,
                     "start": 1.0 + jid * 0.01, "end": None, "nodes": list(nodes), "runtime": runtime,
                     "exec_time": runtime, "request_text": f"{len(nodes)} nodes", "allocation": f"alloc{jid}"})
    for jid in queued:
        s.apply_event("job", {"job": jid, "state": "queued", "t": 2.0, "info": {"nodes": [], "attempt": 0}})
    s.apply_jobs(rows)
    states = ["down" if n in set(down) else "idle" for n in range(s.size)]
    for nodes in jobs.values():
        for n in nodes:
            if states[n] != "down":
                states[n] = "busy"
    data = {"nodes": states, "running": {jid: list(n) for jid, n in jobs.items()}, "queued": list(queued),
            "discipline": discipline or {"discipline": "fcfs", "queues": [{"name": "queue", "jobs": list(queued)}]},
            "topology": topology, "config": {}}
    if gang is not None:
        data["gang"] = gang
    s.apply_event("snapshot", {"t": t, "data": data})
    return s


def text_of(renderable, width, height=None) -> str:
    c = Console(width=width, height=height or 200, record=True, color_system=None, file=open("/dev/null", "w"))
    c.print(renderable)
    return c.export_text()


def screen(view, width, height) -> list[str]:
    lines = text_of(V.render(view, width, height), width, height).splitlines()
    assert len(lines) <= height
    assert all(len(line) <= width for line in lines), max(len(x) for x in lines)
    return lines


def once(view, width) -> list[str]:
    layout, h = V.render_once(view, width)
    lines = text_of(layout, width, h).splitlines()
    assert all(len(line) <= width for line in lines)
    return lines


def machine_rows(lines, labels):
    """The grid rows of the machine panel: the text after each row label, in screen order."""
    out = []
    width = max(len(x) for x in labels)  # row labels are right-aligned to this width
    for line in lines:
        m = re.match(r"^│( *)([01]+|\d+) (.*?)│", line)
        if m and m.group(2) in labels and len(m.group(1)) + len(m.group(2)) == width:
            out.append((m.group(2), m.group(3)))
    return out


# ---------------------------------------------------------------------- the layout


@pytest.mark.parametrize("n", range(0, 11))
def test_cube_layout_is_a_gray_code_grid_of_neighbours(n):
    g = grid_layout(f"hypercube:{n}")
    W, H = g["width"], g["height"]
    assert (W, H) == (1 << ((n + 1) // 2), 1 << (n // 2))
    grid = g["grid"]
    assert sorted(x for row in grid for x in row) == list(range(1 << n))
    for r in range(H):
        for c in range(W):
            for r2, c2 in (((r + 1) % H, c), (r, (c + 1) % W)):
                if (r2, c2) != (r, c):
                    assert bin(grid[r][c] ^ grid[r2][c2]).count("1") == 1


def test_mesh_layout_is_row_major():
    g = grid_layout("mesh:5x3")
    assert g["grid"] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14]]


def test_small_cube_120_columns_shows_gray_labels_jobs_and_marks():
    gang = {"policy": "round-robin", "mpl": 2, "alternate": False,
            "rows": [{"row": 0, "jobs": [7]}, {"row": 1, "jobs": [9]}],
            "office": {"order": [7, 9], "pointer": 7},
            "slot": {"number": 3, "start": 9.0, "until": 11.0, "primary": 7, "running": [7]},
            "jobs": [{"id": 7, "state": "running"}, {"id": 9, "state": "suspended"}], "waiting": [], "local": []}
    s = make_state("hypercube:4", {7: [0, 1, 2, 3], 9: [12, 13, 14, 15]}, down=[5], queued=[11, 12], gang=gang)
    v = s.view(12.0)
    lines = once(v, 120)
    text = "\n".join(lines)
    assert re.search(r"│ +00 +01 +11 +10 *│", text)  # column labels in Gray-code order
    rows = machine_rows(lines, {"00", "01", "11", "10"})
    assert [r for r, _ in rows] == ["00", "01", "11", "10"]
    # nodes 0,1,3,2 (the 2-cube 00**) fill row 00; 12..15 (11**) row 11 and suspended (z)
    assert rows[0][1].split() == ["7"]
    assert rows[2][1].split() == ["z9"]
    assert "X" in rows[1][1]  # node 5 = 0101: row 01, column 01
    assert rows[1][1].split()[1] == "X"
    assert "Gray-code order" in text
    assert "gang slot" in text and "P▶7" in text and "row 1: 9z" in text
    assert "2 waiting" not in text and "waiting 2" in text
    assert "running (2)" in text and "alloc7" in text


def test_large_cube_fits_120x40_and_80x24():
    n = 10
    jobs = {1: range(0, 32), 2: range(32, 64), 3: range(512, 768), 4: [100]}
    s = make_state(f"hypercube:{n}", {k: list(v) for k, v in jobs.items()}, down=[1023], queued=[5, 6, 7])
    v = s.view(12.0)
    lines = screen(v, 120, 40)
    labels = {format(gray(r), "05b") for r in range(32)}
    rows = machine_rows(lines, labels)
    assert [r for r, _ in rows] == [format(gray(r), "05b") for r in range(32)]  # full grid, Gray order
    assert rows[0][1].split()[0] == "1"  # job 1 = 5-cube 00000*****: the whole first row
    assert len(rows[0][1].split()) == 1
    assert any("X" in body for _, body in rows)
    assert "3 waiting" not in "\n".join(lines)
    # 80x24: one character per two nodes
    small = screen(v, 80, 24)
    half = [line for line in small if "▀" * 20 in line]
    assert len(half) == 16
    assert any("queues" in line for line in small) and any("metrics" in line for line in small)


@pytest.mark.parametrize("size,width,height", [("8x8", 80, 24), ("8x8", 120, 40), ("32x32", 120, 40), ("32x32", 80, 24)])
def test_mesh_renders_in_both_terminal_sizes(size, width, height):
    W, H = map(int, size.split("x"))
    jobs = {21: [y * W + x for y in range(2) for x in range(4)], 22: [W * (H - 1) + W - 1]}
    s = make_state(f"mesh:{size}", jobs, down=[W + 5], queued=[30])
    lines = screen(s.view(12.0), width, height)
    text = "\n".join(lines)
    assert "machine:" in text and "queues · fcfs" in text and "metrics" in text
    if "▀" not in text:  # one text row per mesh row
        rows = machine_rows(lines, {str(y) for y in range(H)})
        assert [int(r) for r, _ in rows] == list(range(H))
        assert rows[0][1].split()[0] == "21" and rows[1][1].split()[0] == "21"
        assert "X" in rows[1][1]
        assert rows[H - 1][1].rstrip().endswith("2") or rows[H - 1][1].rstrip().endswith("22")


def _discipline_snapshot(name, topology):
    topo = parse_topology(topology)
    alloc = allocators.create("buddy" if topo.kind == "hypercube" else "first-fit", topo)
    try:
        d = disciplines.create(name, topo, alloc)
    except DisciplineError as e:  # e.g. static partitions are defined on hypercubes only
        pytest.skip(str(e))
    for i, k in enumerate([3, 3, 2, 3, 1, 0, 3, 2]):
        req = Request.cube(k) if topo.kind == "hypercube" else Request.submesh(1 << k, 1 << k)
        d.arrive(Job(i + 1, 0.1 * i, req, 5.0), 0.1 * i)
    return _jsonable(d.snapshot())


@pytest.mark.parametrize("name", sorted(disciplines.names()))
@pytest.mark.parametrize("topology", ["hypercube:4", "mesh:8x8"])
def test_queues_as_each_discipline_sees_them(name, topology):
    snap = _discipline_snapshot(name, topology)
    s = make_state(topology, {}, queued=[], discipline=snap)
    lines = once(s.view(1.0), 120)
    text = "\n".join(lines)
    assert f"queues · {name}" in text
    for q in snap["queues"]:
        assert re.search(rf"(▶| ) {re.escape(q['name'])}\b", text), q["name"]
        for jid in q["jobs"][:3]:
            assert re.search(rf"\b{jid}\b", text)
    if snap.get("blocked"):
        assert "⚠ " + snap["blocked"][:40] in text
    if name == "lazy":
        assert "stop_alloc=" in text and "N_k=" in text
    if name == "helm":
        assert re.search(r"\bHQ\b", text) and re.search(r"\bEQ\b", text) and "LQ0" in text
    if name in ("scan-up", "scan-down", "mq-scan", "bwq"):
        assert "▶" in text  # the current queue is marked
    if name == "fcfs":
        assert "does not fit" in text


def test_queue_lines_drop_empty_queues_when_short_of_room():
    d = {"discipline": "lazy", "queues": [{"name": f"Q_{k}", "jobs": [k + 1] if k in (2, 7) else []}
                                          for k in range(11)]}
    lines = [t.plain for t in V.queue_lines(d, 60, 4)]
    assert len(lines) <= 4
    assert any("Q_2" in x for x in lines) and any("Q_7" in x for x in lines)
    assert any(x.strip().startswith("empty:") for x in lines)


# ---------------------------------------------------------------------- the model


def test_model_metrics_and_history_from_events():
    s = MonitorState("hypercube:2", {"time_unit": 1.0}, history_seconds=10, buckets=10)
    s.apply_jobs([{"id": 1, "name": "a", "state": "queued", "attempt": 0, "submit": 0.0, "start": None,
                   "end": None, "nodes": None, "runtime": 4.0, "exec_time": 4.0, "request_text": "1-cube",
                   "allocation": None}])
    s.apply_event("job", {"job": 1, "state": "running", "t": 2.0, "info": {"nodes": [0, 1], "attempt": 1}})
    s.apply_event("job", {"job": 1, "state": "completed", "t": 6.0, "info": {"nodes": [0, 1], "attempt": 1}})
    m = s.metrics(10.0)
    assert m["completed"] == 1 and m["waiting"] == 0 and m["running"] == 0
    assert m["mean_queueing_delay"] == pytest.approx(2.0)
    assert m["utilization"] == pytest.approx(2 * 4 / (4 * 10))
    assert m["throughput"] == pytest.approx(0.1)
    h = s.history(10.0)
    assert h == pytest.approx([0, 0, 0.5, 0.5, 0.5, 0.5, 0, 0, 0, 0])
    # a requeue puts the job back in the queue with no nodes
    s.apply_event("job", {"job": 2, "state": "running", "t": 7.0, "info": {"nodes": [2], "attempt": 1}})
    s.apply_event("job", {"job": 2, "state": "requeued", "t": 8.0, "info": {"nodes": [], "attempt": 1}})
    assert s.jobs[2].state == "queued" and s.view(8.0)["machine"]["nodes"][2] == ["idle", None]


def test_model_heals_from_snapshots_and_asks_for_lost_records():
    s = make_state("hypercube:3", {1: [0, 1]}, queued=[2])
    s.apply_event("snapshot", {"t": 11.0, "data": {"nodes": ["idle"] * 8, "running": {}, "queued": [2],
                                                     "discipline": {}}})
    assert 1 in s.missing()  # we think 1 runs; the daemon no longer lists it
    s.apply_jobs([{"id": 1, "state": "completed", "attempt": 1, "start": 1.0, "end": 10.5, "nodes": [0, 1],
                   "submit": 0.5, "runtime": 9.5, "exec_time": 9.5, "request_text": "1-cube", "allocation": "00*"}])
    assert s.jobs[1].state == "completed" and 1 not in s.missing()
    v = s.view(11.0)
    assert v["machine"]["nodes"][0] == ["idle", None] and v["metrics"]["completed"] == 1


def test_snapshot_with_integer_keys_is_decoded():
    frame = msgpack.packb({"v": P.VERSION, "type": "snapshot", "t": 3.0,
                           "data": {"running": {5: [0, 1]}, "nodes": ["busy", "busy"], "queued": []}})
    topic, m = decode_event([b"snapshot", frame])
    assert topic == "snapshot" and m["data"]["running"] == {5: [0, 1]}
    assert decode_event([b"snapshot", b"\xc1garbage"]) is None
    assert decode_event([b"job", msgpack.packb({"v": 1, "type": "job"})]) is None


# ---------------------------------------------------------------------- live


@pytest.mark.live
def test_monitor_once_against_a_running_cluster(cluster):
    cluster.up("--topology", "hypercube:4", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--time-unit", "0.05")
    a = cluster.client.submit({"cube": 4}, runtime=400)
    b = cluster.client.submit({"cube": 2}, runtime=400)
    cluster.record()
    wait_for(lambda: any(j["id"] == a and j["state"] == "running" for j in cluster.client.queue()["jobs"]), 10,
             "job a running")
    out = cluster.mcemu("monitor", "--once", "--width", "120").stdout
    assert "hypercube:4" in out and f"queues · {SCHEDULER}" in out
    assert "machine: 16 busy 0 idle 0 down" in out
    assert f"running (1)" in out and "does not fit" in out  # b waits behind the whole-machine job
    assert re.search(rf"\b{b}\b", out)
    doc = cluster.mcemu_json("monitor")
    assert doc["metrics"]["waiting"] == 1 and doc["metrics"]["running"] == 1
    assert {c[1] for c in doc["machine"]["nodes"]} == {a}
    narrow = cluster.mcemu("monitor", "--once", "--width", "80").stdout
    assert all(len(line) <= 80 for line in narrow.splitlines())


def _demo(*args, timeout=90):
    return subprocess.run([sys.executable, "-m", "emulator", "demo", *args], capture_output=True, text=True,
                          timeout=timeout, env=_demo_env)


@pytest.fixture
def demo_home(tmp_path, monkeypatch):
    global _demo_env
    _demo_env = dict(os.environ, MCEMU_HOME=str(tmp_path))
    yield tmp_path
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("demo-")], "the demo left its home behind"


@pytest.mark.live
def test_demo_headless_summarizes_and_leaves_no_process(demo_home):
    r = _demo("--no-monitor", "--json", "--seconds", "10", timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    m = doc["metrics"]
    assert doc["submitted"] > 10 and m["completed"] > 0 and 0 < m["utilization"] <= 1
    assert m["mean_queueing_delay"] is not None and 9 <= doc["wall_seconds"] < 20
    assert len(doc["pids"]) >= 18  # daemon, launcher, 16 nodes
    assert not doc["killed_after_shutdown"]
    alive = []
    for pid, ct in doc["processes"]:
        try:
            p = psutil.Process(pid)
            if abs(p.create_time() - ct) < 0.05 and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.Error:
            pass
    assert not alive, f"the demo left processes running: {alive}"


@pytest.mark.live
def test_demo_stopped_by_sigterm_stops_its_cluster(demo_home):
    """``timeout mcemu demo`` or a closed terminal: the demo's own cleanup still runs
    (emulator.cli.exit_on_termination), where the default action left every node running."""
    demo = subprocess.Popen([sys.executable, "-m", "emulator", "demo", "--no-monitor", "--seconds", "120"],
                            env=_demo_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    procs = []

    def cluster():
        for h in demo_home.glob("demo-*"):
            ps = cluster_processes(h)
            if ps["daemon"] is not None and ps["launcher"] is not None and len(ps["launcher"].children()) == 16:
                return [ps["daemon"], ps["launcher"], *ps["tree"]]
        return None
    try:
        procs = wait_for(cluster, 60, "the demo's cluster to be up")
        demo.send_signal(signal.SIGTERM)
        status = demo.wait(timeout=30)
        alive = psutil.wait_procs(procs, timeout=5)[1]
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        for p in procs:  # by pid: a failure leaves nothing running either
            try:
                p.kill()
            except psutil.Error:
                pass
    assert status == 128 + signal.SIGTERM
    assert not alive, f"the demo left its cluster running: {[p.pid for p in alive]}"


@pytest.mark.live
def test_demo_mesh_helm_prints_a_summary_table(demo_home):
    r = _demo("--topology", "mesh:8x8", "--allocator", "first-fit", "--scheduler", "helm",
              "--no-monitor", "--seconds", "4", timeout=90)
    assert r.returncode == 0, r.stderr
    assert "mcemu demo: summary" in r.stdout and "mesh:8x8 · first-fit · helm" in r.stdout
    assert re.search(r"utilization\s+\d+(\.\d)?%", r.stdout)
    assert "nothing left running" in r.stderr


@pytest.mark.live
def test_demo_network_runs_pattern_and_program_jobs_and_leaves_no_process(demo_home):
    r = _demo("--network", "--no-monitor", "--json", "--jobs", "4", "--seconds", "60", timeout=150)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["config"]["topology"] == "mesh:8x8" and doc["config"]["network"] == "wormhole"
    assert doc["config"]["net_time"] == "dilated"
    net = doc["network"]
    assert net["patterns"]["completed"] >= 1 and net["programs"]["completed"] >= 1, net
    assert net["patterns"]["failed"] == net["programs"]["failed"] == 0, net
    assert net["messages"] > 0
    assert len(doc["pids"]) >= 67  # daemon, interconnect, launcher, 64 nodes
    assert not doc["killed_after_shutdown"]
    alive = [pid for pid, ct in doc["processes"] if _alive(pid, ct)]
    assert not alive, f"the demo left processes running: {alive}"


def _alive(pid: int, create_time: float) -> bool:
    try:
        p = psutil.Process(pid)
        return abs(p.create_time() - create_time) < 0.05 and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_demo_network_stream_alternates_patterns_and_programs_that_fit():
    from emulator.cli.demo_net import example_args, network_jobs
    from scheduler.topology import Request

    jobs = network_jobs("mesh:8x8", 0.3, 60.0, 1.0, 30, seed=3)
    assert len(jobs) == 30 and jobs[0]["at"] == 0.0
    assert all(a["at"] <= b["at"] for a, b in zip(jobs, jobs[1:]))
    for i, j in enumerate(jobs):
        n = Request.from_dict(j["request"]).processors_needed
        assert 1 <= n <= 16
        # a pattern needs two nodes: a single node runs a program instead
        assert j["kind"] == ("pattern" if i % 2 == 0 and n > 1 else "program")
    assert {j["program"] for j in jobs if j["kind"] == "program"} == {"jacobi", "cpi", "transpose", "ring",
                                                                      "mandelbrot"}
    for n in (1, 4, 9, 16):  # jacobi's N divides by its grid, transpose's by the ranks
        assert int(example_args("jacobi", n).split()[0]) % n == 0 and int(example_args("transpose", n)) % n == 0
    with pytest.raises(Exception, match="needs a mesh"):
        network_jobs("hypercube:4", 0.3, 10.0, 1.0, 4, seed=1)


def test_blocked_reason_naming_a_started_job_is_dropped():
    # the discipline snapshot is up to a second old; once job events show its blocked head
    # running, the view must not still say that job does not fit
    s = make_state("hypercube:3", {}, queued=[12, 13])
    s.apply_event("snapshot", {"t": 1.0, "data": {"nodes": ["idle"] * 8, "running": {}, "queued": [12, 13],
                                                    "discipline": {"discipline": "fcfs",
                                                                   "queues": [{"name": "queue", "jobs": [12, 13]}],
                                                                   "blocked": "head job 12 (3-cube) does not fit"}}})
    assert s.view(1.0)["discipline"]["blocked"]
    s.apply_event("job", {"job": 12, "state": "running", "t": 2.0, "info": {"nodes": list(range(8)), "attempt": 1}})
    d = s.view(2.0)["discipline"]
    assert not d.get("blocked")
    assert d["queues"][0]["jobs"] == [13]


def test_held_jobs_show_with_their_reason_in_the_queues_region():
    # the minimal stall case (tests/test_held.py): the 2-cube held, the others running
    stack = build(StackConfig("hypercube:3", "buddy", "lazy", driver="live"))
    stack.mark_down(1, 0.0)
    stack.mark_down(5, 0.0)
    stack.policy.arrive(Job(7, 0.0, Request.cube(2), 10.0), 0.0)
    d = _jsonable(stack.policy.snapshot())
    panel, _ = V.queues_panel(d, 100, 20)
    text = text_of(panel, 100)
    assert "held 7 2-cube: ReqNodeNotAvail: no 2-cube without a down node (down: 1, 5)" in text
    # once job events show it running, the up-to-a-second-old snapshot no longer holds it
    s = make_state("hypercube:3", {}, queued=[7])
    s.apply_event("snapshot", {"t": 1.0, "data": {"nodes": ["idle"] * 8, "running": {}, "queued": [7],
                                                    "discipline": d}})
    assert [h["id"] for h in s.view(1.0)["discipline"]["held"]] == [7]
    s.apply_event("job", {"job": 7, "state": "running", "t": 2.0, "info": {"nodes": [0, 1, 2, 3], "attempt": 1}})
    assert s.view(2.0)["discipline"]["held"] == []
