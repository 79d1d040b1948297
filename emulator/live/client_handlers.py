"""The handlers of the clients' requests: a mixin of emulator.live.manager.ProcessorManager.

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
    """``on_*(ident, m)`` for the clients' requests."""

    def on_submit(self, ident, m):
        try:
            self.policy.normalize(Request.from_dict(m["request"]))  # refuse what can never fit before any change
        except (RequestError, TopologyError, JobError) as e:
            return self._error(ident, "bad-request", str(e), m["id"])
        p = self.principal_of(ident)
        try:
            user = auth.run_as(p, m.get("command"))
        except ValueError as e:
            return self._error(ident, "forbidden", str(e), m["id"])
        jid = self.next_id
        data = {"request": m["request"], "runtime": m["runtime"], "name": m.get("name") or f"job{jid}",
                "command": m.get("command"), "burn": bool(m.get("burn", False)), "owner": p.name}
        if user:
            data["user"] = user
        try:
            t = self._input("submit", job=jid, data=data)
        except (RequestError, TopologyError, JobError, ValueError) as e:
            # the policy refused it at arrive: nothing was registered, the journal event dropped
            return self._error(ident, "bad-request", f"refused by {self.slots.kind} {self.policy.name}: {e}", m["id"])
        self.next_id = jid + 1
        jr = self.jobs[jid]
        if jr.state == "queued":
            self.book.transition(jr, "queued", t)
        self._reply(ident, m["id"], {"job": jid, "state": jr.state})

    def on_cancel(self, ident, m):
        jr = self.jobs.get(m["job"])
        if jr is None or jr.state not in ACTIVE:
            state = jr.state if jr else "unknown"
            return self._error(ident, "not-active", f"job {m['job']} is {state}: nothing to cancel", m["id"])
        p = self.principal_of(ident)
        if not p.admin and jr.owner != p.name:
            return self._error(ident, "forbidden", f"job {jr.id} belongs to {jr.owner!r}: {p.name!r} may cancel "
                                                   f"only its own jobs", m["id"])
        t = self.now()
        if jr.state == "running":
            self._kill_tasks(jr)
            self._finish(jr, "cancelled", t, reason=f"cancelled by {p.name}", kind="cancel")
        else:
            self.book.transition(jr, "cancelled", t, f"cancelled by {p.name}")
            self._input("cancel", job=jr.id, t=t)
        self._reply(ident, m["id"], {"job": jr.id, "state": "cancelled"})

    def on_queue(self, ident, m):
        self._reply(ident, m["id"], views.queue(self, m.get("jobs"), m.get("all"), self.principal_of(ident)))

    def on_nodes(self, ident, m):
        self._reply(ident, m["id"], {"nodes": self.nodes_view()})

    def on_status(self, ident, m):
        self._reply(ident, m["id"], self.status())

    def on_comm(self, ident, m):
        """A job's message statistics from the interconnect (a LOCAL peer: emulator.live.auth),
        kept in its record and the journal's ``comm`` column, for any state (the last report
        of a job may come after its end)."""
        jr = self.jobs.get(m["job"])
        if jr is None or jr.attempt != m["attempt"] or not isinstance(m["stats"], dict):
            return self._error(ident, "bad-job", f"no attempt {m['attempt']} of job {m['job']}", m["id"])
        jr.comm = views._jsonable(m["stats"])
        self.book.record(jr)
        self._reply(ident, m["id"], {"job": jr.id})

    def on_ping(self, ident, m):
        self._reply(ident, m["id"], {"pong": True})

    def on_shutdown(self, ident, m):
        self._reply(ident, m.get("id") or 0, {"stopping": True})
        self.running = False


__all__ = ["ClientHandlers"]
