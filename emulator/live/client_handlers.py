"""The handlers of the clients' requests: the manager's ``from_clients`` (emulator.live.manager).

Every request (``mcemu submit``, ``cancel``, ``queue``, ``nodes``, ``status``, ``down``; ``comm``
from the interconnect) carries an ``id`` and gets one ``ok`` or ``error`` reply with it. The
daemon has already checked that the sender's principal may send it (emulator.live.auth
``forbidden``); what depends on the request itself is checked here: a submit the policy can
never fit, or of the other topology's kind (admission ``wrong_kind``), is refused before any
change, a command runs as the account the principal may use (``auth.run_as``), and only an
admin cancels another owner's job. The handlers use the manager's state and core (``_input``,
``_finish``, ``_kill_tasks``, ``_reply``, ``_error``, ``book``: emulator.live.jobs.JobBook) and
the read-only views of emulator.live.views.
"""
from __future__ import annotations

import os
import time
from collections import deque

from emulator.live import auth
from emulator.live import home as homemod
from emulator.live import protocol as P
from emulator.live import views
from emulator.live.admission import ASKED, LISTINGS, bad_name, wrong_kind
from emulator.live.jobs import ACTIVE
from scheduler.jobs import JobError
from scheduler.topology import Request, RequestError, TopologyError

TAIL_BYTES = 128 * 1024  # bytes of output one ``tail`` reply carries at most (a turn of the loop stays short)
# seconds by which a file of an attempt may seem older than its start: the model's clock against
# the wall's, and a file's times taken from the kernel's coarse clock (a tick behind)
TAIL_SLACK = 0.1


