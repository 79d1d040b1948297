"""The host-speed gauge of virtual time (``--cpu-clock gauged``, nodes.mpi.cpuclock): a rank's
CPU time is rescaled by how fast the host runs a reference work now against the cluster's
calibration, and the interconnect's bound for a computing rank applies the very factor the rank's
clock does (it stays conservative)."""
from __future__ import annotations

import math

import pytest

from emulator.live import config as configmod
from emulator.live.vclock import ClockReader, ClockWriter
from nodes.mpi import cpuclock
from nodes.mpi.live import _gauge
from test_vtime import PER_S, World


def test_the_gauge_rescales_by_the_median_of_its_recent_probes_taken_once_a_period(monkeypatch):
    times, now = iter([2e-4, 4e-4, 1e-3, 4e-4, 4e-4]), [0.0]
    monkeypatch.setattr(cpuclock, "probe", lambda: next(times))
    monkeypatch.setattr(cpuclock.time, "monotonic", lambda: now[0])
    g = cpuclock.Gauge(ref=2e-4, period=0.02, window=3)
    assert g.update() == 1.0 and g.probes == 1  # as fast as at calibration
    assert g.update() == 1.0 and g.probes == 1  # within the period: no probe, the same factor
    now[0] = 0.03
    assert math.isclose(g.update(), 2e-4 / 3e-4)  # median of 2e-4 and 4e-4: the host runs slower
    now[0] = 0.06
    assert math.isclose(g.update(), 0.5)  # one slow probe (1e-3) moves the median to 4e-4, not to it
    now[0], g.next = 0.09, 0.0
    g.update()
    now[0], g.next = 0.12, 0.0
    assert math.isclose(g.update(), 0.5) and g.recent == [1e-3, 4e-4, 4e-4]  # the window's last 3


def test_a_calibration_is_a_positive_time_and_a_welcome_without_one_keeps_raw_cpu_time():
    ref = cpuclock.calibrate(5)
    assert 0 < ref < 0.1
    assert _gauge({"time": "virtual"}) is None
    g = _gauge({"time": "virtual", "cpu_gauge": ref})
    assert g is not None and g.ref == ref


def test_the_interconnect_s_bound_applies_the_factor_the_rank_published_with_its_mark(tmp_path):
    w = ClockWriter(tmp_path / "clocks" / "1.1.0")
    r = ClockReader(tmp_path / "clocks" / "1.1.0")
    world = World(1, pids=(7,))
    world.r[0].shared = r
    w.set(0.25, 3.5, False, 0, 0.5)  # resumed at CPU 3.5 with a factor of 0.5: a host twice slower
    assert r.read() == (False, 0.25, 3.5, 0, 0.5)
    world.cpu[7] = 3.5 + 0.002
    world.vt.refresh()
    # the rank's clock at that CPU time: 0.25 + 0.002 * scale 1 * 0.5; the bound is exactly it
    assert math.isclose(world.r[0].vt, (0.25 + 0.001) * PER_S)
    w.close()
    r.close()


def test_cpu_clock_is_a_setting_of_mcemu_up_and_a_bad_one_is_refused():
    assert configmod.default("cpu_clock") == "raw"
    with pytest.raises(ValueError, match="--cpu-clock must be one of raw, gauged"):
        configmod.resolve(None, configmod.given(cpu_clock="fast"))


class _Comm:
    hold = False

    def flush(self):
        pass


def test_a_rank_reads_its_cpu_time_while_its_record_says_it_changes_and_counts_nothing_after(tmp_path, monkeypatch):
    """The interval's ends are read inside the record's change (vclock begin/commit): a reader
    that used the record before read the host's CPU time before the end, so its bound is never
    past the clock; the record's writes after the read are not the program's CPU time."""
    from nodes.mpi import live

    w = ClockWriter(tmp_path / "clocks" / "1.1.0")
    r = ClockReader(tmp_path / "clocks" / "1.1.0")
    seen, cpu = [], [10.0]

    def thread_time():
        seen.append(r.read())  # what a reader gets at the moment the rank reads its CPU time
        cpu[0] += 0.001  # each read lands 1 ms of CPU later: the writes after it add nothing
        return cpu[0]
    monkeypatch.setattr(live, "_thread_time", thread_time)
    t = live.LiveTransport.__new__(live.LiveTransport)
    t.shared, t.comm, t.virtual, t.scale, t.factor, t.gauge = w, _Comm(), True, 2.0, 1.0, None
    t.clock, t.frames, t.events, t.paused, t.mark = 0.5, 3, [], True, 0.0
    t.resume()
    assert seen == [None] and r.read() == (False, 0.5, 10.001, 3, 1.0)  # changing, then running from the mark
    assert t.pause() is True
    assert seen == [None, None]
    assert math.isclose(t.clock, 0.5 + 2.0 * 0.001)  # exactly from mark to the pause's read, times the scale
    assert r.read() == (True, t.clock, 10.001, 3, 1.0)
    w.begin()
    assert r.read() is None  # a reader meanwhile keeps its bound
    w.close()
    r.close()
