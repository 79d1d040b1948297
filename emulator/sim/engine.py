"""The event engine of every virtual-time driver: the plain simulator, the gang simulator and
the tests' drivers are this engine plus a work model (DESIGN "One policy core, two clocks").

SimPy-shaped (simpy/core.py): one heap of ``(time, kind, seq, item)`` events, ``step()``
takes the first, ``seq`` (a counter) breaks ties in insertion order, so a run is a pure
function of its inputs. The engine calls the policy (``arrive``, ``depart``, ``tick``),
hands the decisions to the work model, then calls the observers.

* Arrivals are pulled from the job iterator one at a time, so memory grows with the jobs in
  the system, not with the length of the run. The next one waits beside the heap as an event
  tuple and is taken exactly where it would be taken on the heap; more can be put on the
  heap with :meth:`Engine.schedule` (a closed system, a test's script).
* Departures (``DEPART``, item: the job's Start) are on the heap, put there by the work
  model; the plain one (:class:`FixedRuntime`) is done inside the loop, without a call.
* The policy's one pending timer (``next_wakeup()``) lives beside the heap, at rank
  ``timer_rank`` among same-time heap events: ``TIMER`` (1) puts it after the departures
  (0) and before the arrivals (2), the plain simulator's order; ``LAST`` after both, the
  gang simulator's (completions, arrivals, then the slot timer). After every event the
  engine asks ``next_wakeup()`` afresh and applies the timer rule of
  :func:`scheduler.timer.next_timer` (shared with the live daemon): a time before now
  counts as now; a wake-up equal to now is taken unless a tick at that same instant already
  happened; None withdraws the timer. A superseded timer is not an event.
* With nothing else pending, the timer is taken only while jobs are in the system (else it
  would stretch a run to completion past its last job), unless ``idle_timer`` (the gang
  simulator: the slot switch after the last departure is counted).
* A work model that decides itself when jobs leave (the gang simulator: processor sharing)
  keeps a timer of its own beside the heap (``next_event(now)``: its next completion or
  end of a switch phase), taken before every other event at the same time (kind ``MODEL``),
  and has an ``advance(t)`` hook, called before the first event at a later time, that
  progresses the work, departs the jobs that are done and returns how many left.
* A work model that works ahead of the clock (``works_ahead = True``: the network of jobs that
  communicate, emulator.sim.comm_work) is asked ``next_event(now, horizon)``, where ``horizon`` is
  the time of the engine's own next event (arrival, departure, the policy's timer; at most the
  ``run(until)`` limit): it may do its own work up to that time, not including it, since that
  event may change the work (a start adds traffic), and it must return a time no later than
  any departure it found. A run that stops at its limit asks again when it resumes. Events
  put on the heap from outside between two runs must not lie before the time the model was
  asked up to.

``events`` counts the events taken: arrivals, departures, timers that fired and the work
model's own timers.

Speed (issue 18; the same events in the same order): with the plain work model the loop is
``_loop_plain``, ``_loop`` without the tests for a model timer and ``advance``; a policy
whose ``next_wakeup`` never overrides the base one, or that says it always answers None
(``never_wakes``: lazy with its threshold checked at releases), is not asked after every
event.
"""
from __future__ import annotations

import gc
import math
import sys
from contextlib import contextmanager
from heapq import heappop, heappush
from itertools import count

from scheduler.timer import next_timer
from scheduler.topology import RequestError

# Event kinds; for heap events also their rank at equal times.
DEPART, TIMER, ARRIVE, MODEL, REJECT = 0, 1, 2, 3, 4
LAST = 9  # a timer rank after every heap event
_PROGRESS_EVERY = 0x3FFF  # progress(now) once every 16384 events
BATCH = 64  # events a batched observer notes before it folds them in: few enough that they are
# still in the CPU caches and young for the garbage collector (measured: 4096 is slower)
_FLUSH_EVERY = BATCH - 1  # a mask: flush once every BATCH events (a power of two)
_LATEST = sys.float_info.max  # run(): no time limit (any event time is finite)


