"""What ``mcemu net links`` shows of a live interconnect: every channel's utilization over
the last window of wall time (one LINK_WINDOW), and how late the interconnect released its
messages against the model's delivery times (its own part of the timing error; the task's
wake-up adds the rest, nodes.comm measures that)."""
from __future__ import annotations

from scheduler.network.stats import percentile
from scheduler.network.wormhole import Wormhole

LINK_WINDOW = 1.0  # seconds of wall time per utilization window
KEEP = 10_000  # release lateness samples kept


class Links:
    def __init__(self, net: Wormhole):
        self.net = net
        self.windows = [(0.0, [0.0] * net.channels.count)]  # (network time, busy times): last two
        self.lateness: list[float] = []  # wall s after its due time that each release went out

    def late(self, seconds: float) -> None:
        self.lateness.append(seconds)
        if len(self.lateness) > 2 * KEEP:
            del self.lateness[:KEEP]

    def roll(self) -> None:
        """A window ends (the loop calls it every LINK_WINDOW)."""
        self.windows = [self.windows[-1], (self.net.now, self.net.busy_snapshot())]

    def doc(self, dilation: float) -> dict:
        net = self.net
        t_then, base = self.windows[0]
        util = net.utilization(base, t_then, net.now)
        ch = net.channels
        used = [c for c in range(ch.count) if base[c] or net.busy_time(c)]
        late = sorted(self.lateness[-KEEP:])
        q = (lambda pct: round(percentile(late, pct) * 1e6) if late else None)
        return {"topology": str(ch.topology), "window_us": [net.us(t_then), net.us(net.now)],
                "release_lateness_us": {"p50": q(50), "p99": q(99), "n": len(late)},
                "dilation": dilation, "messages": net.delivered, "in_flight": net.in_flight,
                "channels": [{"channel": ch.name(c), "from": ch.ends(c)[0], "to": ch.ends(c)[1],
                              "utilization": util[c]} for c in used]}


__all__ = ["LINK_WINDOW", "Links"]
