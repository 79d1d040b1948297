"""Virtual time's decisions (emulator.live.vtime), worked by hand on a mesh:4x4 with one-hop
neighbours: a message of L flits over d hops is delivered d + L - 1 flit times after it is sent
(scheduler.network.wormhole), and nobody is answered while a rank that could still send an
earlier message is computing."""
from __future__ import annotations

import math

from emulator.live.vtime import COMPUTING, DONE, WAITING, VirtualTime
from scheduler.network.driver import Clock, NetworkDriver
from scheduler.network.wormhole import Wormhole

PER_S = 1e6 / 0.05  # flit times per second at T_t = 0.05 us


def s(flits: float) -> float:
    return flits / PER_S


class World:
    """Ranks 0, 1, 2 of one job on nodes 0, 1, 2 (row 0 of the mesh: 1 hop apart), and a fake
    CPU reader the test moves."""

    def __init__(self, n=3, pids=(None, None, None)):
        self.net = Wormhole("mesh:4x4")
        self.cpu = {}
        self.vt = VirtualTime(NetworkDriver(self.net, Clock.virtual(PER_S)), self.route, 1.0,
                              cpu=lambda pid: self.cpu.get(pid))
        self.job = object()
        self.envs = {}  # label -> its message's envelope (context, source, tag); None: none
        self.vt.start([(self.job, r) for r in range(n)], self.job, list(pids[:n]))
        self.r = [self.vt.ranks[(self.job, i)] for i in range(n)]

    def route(self, d):
        src, dst, label = d.tag
        self.r[src].sent -= 1
        return [(self.r[dst], (label, d.delivered), self.envs.get(label))]

    def send(self, src, dst, at_flits, flits, label="m"):
        r = self.r[src]
        self.vt.report(r, s(at_flits))
        r.sent += 1
        self.vt.driver.send(src, dst, s(r.vt), (src, dst, label), flits)

    def answers(self):
        got = self.vt.step()
        return {r.rank: (round(at, 6), [f for f in frames]) for r, at, frames in got}, self.vt.deadlocked()


def test_ping_pong_times_are_the_wormhole_latencies():
    w = World(2)
    w.vt.wait(w.r[1], 0.0, None, "recv(source=0)")
    w.send(0, 1, 0, 11)  # 20 bytes at 2 bytes a flit: a header and 10 flits
    w.vt.wait(w.r[0], 0.0, None, "recv(source=1)")
    got, dead = w.answers()
    assert got == {1: (11.0, [("m", 11.0)])} and not dead  # 1 hop + 11 - 1
    w.send(1, 0, 11 + 100, 11)  # it computed 100 flit times, replies
    w.vt.wait(w.r[1], s(111), None, "recv")
    got, dead = w.answers()
    assert got == {0: (122.0, [("m", 122.0)])}
    assert w.r[0].state == COMPUTING and w.r[0].vt == 122.0
    # both wait again, nothing in flight: a deadlock, naming both
    w.vt.wait(w.r[0], s(122), None, "recv(source=1)")
    got, dead = w.answers()
    assert not got and [(j, [r.rank for r in rs]) for j, rs in dead] == [(w.job, [0, 1])]


def test_no_answer_while_a_computing_rank_could_still_send_an_earlier_message():
    w = World(3)
    w.vt.wait(w.r[1], 0.0, None, "recv")
    w.send(2, 1, 0, 11)  # due at 11
    w.vt.wait(w.r[2], 0.0, None, "recv")
    got, _ = w.answers()
    assert got == {}  # rank 0 computes at 0: it could send to 1 before 11
    w.vt.report(w.r[0], s(9.5))  # a one-flit message sent at 9.5 would arrive at 10.5
    assert w.answers()[0] == {}
    w.vt.report(w.r[0], s(9.0))  # a clock never goes back
    assert w.r[0].vt == 9.5
    w.send(0, 1, 9.5, 5)  # rank 0 sends at 9.5: due at 9.5 + 1 + 4 = 14.5, after the first
    assert w.answers()[0] == {}  # still computing at 9.5: it may send again
    w.vt.report(w.r[0], s(10.0))  # sent at 10, a message could arrive at 11 too: a tie, not certain
    assert w.answers()[0] == {}
    w.vt.report(w.r[0], s(10.25))  # from 10.25 on, nothing it sends arrives by 11
    got, _ = w.answers()
    assert got == {1: (11.0, [("m", 11.0)])}  # only what is due by the answer
    assert w.r[1].events[0][2] == ("m", 14.5)