@contextmanager
def cycle_gc_paused():
    """The cyclic garbage collector off for the duration (as it was after).

    Issue 18: a plain run makes no reference cycles per event (a run leaves a handful, in
    its metrics' closures), so the collector finds nothing there; but its passes over the
    caller's heap -- the jobs of a trace, tens of thousands of objects -- cost a tenth of the
    NASA replay (one full pass: 10 ms of 100). Reference counting frees everything as before.

    On the way out the objects made meanwhile go to the oldest generation (``gc.freeze()``
    then ``gc.unfreeze()``: two list merges), as the survivors of young collections would:
    else the first allocation after ``gc.enable()`` starts a young collection over every one
    of them at once (4 ms of the NASA replay's 115). A full collection still looks at them.
    Not when something else keeps objects frozen (a launcher before it forks): unfreezing
    would thaw those too."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


class FixedRuntime:
    """The plain work model: a started job runs for ``Start.runtime`` (after folding) on the
    nodes it was given, then departs. The engine's loop does the same without calling
    ``apply`` (measured: that call costs the plain simulator about 6% of its time on FCFS)."""

    def bind(self, engine) -> None:
        self.engine = engine

    def apply(self, starts, t) -> None:
        for s in starts:
            self.engine.schedule(t + s.runtime, DEPART, s)


def _asks_for_timers(policy) -> bool:
    """False for a discipline that never overrides next_wakeup, or says its next_wakeup always
    answers None (``never_wakes`` true, set when it is built: lazy with its threshold checked
    at releases); the call after every event is then skipped."""
    from scheduler.disciplines.base import Discipline  # lazy: 40 ms the monitor (event kinds only) never needs

    if getattr(policy, "never_wakes", False) is True and "next_wakeup" not in vars(policy):
        return False
    return "next_wakeup" in vars(policy) or getattr(type(policy), "next_wakeup", None) is not Discipline.next_wakeup


def _raise(job, error, t):
    raise error


class _Progress:
    """``progress(now)`` once every 16384 events, as an observer."""

    def __init__(self, fn):
        self.fn, self.n = fn, 0

    def observe(self, t, kind, item, decisions):
        self.n += 1
        if not self.n & _PROGRESS_EVERY:
            self.fn(t)
        return False


def _observer(observers, once=False):
    """The observers' ``observe`` hooks as one call (None when there are none); ``once``:
    it always asks to stop (one step)."""
    hooks = [o.observe for o in observers]
    if len(hooks) == 1 and not once:
        return hooks[0]
    if not hooks and not once:
        return None

    def observe(t, kind, item, decisions):
        stop = once
        for h in hooks:
            stop = h(t, kind, item, decisions) or stop
        return stop

    return observe


def _next_event(heap, pending, timer_at, trank, in_system, idle) -> tuple:
    """``(time, kind, top)`` of the engine's next own event: the heap's first, or the job
    stream's next arrival if it comes first (``top`` is then ``pending``), or the policy's
    timer at its rank (``top`` is then the event it comes before); ``(inf, None, None)`` when
    nothing is due (the timer waits for jobs in the system unless ``idle``)."""
    if heap:
        top = heap[0]  # floats compared first, then kind and seq: the heap's own order
        if pending is not None and (pending[0] < top[0] or (pending[0] == top[0] and pending < top)):
            top = pending
    else:
        top = pending
    if top is not None:
        t = top[0]
        if timer_at is not None and (timer_at < t or (timer_at == t and top[1] > trank)):
            return timer_at, TIMER, top
        return t, top[1], top
    if timer_at is not None and (in_system or idle):
        return timer_at, TIMER, None
    return math.inf, None, None


def _pull(jobs, seq):
    """The job stream's next arrival as an event tuple (None: the stream is done)."""
    job = next(jobs, None)
    return None if job is None else (job.submit, ARRIVE, next(seq), job)


