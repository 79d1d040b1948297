"""The analytic models applied to placed jobs: what ``mcemu net predict`` answers.

The dissertation's models take stair-layered path sets (§3.2-3.3), so a job is predicted when
its pattern decomposes into stairs it can name:

* ``stair``: the model itself; ``homogeneous`` (chapter 4, one MTBS) gives each path's
  ``Dmax`` (a bound: "provides a good bound", §4.3.1), ``heterogeneous`` (chapter 5, the
  m-path divide and conquer) one delay per path for any MTBS list.
* ``transpose`` on its own submesh: each row is a right-directed stair of ``i`` paths and a
  left-directed stair of ``n-1-i`` paths ending at the diagonal column (NETWORK.md 4.5, exact
  under XY routing), each path solved at its position in its stair; the job's mean also by the
  text's ICL/SCL interpolation (4.14), which only gives a mean.
* ``diagonal``: no contention (§6.2.1): every path ``L * T_t``.

Each job is predicted alone: contention between jobs is not modelled here (the chapter-5/6
experiments decompose the two-job layouts row by row). The models ignore the hop term
(``D = L*T_t + C``, §3.2), so compare them with simulated delays minus ``hops * T_t``, or
just note the 0.05 us per hop.
"""
from __future__ import annotations

from scheduler.network.heterogeneous import solve_multipath
from scheduler.network.homogeneous import solve_stair, transpose_interpolation
from scheduler.network.layout import NetJob
from scheduler.network.wormhole import NetworkError

MODELS = ("homogeneous", "heterogeneous")


def _one_mtbs(job: NetJob, model: str) -> float:
    if len(set(job.mtbs)) != 1:
        raise NetworkError(f"job {job.name!r}: the homogeneous model needs one MTBS for every path "
                           f"(use --model heterogeneous)")
    return job.mtbs[0]


def _stair_delays(mtbs: list[float], model: str, L: int, ft: float, case4: str) -> list[float]:
    """Per path top -> bottom; one path alone is L*T_t."""
    if len(mtbs) == 1:
        return [L * ft]
    if model == "homogeneous":
        return list(solve_stair(len(mtbs), mtbs[0], L=L, t_flit=ft).dmax)
    return list(solve_multipath(mtbs, L=L, t_flit=ft, case4=case4).delays)


def _contiguous(job: NetJob, width: int) -> bool:
    """The ranks sit on the job's own submesh in row-major order (a transpose's stairs are
    then rows of the mesh)."""
    w, h = job.shape
    x0, y0 = job.nodes[0] % width, job.nodes[0] // width
    return all(job.nodes[y * w + x] == (y0 + y) * width + x0 + x for y in range(h) for x in range(w))


def predict_job(job: NetJob, topology, model: str = "homogeneous", *, length: int = 500,
                flit_time: float = 0.05, case4: str = "physical") -> dict:
    """Per-path predicted delays (us, in the job's path order) and the job's mean."""
    if model not in MODELS:
        raise NetworkError(f"unknown model {model!r}; known: {', '.join(MODELS)}")
    L, ft = length, flit_time
    notes = []
    if job.pattern == "stair":
        mt = list(job.mtbs)
        if model == "homogeneous":
            mt = [_one_mtbs(job, model)] * len(mt)
        delays = _stair_delays(mt, model, L, ft, case4)
        predictor = f"{model} stair model, {len(mt)} layers"
    elif job.pattern == "transpose":
        if topology.kind != "mesh" or not _contiguous(job, topology.width):
            raise NetworkError(f"job {job.name!r}: the transpose predictor needs the job on its own "
                               f"submesh of a mesh (ranks row-major)")
        n = job.shape[0]
        by_stair: dict[tuple[int, str], list[int]] = {}
        for p, (s, d) in enumerate(job.ranks):
            i, j = divmod(s, n)  # Node_{i,j}: row i, column j -> Node_{j,i}
            by_stair.setdefault((i, "right" if j < i else "left"), []).append(p)
        delays = [0.0] * len(job.ranks)
        for (i, side), members in by_stair.items():
            # top of the stair = the path entering nearest the diagonal column
            members.sort(key=lambda p: -(job.ranks[p][0] % n) if side == "right" else job.ranks[p][0] % n)
            mt = [job.mtbs[p] for p in members]
            if model == "homogeneous":
                mt = [_one_mtbs(job, model)] * len(mt)
            for p, v in zip(members, _stair_delays(mt, model, L, ft, case4)):
                delays[p] = v
        predictor = f"{model} model on the transpose's row stairs (exact decomposition under XY routing)"
        if model == "homogeneous":
            notes.append({"predictor": "ICL/SCL interpolation, eq. (4.14)",
                          "mean_delay_us": L * ft + transpose_interpolation(n, job.mtbs[0], L=L, t_flit=ft)})
    elif job.pattern == "diagonal":
        delays = [L * ft] * len(job.ranks)
        predictor = "no internal contention (diagonal, §6.2.1)"
    else:
        raise NetworkError(f"job {job.name!r}: no analytic model for pattern {job.pattern!r} (the "
                           f"dissertation's models cover stair, transpose and diagonal; use net simulate)")
    paths = [{"source": p.src, "destination": p.dst, "mtbs_us": p.mtbs, "predicted_delay_us": d}
             for p, d in zip(job.paths, delays)]
    return {"name": job.name, "pattern": job.pattern, "predictor": predictor,
            "bound": model == "homogeneous" and job.pattern != "diagonal",
            "mean_delay_us": sum(delays) / len(delays), "paths": paths, "also": notes}


__all__ = ["MODELS", "predict_job"]