class Published:
    """A rank's published clock (emulator.live.vclock) as the test sets it."""

    def __init__(self):
        self.value = (False, 0.0, 1.0, 0, 1.0)  # paused, clock (s), mark (thread CPU s), frames sent, factor

    def read(self):
        return self.value


def test_a_computing_rank_s_bound_grows_with_the_clock_it_publishes_and_the_cpu_time_the_host_sees():
    w = World(2, pids=(101, None))
    w.r[0].shared = pub = Published()
    w.send(1, 0, 0, 11)  # rank 1 sends to the computing rank 0 and waits with a timeout
    w.vt.wait(w.r[1], 0.0, s(5000), "sleep")
    assert w.answers()[0] == {}  # rank 0 (computing at 0) could send to 1 before 5000
    w.cpu[101] = 1.0 + s(3000)  # 3000 flit times of CPU since it resumed at CPU time 1.0
    w.vt.refresh()
    assert math.isclose(w.r[0].vt, 3000.0)
    assert w.answers()[0] == {}
    pub.value = (True, s(4000), 1.0, 0, 1.0)  # inside an MPI call: the clock stands, whatever the CPU does
    w.cpu[101] = 1.0 + s(9000)
    w.vt.refresh()
    assert math.isclose(w.r[0].vt, 4000.0)
    pub.value = (False, s(4000), 1.0 + s(9000), 0, 1.0)  # back in the program at CPU time 1 + 9000 flits
    w.cpu[101] = 1.0 + s(10_500)
    w.vt.refresh()
    assert math.isclose(w.r[0].vt, 5500.0)
    got, _ = w.answers()
    assert got == {1: (5000.0, [])}  # its timeout came first, with nothing for it
    w.r[1].shared = None
    del w.cpu[101]  # the process is gone: done
    w.vt.refresh()
    assert w.r[0].state == DONE


def test_a_rank_that_publishes_no_clock_keeps_its_last_frame_s_bound():
    w = World(2, pids=(101, None))
    w.cpu[101] = 50.0
    w.vt.wait(w.r[1], 0.0, s(5000), "sleep")
    w.vt.refresh()
    assert w.r[0].vt == 0.0 and w.answers()[0] == {}


def test_a_poll_is_answered_at_the_rank_s_own_clock_with_what_is_due_by_then():
    w = World(2)
    w.send(0, 1, 0, 11)
    w.vt.wait(w.r[0], 0.0, None, "recv")
    w.vt.wait(w.r[1], s(5), s(5), "iprobe")  # a poll at 5: the message (due 11) is not there yet
    got, _ = w.answers()
    assert got == {1: (5.0, [])} and w.r[1].state == COMPUTING
    w.vt.wait(w.r[1], s(20), s(20), "iprobe")
    # answered at the message's time; the rank's clock stays its own, the later one
    assert w.answers()[0] == {1: (11.0, [("m", 11.0)])} and w.r[1].vt == 20.0
    assert w.r[0].state == WAITING


def test_deadlock_is_not_reported_while_a_message_is_on_its_way_or_a_rank_computes():
    w = World(2)
    w.vt.wait(w.r[0], 0.0, None, "recv")
    assert w.answers()[1] == []  # rank 1 computes
    w.send(1, 0, 3, 11)
    w.vt.wait(w.r[1], s(3), None, "recv")
    got, dead = w.answers()
    assert dead == [] and got == {0: (14.0, [("m", 14.0)])}


def test_a_published_clock_reads_back_and_a_new_one_raises_no_bound(tmp_path):
    from emulator.live.vclock import ClockReader, ClockWriter

    w = ClockWriter(tmp_path / "clocks" / "1.1.0")
    r = ClockReader(tmp_path / "clocks" / "1.1.0")
    assert r.read() == (True, 0.0, 0.0, 0, 1.0)  # before the rank's welcome: stopped at 0
    w.set(0.25, 3.5, False, 0)
    assert r.read() == (False, 0.25, 3.5, 0, 1.0)
    world = World(1, pids=(7,))
    world.r[0].shared = r
    world.cpu[7] = 3.5 + 0.001
    world.vt.refresh()
    assert math.isclose(world.r[0].vt, (0.25 + 0.001) * PER_S)
    w.set(0.5, 3.5, True, 1)  # a frame of its is still on its way (its clock is older): not used yet
    world.vt.refresh()
    assert math.isclose(world.r[0].vt, (0.25 + 0.001) * PER_S)
    w.close()
    r.close()
    assert not (tmp_path / "clocks" / "1.1.0").exists()