class Engine:
    """Drive ``policy`` with ``jobs`` (in submit order) and a work ``model`` (default
    :class:`FixedRuntime`; a model has ``bind(engine)``, ``apply(decisions, t)`` and may have
    ``advance(t)`` and ``next_event(t)``, see the module docstring).

    ``observers``: objects with ``observe(t, kind, item, decisions) -> stop``, called after
    every event once the work model has the decisions (``kind`` REJECT: an arrival the
    policy refused, item the job); a true return ends the run after this event.
    ``on_reject(job, error, t)``: what a refused arrival does (default: the RequestError
    propagates). ``timers=False``: never tick. ``progress(now)``: called every 16384 events.
    """

    def __init__(self, policy, jobs=(), *, model=None, observers=(), timer_rank: int = TIMER,
                 idle_timer: bool = False, timers: bool = True, on_reject=None, progress=None):
        self.policy = policy
        self._heap: list = []
        self._seq = count(1)
        self._jobs = iter(jobs)
        self.model = model if model is not None else FixedRuntime()
        self.model.bind(self)
        self.observers = list(observers) + ([_Progress(progress)] if progress is not None else [])
        self.timer_rank = timer_rank
        self.idle_timer = idle_timer
        self.timers = timers and _asks_for_timers(policy)
        self.on_reject = on_reject or _raise
        self.now = 0.0
        self.events = 0
        self.in_system = 0  # admitted arrivals - departures
        self.timer = None  # the policy's pending wake-up
        self.last_tick = None
        self.model_at = None  # the work model's pending timer
        self._stale = True  # events since the model's timer was asked for
        # the next arrival of the job stream, beside the heap as an event tuple (no heap
        # operation per arrival); taken in the same order as if it were on the heap
        self._pending = _pull(self._jobs, self._seq)

    def schedule(self, time: float, kind: int, item) -> None:
        """Put an event on the heap: ``ARRIVE`` (item: a Job) or ``DEPART`` (item: its Start)."""
        heappush(self._heap, (time, kind, next(self._seq), item))

    def step(self) -> bool:
        """Take one event; False when there was none."""
        before = self.events
        self._loop(_LATEST, True)
        return self.events != before

    def run(self, until: float | None = None) -> "Engine":
        """Take events up to and including time ``until`` (None: until nothing is left or an
        observer stops the run). Resumable: a later call goes on where this one stopped."""
        self._loop(_LATEST if until is None or until > _LATEST else until, False)
        return self

    def _hooks(self, once: bool) -> tuple:
        """What the loop calls, bound once (the policy, the work model, the observers), and
        the timer's rank and idle rule."""
        p, model = self.policy, self.model
        return (p.arrive, p.depart, p.tick, p.next_wakeup if self.timers else None, model.apply,
                getattr(model, "advance", None), getattr(model, "next_event", None),
                bool(getattr(model, "works_ahead", False)),
                type(model) is FixedRuntime,  # its departures are pushed in the loop, without a call
                _observer(self.observers, once), self.on_reject, self.timer_rank, self.idle_timer)

    def _loop(self, stop_at: float, once: bool) -> None:
        """Take events up to ``stop_at`` (one, ``once``) with a work model that has a timer of its
        own or an ``advance`` hook; the plain model's case is :meth:`_loop_plain`."""
        hooks = self._hooks(once)
        (arrive, depart, tick, next_wakeup, apply, advance, model_next, ahead, fixed, observe, reject, trank,
         idle) = hooks
        if fixed and advance is None and model_next is None:
            return self._loop_plain(stop_at, hooks, once)
        heap, seq, jobs, pending = self._heap, self._seq, self._jobs, self._pending
        now, events, in_system = self.now, self.events, self.in_system
        timer_at, last_tick, model_at, stale = self.timer, self.last_tick, self.model_at, self._stale
        try:
            while True:
                t, kind, top = _next_event(heap, pending, timer_at, trank, in_system, idle)
                if model_next is not None:  # the model's timer: asked once per instant, after its last event
                    if stale and t > now:
                        model_at = model_next(now, t if t < stop_at else stop_at) if ahead else model_next(now)
                        stale = False
                    if model_at is not None and model_at <= t:
                        t, kind = model_at, MODEL
                if t > stop_at:  # stop_at is finite: nothing left (inf) ends the run too
                    stale = True  # a resumed run asks the model again (a horizon past this limit)
                    break
                if advance is not None and t > now:
                    in_system -= advance(t)
                now = t
                events += 1
                if kind == ARRIVE:
                    if top is pending:
                        item, pending = pending[3], _pull(jobs, seq)
                    else:
                        item = heappop(heap)[3]
                    try:
                        decisions = arrive(item, t)
                    except RequestError as e:
                        reject(item, e, t)
                        decisions, kind = (), REJECT
                    else:
                        in_system += 1
                elif kind == DEPART:
                    item = heappop(heap)[3]
                    decisions = depart(item.job.id, t)
                    in_system -= 1
                elif kind == TIMER:
                    item = timer_at = None
                    last_tick = t
                    decisions = tick(t)
                else:  # MODEL: the work model's own timer; advance(t) did its work
                    item = model_at = None
                    decisions = ()
                if decisions:
                    if fixed:  # Start.runtime, without the property call unless folded
                        for d in decisions:
                            heappush(heap, (t + (d.runtime if d.allocation.folds else d.job.runtime),
                                            DEPART, next(seq), d))
                    else:
                        apply(decisions, t)
                stop = observe(t, kind, item, decisions) if observe is not None else False
                if next_wakeup is not None:
                    timer_at = next_timer(next_wakeup(), t, timer_at, last_tick)
                stale = True
                if stop:
                    break
        finally:
            self._pending, self.now, self.events, self.in_system = pending, now, events, in_system
            self.timer, self.last_tick, self.model_at, self._stale = timer_at, last_tick, model_at, stale

    def _loop_plain(self, stop_at: float, hooks: tuple, once: bool) -> None:
        """``_loop`` for the plain work model (FixedRuntime: no model timer, no ``advance``),
        the plain simulator's case: the same events in the same order, without the tests for
        what that model does not have (issue 18). A lone observer that never stops a run and
        has ``batch`` hooks (the metrics: ``(note, flush)``) has each event noted, without a
        call of its own, and folded in every 64 events.

        :func:`_next_event`, :func:`_pull` and :func:`scheduler.timer.next_timer` are written
        out here, not called: the calls cost the plain simulator 3-5% (bench_sim, measured);
        tests/test_engine.py checks both loops against those definitions."""
        (arrive, depart, tick, next_wakeup, _, _, _, _, _, observe, reject, trank, idle) = hooks
        batch = getattr(self.observers[0], "batch", None) if len(self.observers) == 1 and not once else None
        note, flush = batch if batch is not None else (None, None)
        heap, seq, jobs, pending = self._heap, self._seq, self._jobs, self._pending
        now, events, in_system = self.now, self.events, self.in_system
        timer_at, last_tick = self.timer, self.last_tick
        try:
            while True:
                if heap:  # _next_event(heap, pending, timer_at, trank, in_system, idle)
                    top = heap[0]  # or the stream's next arrival if it comes first (floats compared first)
                    if pending is not None and (pending[0] < top[0] or (pending[0] == top[0] and pending < top)):
                        top = pending
                else:
                    top = pending
                if top is not None:
                    t, kind = top[0], top[1]
                    if timer_at is not None and (timer_at < t or (timer_at == t and kind > trank)):
                        t, kind = timer_at, TIMER
                elif timer_at is not None and (in_system or idle):
                    t, kind = timer_at, TIMER
                else:
                    break  # nothing left
                if t > stop_at:
                    break
                now = t
                events += 1
                if kind == DEPART:
                    item = heappop(heap)[3]
                    decisions = depart(item.job.id, t)
                    in_system -= 1
                elif kind == ARRIVE:
                    if top is pending:
                        item, job = pending[3], next(jobs, None)  # _pull(jobs, seq)
                        pending = None if job is None else (job.submit, ARRIVE, next(seq), job)
                    else:
                        item = heappop(heap)[3]
                    try:
                        decisions = arrive(item, t)
                    except RequestError as e:
                        reject(item, e, t)
                        decisions, kind = (), REJECT
                    else:
                        in_system += 1
                else:  # TIMER
                    item = timer_at = None
                    last_tick = t
                    decisions = tick(t)
                if decisions:  # Start.runtime, without the property call unless folded
                    for d in decisions:
                        heappush(heap, (t + (d.runtime if d.allocation.folds else d.job.runtime),
                                        DEPART, next(seq), d))
                if note is not None:
                    note((t, kind, item, decisions))
                    if not events & _FLUSH_EVERY:
                        flush()
                    stop = False
                else:
                    stop = observe(t, kind, item, decisions) if observe is not None else False
                if next_wakeup is not None:  # next_timer(next_wakeup(), t, timer_at, last_tick)
                    w = next_wakeup()
                    if w is None:
                        timer_at = None
                    elif w != timer_at and not (w <= t and last_tick == t):
                        timer_at = w if w > t else t
                if stop:
                    break
        finally:
            self._pending, self.now, self.events, self.in_system = pending, now, events, in_system
            self.timer, self.last_tick, self._stale = timer_at, last_tick, True


__all__ = ["ARRIVE", "DEPART", "LAST", "MODEL", "REJECT", "TIMER", "Engine", "FixedRuntime", "cycle_gc_paused"]
