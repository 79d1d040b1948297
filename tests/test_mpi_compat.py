"""mcemu's MPI against what mpi4py 4 over MPICH 4 does, case by case (each expected value
written from MPI's or mpi4py's documented behaviour, and checked once against the real
pair): the vector collectives' buffer forms, IN_PLACE, statuses lists, null handles, object
reductions, Compute_dims, topologies, names, attributes, and ``python -m mpi4py``. Ranks are
threads over the in-memory transport (tests.fixtures.mpi_ranks), except the launcher's
checks, which run ``python -m nodes.mpi.local`` (a second or so each)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from nodes.mpi import MPI
from tests.fixtures.mpi_ranks import run_ranks

ROOT = Path(__file__).resolve().parents[1]


# -- 1. vector collectives: mpi4py's message_vector rules --------------------------------------

def test_vector_forms_that_mpi4py_accepts():
    def prog(comm):
        r, n, out = comm.rank, comm.size, {}
        a = np.arange(2.0 * n)
        counts, displs = np.full(n, 2), np.arange(n) * 2        # numpy ints, as programs make them
        loc = np.zeros(2)
        comm.Scatterv([a, tuple(counts), tuple(displs), MPI.DOUBLE], loc, root=0)
        out["4 items, tuples of numpy ints"] = loc.tolist()
        comm.Scatterv([a, 2, MPI.DOUBLE], loc, root=0)            # one count: every block's
        out["int count"] = loc.tolist()
        one = np.zeros(1)
        comm.Scatterv([a, 1, 2, MPI.DOUBLE], one, root=0)         # an int displacement is a stride
        out["strided"] = one.tolist()
        b = np.zeros(2 * n)
        comm.Allgatherv(np.full(2, float(r)), b)                  # a bare buffer: split evenly
        out["bare Allgatherv"] = b.tolist()
        g = np.zeros(2 * n)
        comm.Gatherv(np.full(2, float(r)), [g, MPI.DOUBLE], root=0)
        out["[B, type] Gatherv"] = g.tolist()
        t = np.zeros(n)
        comm.Alltoallv(np.arange(n, dtype="d") + 10 * r, t)
        out["bare Alltoallv"] = t.tolist()
        u = np.zeros(2 * n + 1, dtype="i")                        # 7 over 3: blocks of 3, 2, 2
        comm.Allgatherv(np.full(3 if r == 0 else 2, r, dtype="i"), u)
        out["uneven"] = u.tolist()
        v = np.full(2 * n, -1, dtype="i")                         # (counts, displs): a tuple pairs them
        comm.Allgatherv(np.array([r], dtype="i"), [v, ([1] * n, list(range(n - 1, 2 * n - 1)))])
        out["(counts, displs)"] = v.tolist()
        return out

    res = run_ranks(3, prog)
    for r, out in enumerate(res):
        assert out["4 items, tuples of numpy ints"] == out["int count"] == [2 * r, 2 * r + 1]
        assert out["strided"] == [2 * r]
        assert out["bare Allgatherv"] == [0, 0, 1, 1, 2, 2]
        assert out["[B, type] Gatherv"] == ([0, 0, 1, 1, 2, 2] if r == 0 else [0] * 6)
        assert out["bare Alltoallv"] == [r, 10 + r, 20 + r]
        assert out["uneven"] == [0, 0, 0, 1, 1, 2, 2]
        assert out["(counts, displs)"] == [-1, -1, 0, 1, 2, -1]


def test_a_block_outside_the_buffer_is_err_count():
    def prog(comm):
        with pytest.raises(MPI.Exception) as e:
            comm.Scatterv([np.zeros(4), [2, 3], [0, 2], MPI.DOUBLE], np.zeros(3), root=comm.rank)
        return e.value.Get_error_class()

    assert run_ranks(2, prog) == [MPI.ERR_COUNT] * 2


# -- 2. IN_PLACE: the receive buffer holds the data to send -------------------------------------

def test_in_place_alltoall_alltoallv_reduce_scatter_block():
    def prog(comm):
        r, n = comm.rank, comm.size
        a = np.arange(n, dtype="d") + 10 * r
        comm.Alltoall(MPI.IN_PLACE, a)
        v = np.arange(n, dtype="d") + 10 * r
        comm.Alltoallv(MPI.IN_PLACE, [v, [1] * n, list(range(n)), MPI.DOUBLE])
        s = np.arange(n, dtype="i") + r
        comm.Reduce_scatter_block(MPI.IN_PLACE, s)
        return a.tolist(), v.tolist(), int(s[0])

    for r, (a, v, s) in enumerate(run_ranks(4, prog)):
        assert a == v == [r, 10 + r, 20 + r, 30 + r]
        assert s == sum(r + k for k in range(4))       # element r of every rank's arange(n) + k


# -- 3. statuses lists are filled and extended, one Status a request --------------------------

def test_statuses_lists_grow_to_one_status_a_request():
    def prog(comm):
        r, n, out = comm.rank, comm.size, {}
        st: list = []
        MPI.Request.Waitall([comm.irecv(source=(r - 1) % n, tag=1), comm.isend(r, (r + 1) % n, tag=1)], st)
        out["Waitall"] = [(s.source, s.tag) for s in st]
        reqs = [comm.isend(r, (r + 1) % n, tag=2), comm.irecv(source=(r - 1) % n, tag=2)]
        comm.Barrier()                      # the message is here before Testall looks
        st = []
        out["Testall"] = (MPI.Request.Testall(reqs, st), len(st))
        reqs = [comm.isend(r, (r + 1) % n, tag=3), comm.irecv(source=(r - 1) % n, tag=3)]
        comm.Barrier()
        st = []
        out["Waitsome"] = (MPI.Request.Waitsome(reqs, st), [s.source for s in st])
        st = [MPI.Status()]
        MPI.Request.Waitall([comm.isend(r, (r + 1) % n, tag=4)], st)
        comm.recv(source=(r - 1) % n, tag=4)
        out["long enough"] = len(st)
        reqs = [comm.isend(r, (r + 1) % n, tag=5), comm.irecv(source=(r - 1) % n, tag=5)]
        comm.Barrier()
        st = []
        out["Testsome"] = (MPI.Request.Testsome(reqs, st), len(st), MPI.Request.Testsome(reqs))
        return out

    for r, out in enumerate(run_ranks(3, prog)):
        assert out["Waitall"] == [((r - 1) % 3, 1), (MPI.ANY_SOURCE, MPI.ANY_TAG)]
        assert out["Testall"] == (True, 2)
        assert out["Waitsome"] == ([0, 1], [MPI.ANY_SOURCE, (r - 1) % 3])
        assert out["long enough"] == 1
        assert out["Testsome"] == ([0, 1], 2, None)    # then none active: None, as MPI's UNDEFINED


# -- 4. handles ----------------------------------------------------------------------------------

def test_completed_requests_and_freed_comms_are_null():
    def prog(comm):
        r, n = comm.rank, comm.size
        q = comm.isend(1, (r + 1) % n, tag=4)
        comm.recv(source=(r - 1) % n, tag=4)
        q.wait()
        out = [q == MPI.REQUEST_NULL, bool(q), q != MPI.REQUEST_NULL]
        p = comm.Send_init(np.zeros(1), (r + 1) % n, tag=5)
        rr = comm.Recv_init(np.zeros(1), (r - 1) % n, tag=5)
        out += [bool(p)]                                  # persistent, not yet started: not null
        MPI.Prequest.Startall([p, rr])
        MPI.Request.Waitall([p, rr])
        out += [bool(p), p == MPI.REQUEST_NULL, bool(rr)]  # inactive, still not null
        p.Free()
        out += [p == MPI.REQUEST_NULL]
        d = comm.Dup()
        out += [d == comm, d != comm, comm == comm, MPI.Intracomm(comm) == comm]
        d.Free()
        out += [d == MPI.COMM_NULL, bool(d), MPI.Comm() == MPI.COMM_NULL, MPI.Request() == MPI.REQUEST_NULL]
        return out

    want = [True, False, False, True, True, False, True, True, False, True, True, True, True, False, True, True]
    assert run_ranks(2, prog) == [want] * 2


def test_requests_and_comms_are_unhashable_as_in_mpi4py():
    with pytest.raises(TypeError):
        hash(MPI.REQUEST_NULL)
    with pytest.raises(TypeError):
        hash(MPI.COMM_WORLD)


# -- 5. object reductions: mpi4py's Python functions ---------------------------------------------

def test_object_reductions_are_mpi4pys_functions():
    def prog(comm):
        r = comm.rank
        return (comm.allreduce(r + 1, op=MPI.LAND), comm.allreduce(r % 2, op=MPI.LOR),
                comm.allreduce(r % 2, op=MPI.LXOR), comm.allreduce([r % 3, r], op=MPI.MAXLOC),
                comm.allreduce([r % 3, r], op=MPI.MINLOC), comm.allreduce(np.array([r, -r]), op=MPI.SUM).tolist())

    for got in run_ranks(4, prog):
        assert got == (True, True, False, (2, 2), (0, 0), [6, -6])
        assert type(got[0]) is bool and type(got[3]) is tuple


def test_max_of_arrays_in_the_object_api_raises_as_in_mpi4py():
    with pytest.raises(ValueError):
        MPI.MAX(np.array([1, 3]), np.array([2, 2]))

    def prog(comm):   # two ranks: both combine, so both raise
        with pytest.raises(ValueError):
            comm.allreduce(np.array([comm.rank, -comm.rank]), op=MPI.MAX)
        return True

    assert run_ranks(2, prog) == [True, True]
    assert (MPI.SUM(1, 2), MPI.LAND(2, 3), MPI.MAX(1, 5)) == (3, True, 5)


# -- 6. Compute_dims: MPICH's answers ----------------------------------------------------------

@pytest.mark.parametrize("nnodes, dims, expected", [
    (72, 2, [9, 8]), (432, 3, [9, 8, 6]), (360, 3, [10, 6, 6]), (100, 3, [5, 5, 4]), (20, 4, [5, 2, 2, 1]),
    (2 ** 20, 6, [16, 16, 8, 8, 8, 8]), (720720, 4, [33, 30, 28, 26]), (997 * 991, 3, [997, 991, 1]),
    (64, [2, 0, 0], [2, 8, 4]), (72, [0, 3, 0, 0], [4, 3, 3, 2]), (360, [0, 0, 5, 0], [6, 4, 5, 3]),
    (1, 20, [1] * 20), (7, [7, 1], [7, 1])])
def test_compute_dims_as_mpich(nnodes, dims, expected):
    assert MPI.Compute_dims(nnodes, dims) == expected


# -- 7. topologies --------------------------------------------------------------------------------

def test_cartesian_topology_values_and_error_classes():
    def prog(comm):
        cart = comm.Create_cart([2, 2], periods=[True, False])
        errors = []
        for call in (lambda: comm.Create_cart([5]), lambda: cart.Shift(2, 1), lambda: cart.Shift(-1, 1),
                     lambda: cart.Get_cart_rank([0, 2]), lambda: cart.Get_coords(4)):
            with pytest.raises(MPI.Exception) as e:
                call()
            errors.append(e.value.Get_error_class())
        with pytest.raises(ValueError):
            cart.Get_cart_rank([0, 0, 0])
        return cart.Get_topo(), cart.periods, cart.Get_topology(), errors

    topo, periods, kind, errors = run_ranks(4, prog)[3]
    assert topo == ([2, 2], [1, 0], [1, 1]) and all(type(p) is int for p in topo[1] + periods)
    assert (kind, MPI.CART, MPI.GRAPH, MPI.DIST_GRAPH) == (2, 2, 1, 3)
    assert errors == [MPI.ERR_ARG] * 4 + [MPI.ERR_RANK]


# -- 8 and 10. names, comparisons, thread level, attributes ------------------------------------

def test_names_compare_thread_level_and_attributes():
    def prog(comm):
        rev = comm.Split(0, -comm.rank)
        return ((comm.Get_name(), comm.Dup().Get_name(), comm.Split(0).Get_name(), MPI.DOUBLE.Get_name(),
                 MPI.INT.name),
                (comm.Compare(comm), comm.Compare(comm.Dup()), comm.Compare(rev), comm.Compare(comm.Split(comm.rank % 2))),
                [comm.Get_attr(k) for k in (MPI.TAG_UB, MPI.WTIME_IS_GLOBAL, MPI.IO, MPI.APPNUM, MPI.UNIVERSE_SIZE)])

    names, compare, attrs = run_ranks(4, prog)[0]
    assert names == ("MPI_COMM_WORLD", "", "", "MPI_DOUBLE", "MPI_INT")
    assert compare == (MPI.IDENT, MPI.CONGRUENT, MPI.SIMILAR, MPI.UNEQUAL)
    assert attrs == [2 ** 29 - 1, 0, MPI.ANY_SOURCE, 0, None]
    assert MPI.Query_thread() == MPI.THREAD_SINGLE  # not MPICH's MULTIPLE: MPI.py says why
    with pytest.raises(NotImplementedError, match="Get_attr"):
        MPI.COMM_SELF.Get_attr(12345)


def test_tags_up_to_tag_ub():
    def prog(comm):
        top = comm.Get_attr(MPI.TAG_UB)
        comm.send("x", dest=0, tag=top)
        got = comm.recv(source=0, tag=top)
        with pytest.raises(MPI.Exception) as e:
            comm.send("x", dest=0, tag=top + 1)
        return got, e.value.Get_error_class()

    assert run_ranks(1, prog) == [("x", MPI.ERR_TAG)]


# -- 9 and 11. the launcher, Abort, the modules mcemu does not offer ----------------------------

def _local(n: int, *cmd: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nodes.mpi.local", "-n", str(n), "--timeout", "60", *cmd],
                          cwd=cwd, capture_output=True, text=True, timeout=90,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_python_m_mpi4py_runs_a_script_a_module_and_a_command(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""\
        import sys
        from mpi4py import MPI
        c = MPI.COMM_WORLD
        line = f"{c.rank} {__name__} {sys.argv[1:]} {c.allreduce(c.rank)}\\n"
        sys.stdout.write(line)   # one write a line: the ranks share the pipe
        sys.stdout.flush()
    """))
    for how in ([str(prog)], ["-m", "prog"]):
        res = _local(2, sys.executable, "-m", "mpi4py", *how, "a", "b", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        assert sorted(res.stdout.splitlines()) == ["0 __main__ ['a', 'b'] 1", "1 __main__ ['a', 'b'] 1"]
    res = _local(2, sys.executable, "-m", "mpi4py", "-c", "import sys; from mpi4py import MPI; "
                 "sys.stdout.write(f'{MPI.COMM_WORLD.rank} {sys.argv}\\n')", "x")
    assert sorted(res.stdout.splitlines()) == ["0 ['-c', 'x']", "1 ['-c', 'x']"]


def test_an_uncaught_exception_under_python_m_mpi4py_aborts_the_job(tmp_path):
    prog = tmp_path / "boom.py"
    prog.write_text(textwrap.dedent("""\
        from mpi4py import MPI
        c = MPI.COMM_WORLD
        if c.rank == 1:
            raise RuntimeError("boom")
        c.Barrier()    # rank 0 would wait here for ever: the job must end instead
    """))
    res = _local(2, sys.executable, "-m", "mpi4py", str(prog))
    assert res.returncode == 1
    assert "RuntimeError: boom" in res.stderr and "MPI_Abort(MPI_COMM_WORLD, 1)" in res.stderr


def test_abort_exits_with_its_code_after_flushing(tmp_path):
    prog = tmp_path / "abort.py"
    prog.write_text(textwrap.dedent("""\
        import sys
        from mpi4py import MPI
        c = MPI.COMM_WORLD
        if c.rank == 1:
            sys.stdout.write("unflushed")
            c.Abort(7)
        c.Barrier()
    """))
    res = _local(2, sys.executable, str(prog))
    assert res.returncode == 7 and "unflushed" in res.stdout
    assert "application called MPI_Abort(MPI_COMM_WORLD, 7)" in res.stderr


@pytest.mark.parametrize("code, status", [(256, 1), (-1, 255), (0, 1)])
def test_abort_exits_with_its_code_s_low_byte_and_never_0_so_the_others_end(tmp_path, code, status):
    """MPICH's mpiexec exits with the code's low byte (Abort(-1): 255). Abort(256) exited 0
    here: nothing ended the other ranks (here one that sleeps, as a computing one would) until
    they ended by themselves. Never 0, so that they end (mpiexec exits 0 for
    Abort(0) and 256)."""
    prog = tmp_path / "abort.py"
    prog.write_text(textwrap.dedent(f"""\
        import time
        from mpi4py import MPI
        c = MPI.COMM_WORLD
        if c.rank == 1:
            c.Abort({code})
        time.sleep(30)
    """))
    t0 = time.monotonic()
    res = _local(2, sys.executable, str(prog))
    assert res.returncode == status and time.monotonic() - t0 < 15
    assert f"application called MPI_Abort(MPI_COMM_WORLD, {code})" in res.stderr


def test_an_mpi_error_s_traceback_ends_at_the_program_s_call(tmp_path):
    """As mpi4py's (its calls are compiled): the program's line, the call, the error; not the
    dozen frames of matching, buffers and collectives it showed. A caught error is unchanged."""
    prog = tmp_path / "bad.py"
    prog.write_text(textwrap.dedent("""\
        from mpi4py import MPI
        c = MPI.COMM_WORLD
        try:
            c.send(1, dest=7)
        except MPI.Exception as e:
            print("caught", e.Get_error_class() == MPI.ERR_RANK, flush=True)
        if c.rank == 1:
            c.Recv(bytearray(2), source=0)
        else:
            c.Send(bytearray(8), dest=1)
    """))
    res = _local(2, sys.executable, str(prog))
    assert res.returncode == 1 and res.stdout.split() == ["caught", "True"] * 2
    tb = res.stderr[res.stderr.index("Traceback"):]
    assert 'line 8, in <module>\n    c.Recv(bytearray(2), source=0)\n' in tb and "in Comm.Recv\n" in tb
    assert "Message truncated: a message of 8 bytes for a buffer of 2 bytes" in tb
    assert not any(f in tb for f in ("matching.py", "buffers.py", "request.py", "in timed")), tb
    full = subprocess.run([sys.executable, "-m", "nodes.mpi.local", "-n", "2", "--timeout", "60", sys.executable,
                           str(prog)], cwd=ROOT, capture_output=True, text=True, timeout=90,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "MCEMU_MPI_TRACEBACK": "full"})
    assert full.returncode == 1 and "buffers.py" in full.stderr  # where the truncation was found