def test_a_rank_not_answered_in_a_pass_stays_answerable_when_the_heaps_are_compacted_in_it():
    """A pass answers rank 0 (its touch compacts the heaps of stale entries) and cannot answer
    rank 1 yet (its barrier may complete before its time): rank 1 is answered as soon as it can
    be. (Its entry, put back into the list the compaction had replaced, was lost: the rank was
    never answered and a 64-rank all-to-all of the bench hung.)"""
    w = World(4, pids=(None,) * 4)
    w.vt.report(w.r[3], s(100))  # computing far ahead: its stale entries stay below the top
    w.vt.enter(w.r[1], 0.0, w.job, lambda: w.r[:3], ("ok", "barrier"))
    w.vt.wait(w.r[1], 0.0, s(0.9), "recv")  # in a barrier of ranks 0-2, and a timeout at 0.9
    w.vt.wait(w.r[0], 0.0, s(0.5), "recv")
    w.vt._top()  # the stale entries on top go (as a pass begins)
    while len(w.vt.heap) < 8 * 4 + 64:  # stale entries up to the bound: the next touch compacts
        w.r[3].vt += 1.0  # a touch that leaves the bound as it was keeps the entry it has
        w.vt._touch(w.r[3])
    got, _ = w.answers()
    assert set(got) == {0}  # rank 1: the barrier could complete at 0.5, before its 0.9
    w.vt.report(w.r[0], s(2))
    w.vt.report(w.r[2], s(2))  # neither can enter before 2: rank 1's 0.9 comes first
    got, _ = w.answers()
    assert got == {1: (0.9, [])}


def _two_to_rank_2(match):
    """Rank 0 sends "a" (context 0, tag 5) to rank 2 at 0, rank 1 sends "b" (context 0, tag 5)
    at 50; rank 2 waits for ``match``, the others for nothing they will get."""
    w = World(3)
    w.envs = {"a": (0, 0, 5), "b": (0, 1, 5)}
    w.vt.wait(w.r[2], 0.0, None, "recv(source=rank 1, tag=5)", match)
    w.send(0, 2, 0, 11, "a")
    w.send(1, 2, 50, 11, "b")
    w.vt.wait(w.r[0], 0.0, None, "recv")
    w.vt.wait(w.r[1], s(50), None, "recv")
    return w


def test_a_message_its_wait_does_not_match_is_handed_over_without_waking_the_rank():
    """A blocking receive from rank 1 is not woken by rank 0's message (it would queue it and
    wait again at the same clock): one answer, at the matching message's time, with both in
    order, and the clock of the two answers a rank without ``match`` gets."""
    w = _two_to_rank_2(((0, 1, 5),))
    got, dead = w.answers()
    a, b = ("a", 12.0), ("b", w.vt.flits(s(50)) + 11)  # 2 hops + 11 - 1; 1 hop + 11 - 1 after 50
    assert got == {2: (round(b[1], 6), [a, b])} and not dead
    assert w.r[2].state == COMPUTING and w.r[2].vt == b[1] and not w.r[2].held
    old = _two_to_rank_2(None)  # today's round trip: answered at each, waits again at the first
    assert old.answers()[0] == {2: (12.0, [a])}
    old.vt.wait(old.r[2], s(12.0), None, "recv(source=rank 1, tag=5)")
    assert old.answers()[0] == {2: (round(b[1], 6), [b])} and old.r[2].vt == w.r[2].vt


def test_a_matching_envelope_or_a_wildcard_wakes_the_rank_at_once():
    for match in (((0, 0, 5),), ((0, None, 5),), ((0, 0, None),), ((3, 1, 1), (0, None, None))):
        w = _two_to_rank_2(match)
        assert w.answers()[0] == {2: (12.0, [("a", 12.0)])}, match
    w = _two_to_rank_2(((1, 0, 5),))  # another context (a collective's): neither is it
    b = w.vt.flits(s(50)) + 11
    assert w.answers()[0] == {} and w.r[2].held == [("a", 12.0), ("b", b)] and w.r[2].state == WAITING