class ClientHandlers:
    """``on_*(ident, msg)`` for the clients' requests."""

    def __init__(self, manager):
        self.m = manager
        # unpaged ``queue`` requests being built, per principal (``work``): a listing of
        # 20,000 rows is 20 slices, served in turn with every other principal's
        self.listings: dict = {}

    def on_submit(self, ident, msg):
        m = self.m
        why = bad_name(msg.get("name") or "")
        if why:
            return m._error(ident, "bad-name", why, msg["id"])
        why = wrong_kind(msg["request"], m.topology)
        if why:
            return m._error(ident, "bad-request", why, msg["id"])
        try:
            m.policy.normalize(Request.from_dict(msg["request"]))  # refuse what can never fit before any change
        except (RequestError, TopologyError, JobError) as e:
            return m._error(ident, "bad-request", str(e), msg["id"])
        p = m.principal_of(ident)
        why = m.admission.quota(p, m.book.active.get(p.name, 0))
        if why:
            return m._error(ident, "quota", why, msg["id"])
        try:
            user = auth.run_as(p, msg.get("command"))
            if user:
                auth.can_run(user, msg["command"], m.home)
        except ValueError as e:
            return m._error(ident, "forbidden", str(e), msg["id"])
        paths = {k: msg[k] for k in ("cwd", "stdin") if msg.get(k)}
        if paths and not msg.get("command"):
            return m._error(ident, "bad-request", f"{' and '.join(paths)} only go with a command", msg["id"])
        jid = m.book.next_id
        data = {"request": msg["request"], "runtime": msg["runtime"], "name": msg.get("name") or f"job{jid}",
                "command": msg.get("command"), "burn": bool(msg.get("burn", False)), "owner": p.name}
        if user:
            data["user"] = user
        data.update(paths)  # journaled with the submit: a recovered daemon's replay keeps them
        try:
            t = m._input("submit", job=jid, data=data)
        except (RequestError, TopologyError, JobError, ValueError) as e:
            # the policy refused it at arrive: nothing was registered, the journal event dropped
            return m._error(ident, "bad-request", f"refused by {m.slots.kind} {m.policy.name}: {e}", msg["id"])
        jr = m.jobs[jid]
        if jr.state == "queued":
            m.book.transition(jr, "queued", t)
        m._reply(ident, msg["id"], {"job": jid, "state": jr.state})

    def on_cancel(self, ident, msg):
        m = self.m
        jr = m.jobs.get(msg["job"])
        if jr is None or jr.state not in ACTIVE:
            state = jr.state if jr else "unknown"
            return m._error(ident, "not-active", f"job {msg['job']} is {state}: nothing to cancel", msg["id"])
        p = m.principal_of(ident)
        if not p.admin and jr.owner != p.name:
            return m._error(ident, "forbidden", f"job {jr.id} belongs to {jr.owner!r}: {p.name!r} may cancel "
                                                f"only its own jobs", msg["id"])
        self.cancel(jr, f"cancelled by {p.name}" + (f": {msg['why']}" if msg.get("why") else ""))
        m._reply(ident, msg["id"], {"job": jr.id, "state": "cancelled"})

    def cancel(self, jr, reason: str) -> None:
        """End active job ``jr`` as cancelled: its tasks killed, the policy told."""
        m, t = self.m, self.m.now()
        if jr.state == "running":
            m._kill_tasks(jr)
            m._finish(jr, "cancelled", t, reason=reason, kind="cancel")
        else:
            m.book.transition(jr, "cancelled", t, reason)
            m._input("cancel", job=jr.id, t=t)

    def cancel_pending(self, recovered: bool) -> None:
        """The cancels ``mcemu run`` recorded while this home's daemon was down (home.record_cancel),
        applied by the daemon that recovers its journal; a new cluster's jobs are not those: dropped."""
        for jid, why in homemod.pending_cancels(self.m.home):
            jr = self.m.jobs.get(jid)
            if recovered and jr is not None and jr.state in ACTIVE:
                self.cancel(jr, why or "cancelled while the daemon was down")

    def on_queue(self, ident, msg):
        """A page (``limit``) is answered now; an unpaged request gets every row in one reply,
        built a page per slice over as many turns as it takes (``work``): its first page now."""
        m, p = self.m, self.m.principal_of(ident)
        if msg.get("limit"):
            return m._reply(ident, msg["id"], views.page(m, msg.get("jobs"), msg.get("all"), p, msg.get("after", 0),
                                                         msg["limit"]))
        mine = self.listings.setdefault(p, deque())
        key = (None if p.admin else p.name, bool(msg.get("all")), tuple(msg.get("jobs") or ()))
        if not p.admin and sum(len(ls.to) for ls in mine) >= ASKED:
            return m._error(ident, "busy", f"{p.name!r} has {ASKED} listings unanswered: ask again when they are "
                                           f"answered, or ask for pages (limit)", msg["id"])
        for ls in mine:
            if ls.key == key and ls.frame is None:  # the same rows: one build answers both
                ls.to.append((ident, msg["id"]))
                return
        if len(mine) >= LISTINGS and not p.admin:
            return m._error(ident, "busy", f"{len(mine)} different listings of {p.name!r} are being built: ask "
                                           f"again when they are answered, or ask for pages (limit)", msg["id"])
        mine.append(_Listing(ident, msg, p, key))
        self._slice(p)

    def _slice(self, p) -> None:
        """One page of ``p``'s oldest listing, or, once it has its last page, its reply to
        one of the requests it answers."""
        mine = self.listings[p]
        out = mine[0].more(self.m)
        if out is not None:
            self.m.outbox.append(out)
            if not mine[0].to:
                mine.popleft()
        if not mine:
            del self.listings[p]

    def pending(self) -> bool:
        return bool(self.listings)

    def work(self, until: float) -> None:
        """Slices of the listings being built, one per principal in turn, until the clock
        reaches ``until``: no listing costs the loop more than a slice per turn."""
        clock = self.m.clock
        while self.listings and clock() < until:
            for p in list(self.listings):
                self._slice(p)
                if clock() >= until:
                    return

    def on_nodes(self, ident, msg):
        self.m._reply(ident, msg["id"], {"nodes": self.m.nodes_view()})

    def on_status(self, ident, msg):
        self.m._reply(ident, msg["id"], self.m.status())

    def on_comm(self, ident, msg):
        """A job's message statistics from the interconnect (a LOCAL peer: emulator.live.auth),
        kept in its record and the journal's ``comm`` column, for any state (the last report
        of a job may come after its end)."""
        m = self.m
        jr = m.jobs.get(msg["job"])
        if jr is None or jr.attempt != msg["attempt"] or not isinstance(msg["stats"], dict):
            return m._error(ident, "bad-job", f"no attempt {msg['attempt']} of job {msg['job']}", msg["id"])
        jr.comm = views._jsonable(msg["stats"])
        m.book.record(jr)
        if msg.get("fail") and jr.state == "running":  # the interconnect found it deadlocked
            m._abort(jr, msg["fail"])
        m._reply(ident, msg["id"], {"job": jr.id})

    def on_tail(self, ident, msg):
        """The output of job ``job`` from offsets ``at`` (one a rank), for ``mcemu run`` on a host
        that cannot read this home's ``output/`` (emulator.cli.run): ``[[start, bytes], ...]``, a
        rank's bytes from ``start`` = its offset, or 0 when its file is shorter than that (a new
        attempt's file, begun afresh). Its owner's and the admin's only, as a cancel. At most
        TAIL_BYTES a reply, an equal share a rank, so that a rank that prints fast starves no
        other; ``more``: a rank had more than its share (the reader asks again at once)."""
        m = self.m
        jr = m.jobs.get(msg["job"])
        if jr is None:
            return m._error(ident, "unknown-job", f"no job {msg['job']}", msg["id"])
        p = m.principal_of(ident)
        if not p.admin and jr.owner != p.name:
            return m._error(ident, "forbidden", f"job {jr.id} belongs to {jr.owner!r}: {p.name!r} may read "
                                                f"only its own jobs' output", msg["id"])
        # no more files than the job has ranks: a request of 16,384 offsets is 16,384 opens
        at, out, budget, more = msg["at"][:len(jr.nodes)], [], TAIL_BYTES, False
        if jr.command and jr.state != "queued" and jr.start is not None:  # before, a file is no one's yet
            # a file last written before this attempt started is an earlier attempt's (a requeued
            # job's rank not started again yet): its files are on the wall clock, not the model's
            since = time.time() - (m.now() - jr.start) * m.time_unit - TAIL_SLACK
            share = TAIL_BYTES // max(1, len(at))
            for rank, off in enumerate(at):
                n = min(share, budget)
                start, data = tail_file(m.home / "output" / f"job{int(jr.id)}.{rank}.out", off, n, since)
                budget -= len(data)
                more = more or len(data) == n
                out.append([start, data])
        m._reply(ident, msg["id"], {"data": out, "state": jr.state, "attempt": jr.attempt, "more": more})

    def on_ping(self, ident, msg):
        self.m._reply(ident, msg["id"], {"pong": True})

    def on_shutdown(self, ident, msg):
        self.m._reply(ident, msg.get("id") or 0, {"stopping": True})
        self.m.running = False