def test_init_is_the_programs_to_call_when_rc_initialize_is_false():
    """As mpi4py 4.1.2 over MPICH 5.0.2 printed it: not initialized before ``Init`` (with
    ``rc.initialize = False``), still initialized after ``Finalize``; a second ``Init`` is an
    MPI.Exception of class ERR_OTHER (15). Calls before ``Init`` still work here (MPICH's end
    the process): no program relies on that failing."""
    code = textwrap.dedent("""\
        import mpi4py
        mpi4py.rc.initialize = False
        from mpi4py import MPI
        print("before Init", MPI.Is_initialized(), MPI.Is_finalized())
        print("Init_thread", MPI.Init_thread(MPI.THREAD_SINGLE), MPI.Is_initialized(), MPI.Is_finalized())
        try:
            MPI.Init()
        except MPI.Exception as e:
            print("second Init", e.Get_error_class())
        MPI.Finalize()
        print("after Finalize", MPI.Is_initialized(), MPI.Is_finalized())
    """)
    res = _local(1, sys.executable, "-c", code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["before Init False False", "Init_thread 0 True False", "second Init 15",
                                       "after Finalize True True"]
    res = _local(1, sys.executable, "-c", "from mpi4py import MPI; print(MPI.Is_initialized(), MPI.Is_finalized())")
    assert res.stdout == "True False\n", res.stderr  # rc.initialize's default: initialized at the import


def test_modules_not_offered_raise_not_implemented_naming_themselves():
    code = textwrap.dedent("""\
        import numpy as np
        from mpi4py import MPI
        for name in ("mpi4py.util.sync",):
            try:
                __import__(name)
            except NotImplementedError as e:
                print(name, "NotImplementedError", name in str(e))
        from mpi4py.util import dtlib
        print(dtlib.from_numpy_dtype("f8").Get_name(), dtlib.to_numpy_dtype(MPI.INT))
    """)
    res = _local(1, sys.executable, "-c", code)
    assert res.stdout.splitlines() == ["mpi4py.util.sync NotImplementedError True", "MPI_DOUBLE int32"]