def test_a_wait_for_several_receives_is_woken_by_the_last_of_their_messages_only():
    """``need`` 2 (a Waitall of a receive from rank 0 and one from rank 1): rank 0's message
    does not wake it; rank 1's does, with both, at the clock two answers give."""
    both = ((0, 0, 5), (0, 1, 5))
    w = _two_to_rank_2(None)
    w.vt.wait(w.r[2], 0.0, None, "recv(source=rank 0, tag=5) and recv(source=rank 1, tag=5)", both, 2)
    got, dead = w.answers()
    a, b = ("a", 12.0), ("b", w.vt.flits(s(50)) + 11)
    assert got == {2: (round(b[1], 6), [a, b])} and not dead and not w.r[2].held
    one = _two_to_rank_2(None)  # need 1 (a Waitany of the same): woken by the first
    one.vt.wait(one.r[2], 0.0, None, "recv(source=rank 0, tag=5) or recv(source=rank 1, tag=5)", both)
    assert one.answers()[0] == {2: (12.0, [a])}
    three = _two_to_rank_2(None)  # a third message that never comes: both held, no answer
    three.vt.wait(three.r[2], 0.0, None, "three", both + ((0, 0, 6),), 3)
    assert three.answers()[0] == {} and three.r[2].held == [a, b] and three.r[2].state == WAITING
    notice = _two_to_rank_2(None)  # a frame without an envelope still wakes it at once
    notice.envs = {"b": (0, 1, 5)}
    notice.vt.wait(notice.r[2], 0.0, None, "both", both, 2)
    assert notice.answers()[0] == {2: (12.0, [a])}


def test_a_waitall_and_a_scattered_all_to_all_wait_once_for_all_their_receives():
    """What a rank names (nodes.mpi): a wait for every pending receive, ``need`` their count,
    until one is left (then a plain receive's wait); a send request or a done one is not
    waited for."""
    from nodes.mpi.matching import MAX_MATCH, Matcher, awaiting_all

    m = Matcher(0, (0, 1, 2, 3), "COMM_WORLD")
    whats = [m.describe("recv", k, 7) for k in (1, 2, 3)]
    w = awaiting_all(whats)
    assert w.match == ((0, 1, 7), (0, 2, 7), (0, 3, 7)) and w.need == 3 and " and " in w
    assert awaiting_all(whats[:1]) is whats[0] and whats[0].need == 1
    assert not hasattr(awaiting_all([whats[0], "text"]), "match")
    assert not hasattr(awaiting_all([whats[0]] * (MAX_MATCH + 1)), "match")

    from nodes.mpi import collectives
    from nodes.mpi.envelope import ENVELOPE
    from nodes.mpi.intracomm import Intracomm
    from nodes.mpi.envelope import BUF
    from nodes.mpi.matching import Engine

    class Recording:
        """A transport that hands over one message a blocking wait (from ranks 3, 1, 2 in that
        order) and records what each wait named."""
        rank, size = 0, 4

        def __init__(self, waits_all):
            self.waits_all, self.waits = waits_all, []
            self.queue = [(src, ENVELOPE.pack(1, 9, 0) + b"x") for src in (3, 1, 2)]  # T_ALLTOALL = 9

        def send(self, dest, payload, nbytes):
            pass

        def wait(self, block, what):
            self.waits.append((getattr(what, "need", 1), getattr(what, "match", None)))
            return [self.queue.pop(0)] if block and self.queue else []

    for waits_all in (True, False):
        t = Recording(waits_all)
        comm = Intracomm()
        comm._setup(Engine(t), (0, 1, 2, 3), 0, "COMM_WORLD")
        out = collectives.alltoall(comm, BUF, [b"0", b"1", b"2", b"3"])
        assert [bytes(x) for x in out] == [b"0", b"x", b"x", b"x"]
        if waits_all:  # each wait names what is left; the last, one
            assert [n for n, _ in t.waits] == [3, 2, 1] and t.waits[0][1] == ((1, 3, 9), (1, 2, 9), (1, 1, 9))
        else:  # a transport whose waits end at any message (dilated time): one receive at a time
            assert t.waits == [(1, ((1, 3, 9),)), (1, ((1, 2, 9),)), (1, ((1, 2, 9),))]


def test_what_has_no_envelope_and_a_wait_with_a_timeout_wake_as_before():
    w = _two_to_rank_2(((0, 1, 5),))
    w.envs = {}  # a notice, a pattern task's message: no envelope
    assert w.answers()[0] == {2: (12.0, [("a", 12.0)])}
    w = World(3)
    w.envs = {"a": (0, 0, 5)}
    w.vt.wait(w.r[2], 0.0, s(1000), "iprobe", ((0, 1, 5),))  # a timeout: it returns at any answer
    w.send(0, 2, 0, 11, "a")
    w.vt.wait(w.r[0], 0.0, None, "recv")
    w.vt.wait(w.r[1], 0.0, None, "recv")
    assert w.answers()[0] == {2: (12.0, [("a", 12.0)])}


