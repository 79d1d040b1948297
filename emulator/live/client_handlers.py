"""The handlers of the clients' requests: the manager's ``from_clients`` (emulator.live.manager).

Every request (``mcemu submit``, ``cancel``, ``queue``, ``nodes``, ``status``, ``down``; ``comm``
from the interconnect) carries an ``id`` and gets one ``ok`` or ``error`` reply with it. The
daemon has already checked that the sender's principal may send it (emulator.live.auth
``forbidden``); what depends on the request itself is checked here: a submit the policy can
never fit is refused before any change, a command runs as the account the principal may use
(``auth.run_as``), and only an admin cancels another owner's job. The handlers use the
manager's state and core (``_input``, ``_finish``, ``_kill_tasks``, ``_reply``, ``_error``,
``book``: emulator.live.jobs.JobBook) and the read-only views of emulator.live.views.
"""
from __future__ import annotations

from emulator.live import auth
from emulator.live import views
from emulator.live.jobs import ACTIVE
from scheduler.jobs import JobError
from scheduler.topology import Request, RequestError, TopologyError


class ClientHandlers:
    """``on_*(ident, msg)`` for the clients' requests."""

    def __init__(self, manager):
        self.m = manager

    def on_submit(self, ident, msg):
        m = self.m
        try:
            m.policy.normalize(Request.from_dict(msg["request"]))  # refuse what can never fit before any change
        except (RequestError, TopologyError, JobError) as e:
            return m._error(ident, "bad-request", str(e), msg["id"])
        p = m.principal_of(ident)
        try:
            user = auth.run_as(p, msg.get("command"))
        except ValueError as e:
            return m._error(ident, "forbidden", str(e), msg["id"])
        jid = m.book.next_id
        data = {"request": msg["request"], "runtime": msg["runtime"], "name": msg.get("name") or f"job{jid}",
                "command": msg.get("command"), "burn": bool(msg.get("burn", False)), "owner": p.name}
        if user:
            data["user"] = user
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
        t = m.now()
        if jr.state == "running":
            m._kill_tasks(jr)
            m._finish(jr, "cancelled", t, reason=f"cancelled by {p.name}", kind="cancel")
        else:
            m.book.transition(jr, "cancelled", t, f"cancelled by {p.name}")
            m._input("cancel", job=jr.id, t=t)
        m._reply(ident, msg["id"], {"job": jr.id, "state": "cancelled"})

    def on_queue(self, ident, msg):
        m = self.m
        m._reply(ident, msg["id"], views.queue(m, msg.get("jobs"), msg.get("all"), m.principal_of(ident)))

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
            m._kill_tasks(jr)
            m._finish(jr, "failed", m.now(), reason=msg["fail"], kind="depart")
        m._reply(ident, msg["id"], {"job": jr.id})

    def on_ping(self, ident, msg):
        self.m._reply(ident, msg["id"], {"pong": True})

    def on_shutdown(self, ident, msg):
        self.m._reply(ident, msg.get("id") or 0, {"stopping": True})
        self.m.running = False


__all__ = ["ClientHandlers"]