def tail_file(path, off: int, n: int, since: float = 0.0) -> tuple[int, bytes]:
    """Up to ``n`` bytes of ``path`` from ``off``, or from 0 when it is shorter than ``off`` (a
    file begun afresh): (where they start, the bytes); (off, b"") when there is none, or when
    it was last written before ``since`` (wall time)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return off, b""
    try:
        st = os.fstat(fd)
        if st.st_mtime < since:
            return off, b""
        if st.st_size < off:
            off = 0
        return off, (os.pread(fd, n, off) if n > 0 else b"")
    except OSError:
        return off, b""
    finally:
        os.close(fd)


class _Listing:
    """An unpaged ``queue`` request being built: its rows packed a page at a time, then
    joined once and sent to each request it answers (``to``: the same rows asked again while
    they were being built)."""

    __slots__ = ("to", "key", "jobs", "all", "viewer", "after", "parts", "n", "now", "gang", "frame")

    def __init__(self, ident, msg, viewer, key):
        self.to, self.key, self.viewer = [(ident, msg["id"])], key, viewer
        self.jobs, self.all = msg.get("jobs"), msg.get("all")
        self.after, self.parts, self.n, self.frame = 0, [], 0, None
        self.now = self.gang = None

    def more(self, m):
        """Build one more page, or send one reply once built: its (ident, frame), or None."""
        if self.frame is None:
            pg = views.page(m, self.jobs, self.all, self.viewer, self.after)
            pk = P.packer()
            self.parts.extend(pk.pack(r) for r in pg["jobs"])
            self.n += len(pg["jobs"])
            if pg["next"] is not None:
                self.after = pg["next"]
                return None
            self.now, self.gang = pg["now"], pg["gang"]
            self.frame = b"".join(self.parts)
            self.parts = [self.frame]
        ident, rid = self.to.pop(0)
        return ident, P.encode_rows("ok", {"id": rid}, {"now": self.now, "gang": self.gang}, "jobs",
                                    self.n, self.parts)


__all__ = ["ClientHandlers", "TAIL_BYTES", "tail_file"]