def test_a_rank_holding_messages_it_does_not_wait_for_is_deadlocked_with_the_others():
    w = World(2)
    w.envs = {"a": (0, 0, 5)}
    w.vt.wait(w.r[1], 0.0, None, "recv(source=rank 0, tag=6)", ((0, 0, 6),))
    w.send(0, 1, 0, 11, "a")
    w.vt.wait(w.r[0], 0.0, None, "recv(source=rank 1)", ((0, 1, None),))
    got, dead = w.answers()
    assert got == {} and w.r[1].held == [("a", 11.0)]
    assert dead == [(w.job, [w.r[0], w.r[1]])]


def test_a_receive_names_its_envelope_in_world_ranks_and_a_waitany_names_all_of_them():
    from nodes.mpi.constants import ANY_SOURCE, ANY_TAG
    from nodes.mpi.matching import MAX_MATCH, Matcher, awaiting_any

    m = Matcher(6, (3, 5, 7), "split")  # a communicator of world ranks 3, 5, 7
    one = m.describe("recv", 1, 4)
    assert one == "recv(source=rank 5, tag=4) on split" and one.match == ((6, 5, 4),)
    anyone = m.describe("probe", ANY_SOURCE, ANY_TAG)
    assert anyone.match == ((6, None, None),)
    both = awaiting_any([one, anyone])
    assert both == f"{one} or {anyone}" and both.match == ((6, 5, 4), (6, None, None))
    assert not hasattr(awaiting_any([one, "text"]), "match")  # a part that names none: today's wait
    assert not hasattr(awaiting_any([one] * (MAX_MATCH + 1)), "match")


def test_the_wait_frame_carries_its_envelopes_and_bad_ones_are_refused():
    import pytest

    from emulator.live import protocol as P

    ok = P.decode(P.encode_unchecked("net_wait", vt=1.0, what="recv", match=[[0, 2, None], [1, None, -5]]))
    assert ok["match"] == ((0, 2, None), (1, None, -5))
    for bad in ([], [[0, 1]], [[-1, 0, 0]], [["a", 0, 0]], [[0, 0, 0]] * 65, "x"):
        with pytest.raises(P.ProtocolError):
            P.decode(P.encode_unchecked("net_wait", vt=1.0, match=bad))
    assert P.decode(P.encode_unchecked("net_wait", vt=1.0, match=[[0, 2, None]], need=3))["need"] == 3
    for bad in (0, -1, 65, "2", 1.5):
        with pytest.raises(P.ProtocolError):
            P.decode(P.encode_unchecked("net_wait", vt=1.0, match=[[0, 2, None]], need=bad))
    # what a rank names at most is what the frame may carry: a longer one would be refused
    from emulator.live.schema import MAX_MATCH as WIRE
    from nodes.mpi.matching import MAX_MATCH
    assert MAX_MATCH <= WIRE
    assert len(P.decode(P.encode_unchecked("net_wait", vt=1.0, match=[[0, 0, 0]] * MAX_MATCH))["match"]) == MAX_MATCH


def test_the_cpu_reader_keeps_a_process_s_file_and_lets_it_go_when_it_ends():
    """emulator.live.vrank.CpuReader: a child's CPU seconds grow as it computes; once it has
    ended (and its pid may be anyone's) it reads None and its file is closed."""
    import subprocess
    import sys
    import time

    from emulator.live.vrank import CpuReader

    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.thread_time()\n"
                              "while time.thread_time() - t < 0.3: pass\ntime.sleep(30)"])
    cpu = CpuReader()
    try:
        first = cpu(child.pid)
        deadline = time.monotonic() + 20
        while (now := cpu(child.pid)) is not None and now < 0.25 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert first is not None and now is not None and 0.25 <= now < 10, (first, now)
        assert list(cpu.fds) == [child.pid]
    finally:
        child.kill()
        child.wait()
    assert cpu(child.pid) is None and cpu.fds == {}
    assert cpu(2 ** 22 + 7) is None  # no such process (above pid_max's default)


def test_a_barrier_that_an_ended_rank_never_entered_is_a_deadlock():
    """Ranks 0 and 1 wait in a barrier of ranks 0-2; rank 2 ended without entering it: they can
    never go on (before, ranks in a barrier were never reported, and the job hung). While rank 2
    is still computing, it is no deadlock."""
    w = World(3)
    for r in (0, 1):
        w.vt.enter(w.r[r], 0.0, w.job, lambda: w.r[:3], ("ok", "barrier"))
        w.vt.wait(w.r[r], 0.0, None, "barrier")
    got, dead = w.answers()
    assert not got and not dead
    w.vt.bye(w.r[2], s(5))
    got, dead = w.answers()
    assert not got and [(j, [r.rank for r in rs]) for j, rs in dead] == [(w.job, [0, 1])]
