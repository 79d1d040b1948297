"""What a principal may ask of the daemon, and how much: quotas, request rates, job names.

One client must not be able to stall the cluster (issue 30: 20,000 jobs queued in 4.6 s, then
40 ``queue --all`` at half a second of the daemon's one loop each). The daemon's loop bounds
its own work per turn (emulator.live.daemon); this module bounds what one principal may ask:

* **Queued jobs**: a ``client`` principal may have at most ``max_jobs`` jobs queued or running
  (``QUEUE_QUOTA``, 10,000 by default; the configuration's ``client_max_jobs`` where set, 0 for
  none). A submit beyond it is refused (``quota``) and changes nothing. Like Slurm's
  ``MaxSubmitJobs`` of an association.
* **Request rate**: a ``client`` principal's requests are metered by a token bucket
  (``RATE`` requests a second, bursts of ``BURST``; the configuration's ``client_rate``). A
  request with no token left is refused (``rate-limited``, the wait it needs in the message),
  before it is decoded further or changes anything; ``Client.submit_many`` waits and resends.
* **Listings being built**: an unpaged ``queue`` is built over several turns
  (emulator.live.client_handlers), once for every request of the same rows that comes while
  it is built; a principal may have at most ``LISTINGS`` different ones being built and
  ``ASKED`` requests waiting for them (``busy``): each holds its rows until it is sent.

The cluster's admin and LOCAL peers (the owner over ipc, the interconnect) have no quota and
no rate: the admin must be able to act under any client load. Node keys send node messages,
which are never metered (their heartbeats are their life).

Job names are shown on other users' terminals (``mcemu queue``, the monitor): a name with a
control character (C0, DEL, C1: terminal escape sequences, newlines) or a bidirectional
override is refused at submit (``bad-name``).

A request of the other topology's kind (a cube on a mesh, a submesh on a hypercube) is refused at
submit (``bad-request``): the policies take it as its processor count (scheduler.topology
``normalize``, as the simulator keeps doing), so a user who asked for a 3-cube on an 8x8 mesh
would get a 4x2 submesh without a word.
"""
from __future__ import annotations

import unicodedata

QUEUE_QUOTA = 10_000
RATE = 2_000.0
BURST = 4_000.0
LISTINGS = 4
ASKED = 64

# the bidirectional embeddings, overrides and isolates: they reorder what follows them on screen
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def bad_name(name: str) -> str | None:
    """Why a job name may not be shown to others as it is, or None."""
    for i, ch in enumerate(name):
        if ch in _BIDI or unicodedata.category(ch) == "Cc":
            return (f"job name has the control character {ascii(ch)} at position {i}: names are shown on other "
                    f"users' terminals, so control characters and bidirectional overrides are refused")
    return None


def wrong_kind(request: dict, topology) -> str | None:
    """Why ``request`` (the protocol's ``{"cube": k}``, ``{"shape": [w, h]}``) does not belong on
    ``topology`` (scheduler.topology), or None: a node count fits any."""
    if "cube" in request and topology.kind != "hypercube":
        k = request["cube"]
        return (f"--cube {k} asks for a {k}-cube, but this cluster is {topology}: "
                f"give --shape WxH (a submesh) or -n N (a node count)")
    if "shape" in request and topology.kind != "mesh":
        w, h = request["shape"]
        return (f"--shape {w}x{h} asks for a submesh, but this cluster is {topology}: "
                f"give --cube D (a subcube) or -n N (a node count)")
    return None


class Admission:
    """Per-principal quotas and request rates (see the module's docstring)."""

    def __init__(self, cfg: dict, clock):
        self.clock = clock
        q = cfg.get("client_max_jobs")
        self.max_jobs = QUEUE_QUOTA if q is None else int(q)
        rate = cfg.get("client_rate")
        self.rate = float(RATE if rate is None else rate)
        self.burst = max(self.rate * BURST / RATE, 1.0)
        self.buckets: dict[str, list] = {}  # principal name -> [tokens, when counted]

    @staticmethod
    def metered(p) -> bool:
        return p.role == "client"

    def spend(self, p) -> str | None:
        """Take one token of ``p``'s bucket; the refusal's reason when none is left."""
        if not self.rate or not self.metered(p):
            return None
        now = self.clock()
        b = self.buckets.get(p.name)
        if b is None:
            if len(self.buckets) > 10_000:  # names of principals long gone (keys revoked)
                self.buckets.clear()
            b = self.buckets[p.name] = [self.burst, now]
        b[0] = min(self.burst, b[0] + (now - b[1]) * self.rate)
        b[1] = now
        if b[0] < 1.0:
            return (f"{p.name!r} exceeded its request rate ({self.rate:g} a second, bursts of {self.burst:g}): "
                    f"retry after {(1.0 - b[0]) / self.rate:.3f} s")
        b[0] -= 1.0
        return None

    def quota(self, p, active: int) -> str | None:
        """Why ``p``, with ``active`` jobs queued or running, may not queue one more, or None."""
        if self.max_jobs and self.metered(p) and active >= self.max_jobs:
            return (f"{p.name!r} has {active} jobs queued or running, its quota is {self.max_jobs}: "
                    f"submit more when some have ended")
        return None


__all__ = ["ASKED", "Admission", "BURST", "LISTINGS", "QUEUE_QUOTA", "RATE", "bad_name", "wrong_kind"]
