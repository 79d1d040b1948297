"""The MPI layer's point-to-point calls (nodes.mpi), ranks as threads over an in-memory
transport (tests.fixtures.mpi_ranks): matching, ordering, statuses, requests, buffers and
the errors a bad call gets."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodes.mpi import MPI
from nodes.mpi.errors import MAX_MESSAGE, PACKET
from nodes.mpi.transport import SingletonTransport
from tests.fixtures.mpi_ranks import Hub, run_ranks


def test_object_send_recv_with_tags_and_status():
    def prog(comm):
        if comm.rank == 0:
            comm.send({"a": 1}, dest=1, tag=7)
            comm.send([1, 2], dest=1, tag=3)
            return None
        st = MPI.Status()
        second = comm.recv(source=0, tag=3, status=st)   # tag 3 overtakes tag 7: different tags
        first = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
        return second, st.Get_source(), st.Get_tag(), st.Get_count() > 0, first

    assert run_ranks(2, prog)[1] == ([1, 2], 0, 3, True, {"a": 1})


def test_buffer_forms_auto_type_and_get_count():
    def prog(comm):
        if comm.rank == 0:
            a = np.arange(10, dtype="d")
            comm.Send([a, MPI.DOUBLE], 1, 0)
            comm.Send([a, 4, MPI.DOUBLE], 1, 1)
            comm.Send(np.arange(3, dtype="i4"), 1, 2)          # type from the array
            comm.Send(bytearray(b"hello"), 1, 3)                # any buffer: MPI.BYTE
            return None
        st, out = MPI.Status(), []
        b = np.zeros(10)
        comm.Recv([b, MPI.DOUBLE], 0, 0, st)
        out.append((b.tolist(), st.Get_count(MPI.DOUBLE)))
        c = np.zeros(10)
        comm.Recv([c, MPI.DOUBLE], 0, 1, st)                # larger than the message: fine
        out.append((c[:5].tolist(), st.Get_count(MPI.DOUBLE), st.Get_count(MPI.BYTE)))
        i = np.zeros(3, dtype="i4")
        comm.Recv(i, 0, 2, st)
        out.append((i.tolist(), st.Get_count(MPI.INT)))
        raw = bytearray(8)
        comm.Recv([raw, MPI.BYTE], 0, 3, st)
        out.append((bytes(raw[:5]), st.Get_count()))
        return out

    assert run_ranks(2, prog)[1] == [
        (list(map(float, range(10))), 10), ([0.0, 1.0, 2.0, 3.0, 0.0], 4, 32), ([0, 1, 2], 3), (b"hello", 5)]


def test_non_contiguous_views_and_reinterpreted_types():
    def prog(comm):
        if comm.rank == 0:
            m = np.arange(12, dtype="d").reshape(3, 4)
            comm.Send([m[:, 1], MPI.DOUBLE], 1, 0)           # a column: strided
            comm.Send([np.array(7, dtype="i8"), MPI.INT], 1, 1)   # an int64 as two INTs
            return None
        m = np.zeros((3, 4))
        comm.Recv([m[:, 2], MPI.DOUBLE], 0, 0)
        n = np.zeros(1, dtype="i8")
        st = MPI.Status()
        comm.Recv([n, MPI.INT], 0, 1, st)
        return m[:, 2].tolist(), int(n[0]), st.Get_count(MPI.INT)

    assert run_ranks(2, prog)[1] == ([1.0, 5.0, 9.0], 7, 2)


def test_usual_buffers_take_the_short_path_with_the_general_forms_meaning():
    """[1-D array, its own datatype] and a bare array skip the general parsing (nodes.mpi.buffers);
    what they send and receive is what the general forms do: a byte-swapped array is sent as its
    bytes, a displacement is honoured, a read-only buffer is ERR_BUFFER."""
    swapped = np.arange(6, dtype=">f8")

    def prog(comm):
        if comm.rank == 0:
            a = np.arange(6, dtype="d")
            comm.Send([a, MPI.DOUBLE], 1, 0)
            comm.Send(a, 1, 1)
            comm.Send(swapped, 1, 2)
            comm.Send([np.arange(1, 5, dtype=np.uint8), MPI.BYTE], 1, 3)
            comm.Send([np.arange(4, dtype=np.uint8), MPI.BYTE], 1, 4)
            comm.send("after", 1, 5)
            return None
        d, e, raw, r = np.zeros(6), np.zeros(6), np.zeros(48, dtype=np.uint8), np.zeros(8, dtype=np.uint8)
        comm.Recv([d, MPI.DOUBLE], 0, 0)
        comm.Recv(e, 0, 1)
        comm.Recv([raw, MPI.BYTE], 0, 2)
        comm.Recv([r, (4, 2), MPI.BYTE], 0, 3)
        with pytest.raises(MPI.Exception) as err:
            comm.Recv(np.frombuffer(bytes(4), dtype=np.uint8), 0, 4)
        return (d.tolist(), e.tolist(), raw.tobytes() == swapped.tobytes(), r.tolist(),
                err.value.Get_error_class(), comm.recv(source=0, tag=5))

    assert run_ranks(2, prog)[1] == ([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], True,
                                     [0, 0, 1, 2, 3, 4, 0, 0], MPI.ERR_BUFFER, "after")


def test_truncation_is_err_truncate():
    def prog(comm):
        if comm.rank == 0:
            comm.Send(np.arange(8, dtype="d"), 1, 0)
            comm.send("after", 1, 1)
            return None
        with pytest.raises(MPI.Exception) as e:
            comm.Recv(np.zeros(4), 0, 0)
        return e.value.Get_error_class(), comm.recv(source=0, tag=1)

    assert run_ranks(2, prog)[1] == (MPI.ERR_TRUNCATE, "after")


def test_a_message_above_a_packet_goes_as_packets_and_arrives_whole():
    """A 1.5 MiB array and a large object from two senders, received with ANY_SOURCE: each
    travels as packets of PACKET bytes at most, sent back to back, and is matched, counted and
    received as one message; probe sees it only whole."""
    hub = Hub(3)
    n = 3 * PACKET // 8 + 5  # doubles: three full packets and a bit

    def prog(comm):
        if comm.rank == 1:
            comm.Send(np.arange(n, dtype="d"), 0, 5)
        elif comm.rank == 2:
            comm.send(list(range(PACKET // 2)), dest=0, tag=6)
        else:
            got, st = {}, MPI.Status()
            for _ in range(2):
                comm.Probe(MPI.ANY_SOURCE, MPI.ANY_TAG, st)
                if st.Get_tag() == 5:
                    assert st.Get_count(MPI.DOUBLE) == n
                    b = np.empty(n, dtype="d")
                    comm.Recv(b, source=1, tag=5)
                    got[5] = bool((b == np.arange(n)).all())
                else:
                    got[6] = comm.recv(source=2, tag=6) == list(range(PACKET // 2))
            return got

    assert run_ranks(3, prog, hub=hub)[0] == {5: True, 6: True}
    sizes = {src: [b for s, d, b in hub.sent if s == src] for src in (1, 2)}
    assert sizes[1][:3] == [PACKET] * 3 and sizes[1][3] == n * 8 - 3 * PACKET
    assert len(sizes[2]) > 1 and max(sizes[2]) == PACKET


@pytest.mark.parametrize("call, error", [
    (lambda c: c.send(1, dest=5), MPI.ERR_RANK),
    (lambda c: c.send(1, dest=-7), MPI.ERR_RANK),
    (lambda c: c.Send(np.zeros(2), 2, 0), MPI.ERR_RANK),
    (lambda c: c.send(1, dest=1, tag=-3), MPI.ERR_TAG),
    (lambda c: c.send(1, dest=1, tag=MPI.ANY_TAG), MPI.ERR_TAG),
    (lambda c: c.recv(source=9), MPI.ERR_RANK),
    (lambda c: c.irecv(source=1, tag=-5), MPI.ERR_TAG),
    (lambda c: c.send(b"x" * (MAX_MESSAGE + 1), dest=1), MPI.ERR_COUNT),
    (lambda c: c.Send(np.zeros(MAX_MESSAGE // 8 + 1), 1, 0), MPI.ERR_COUNT),
])
def test_bad_calls_raise_in_that_rank_and_send_nothing(call, error):
    hub = Hub(2)

    def prog(comm):
        if comm.rank == 0:
            with pytest.raises(MPI.Exception) as e:
                call(comm)
            comm.send("ok", 1, 0)          # the rank (and the job) carries on
            return e.value.Get_error_class()
        return comm.recv(source=0, tag=0)

    assert run_ranks(2, prog, hub) == [error, "ok"]
    assert len(hub.sent) == 1


def test_proc_null_completes_at_once():
    def prog(comm):
        comm.send("lost", MPI.PROC_NULL)
        comm.Send(np.zeros(3), MPI.PROC_NULL, 0)
        st = MPI.Status()
        got = comm.recv(source=MPI.PROC_NULL, status=st)
        buf = np.ones(2)
        comm.Recv(buf, MPI.PROC_NULL, 0)
        return got, st.source, st.tag, st.Get_count(), buf.tolist()

    assert run_ranks(1, prog) == [(None, MPI.PROC_NULL, MPI.ANY_TAG, 0, [1.0, 1.0])]


def test_one_transport_message_per_mpi_message_with_user_bytes():
    hub = Hub(2)

    def prog(comm):
        if comm.rank == 0:
            comm.Send(np.zeros(100, dtype="d"), 1, 0)
            comm.Send(np.zeros(0, dtype="d"), 1, 1)
        else:
            comm.Recv(np.zeros(100), 0, 0)
            comm.Recv(np.zeros(1), 0, 1)

    run_ranks(2, prog, hub)
    assert hub.sent == [(0, 1, 800), (0, 1, 0)]


def test_requests_wait_test_and_many():
    def prog(comm):
        if comm.rank == 1:
            for t in (2, 0, 1):
                comm.isend(t * 10, 0, tag=t).wait()
            comm.Isend(np.full(3, 4.0), 0, 9).Wait()
            return None
        reqs = [comm.irecv(source=1, tag=t) for t in range(3)]
        statuses = [MPI.Status() for _ in reqs]
        values = MPI.Request.waitall(reqs, statuses)
        buf = np.zeros(3)
        r = comm.Irecv(buf, 1, 9)
        while not r.Test():
            pass
        pending = comm.irecv(source=1, tag=77)
        flag, _ = pending.test()
        idx, flag_any = MPI.Request.Testany([pending])
        return values, [s.tag for s in statuses], buf.tolist(), flag, flag_any, idx == MPI.UNDEFINED

    assert run_ranks(2, prog)[0] == ([0, 10, 20], [0, 1, 2], [4.0] * 3, False, False, True)


def test_waitany_testall_get_status():
    def prog(comm):
        if comm.rank == 1:
            comm.recv(source=0, tag=5)            # wait until rank 0 has posted its receives
            comm.send("b", 0, tag=2)
            comm.send("a", 0, tag=1)
            return None
        reqs = [comm.irecv(source=1, tag=1), comm.irecv(source=1, tag=2)]
        assert MPI.Request.Testall(reqs) is False
        comm.send("go", 1, tag=5)
        st = MPI.Status()
        i, value = MPI.Request.waitany(reqs, st)
        while not reqs[1 - i].Get_status():
            pass
        j, other = MPI.Request.waitany(reqs)
        done, _ = MPI.Request.testall(reqs)      # both inactive now
        return sorted([value, other]), st.tag in (1, 2), done, MPI.Request.Waitany(reqs) == MPI.UNDEFINED

    assert run_ranks(2, prog)[0] == (["a", "b"], True, True, True)


def test_probe_iprobe_and_sendrecv():
    def prog(comm):
        r, n = comm.rank, comm.size
        st = MPI.Status()
        got = comm.sendrecv(r, dest=(r + 1) % n, sendtag=4, source=(r - 1) % n, recvtag=4, status=st)
        buf = np.array([float(r)])
        comm.Sendrecv_replace(buf, (r + 1) % n, 5, (r - 1) % n, 5)
        if r == 0:
            comm.send(np.arange(4), 1, tag=6)
            return got, buf[0], st.source
        if r == 2:
            return got, buf[0]
        assert not comm.iprobe(source=0, tag=99)
        comm.probe(source=MPI.ANY_SOURCE, tag=6, status=st)
        size = st.Get_count()
        return got, buf[0], st.source, comm.recv(source=st.source, tag=st.tag).tolist(), size > 0

    res = run_ranks(3, prog)
    assert res[0] == (2, 2.0, 2)
    assert res[1] == (0, 0.0, 0, [0, 1, 2, 3], True)


def test_persistent_requests():
    def prog(comm):
        a = np.zeros(2)
        other = 1 - comm.rank
        send = comm.Send_init([a, MPI.DOUBLE], other, 3)
        recv_buf = np.zeros(2)
        recv = comm.Recv_init([recv_buf, MPI.DOUBLE], other, 3)
        seen = []
        for k in range(3):
            a[:] = k + comm.rank
            MPI.Prequest.Startall([recv, send])
            MPI.Prequest.Waitall([send, recv])
            seen.append(recv_buf.tolist())
        return seen

    assert run_ranks(2, prog)[0] == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]


def test_unsupported_calls_name_themselves():
    with pytest.raises(NotImplementedError, match="mpi4py's MPI.Win is not supported by mcemu"):
        MPI.Win
    assert getattr(MPI, "Intercomm_create_nonsense", None) is None

    def prog(comm):
        with pytest.raises(NotImplementedError, match="Intracomm.Ireduce"):
            comm.Ireduce
        return True

    assert run_ranks(1, prog) == [True]


def test_a_lone_rank_waiting_for_nothing_is_a_deadlock_error():
    from nodes.mpi.intracomm import Intracomm
    from nodes.mpi.matching import Engine
    comm = Intracomm()
    comm._setup(Engine(SingletonTransport()), (0,), 0, "COMM_WORLD")
    comm.send("me", 0, 1)
    assert comm.recv(source=0, tag=1) == "me"
    with pytest.raises(MPI.Exception, match="waits for recv"):
        comm.recv(source=0, tag=2)


_SEND_PLAN = st.lists(st.tuples(st.integers(1, 2), st.integers(0, 2)), min_size=1, max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=_SEND_PLAN, picks=st.lists(st.integers(0, 3), min_size=30, max_size=30))
def test_non_overtaking_for_random_sends_and_receives(plan, picks):
    """MPI 3.1 section 3.5: a receive gets, of the messages of one sender it matches, the one
    sent first, whatever mix of named and ANY_SOURCE / ANY_TAG receives takes them."""
    def prog(comm):
        r = comm.rank
        if r:
            for seq, (sender, tag) in enumerate(plan):
                if sender == r:
                    comm.send((r, tag, seq), 0, tag)
            return None
        left, bad = list(enumerate(plan)), []
        for k in range(len(plan)):
            seq0, (s0, t0) = left[picks[k] % len(left)] if picks[k] else left[0]
            source, tag = [(s0, t0), (MPI.ANY_SOURCE, MPI.ANY_TAG), (s0, MPI.ANY_TAG), (MPI.ANY_SOURCE, t0)][picks[k]]
            st_ = MPI.Status()
            src, t, seq = comm.recv(source=source, tag=tag, status=st_)
            first = min(q for q, (s, tg) in left if s == src and (tag == MPI.ANY_TAG or tg == tag))
            if seq != first or (st_.source, st_.tag) != (src, t):
                bad.append((source, tag, seq, first))
            left.remove((seq, (src, t)))
        return bad

    assert run_ranks(3, prog)[0] == []
