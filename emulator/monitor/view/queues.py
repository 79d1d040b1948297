"""The queues region: the discipline's parameters and one line per queue, as the discipline
names them, with its waiting jobs, the current queue and the pass boundary; below them the
jobs it holds because down nodes leave no room for them, with the reason."""
from __future__ import annotations

from rich import box
from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from emulator.monitor.view.style import _fmt, _Measure, job_colour

_SKIP = {"discipline", "queues", "running", "blocked", "held", "HQ", "EQ", "LQs", "limits", "preset", "next_wakeup",
         "literal"}
_QSKIP = {"name", "jobs", "current", "in_pass", "priority", "class", "over_threshold", "partition", "running"}
_SHORT = {"stop_alloc": "stop_alloc", "threshold_mode": "mode", "lookahead_window": "lookahead",
          "mean_EQ_length": "mean|EQ|", "priority_job": "prio", "threshold": "thr", "starvation_free": "starv.free", "advance_when_blocked": "adv.blocked"}


def _jobs_text(jobs: list, in_pass=None, width: int = 60) -> Text:
    t = Text()
    cut = None
    if isinstance(in_pass, list) and in_pass:
        cut = in_pass[-1]
    shown = 0
    for jid in jobs:
        piece = f"{jid} "
        if t.cell_len + len(piece) + 6 > width:
            t.append(f"…+{len(jobs) - shown}", style="dim")
            break
        t.append(str(jid), style=job_colour(int(jid)) if isinstance(jid, int) else "")
        t.append(" ")
        shown += 1
        if cut is not None and jid == cut and shown < len(jobs):
            t.append("┊ ", style="yellow")
    return t


def _params_line(d: dict) -> Text:
    t = Text()
    for k, v in d.items():
        if k in _SKIP or isinstance(v, (list, dict)):
            continue
        if k == "boundary" and isinstance(v, dict):
            continue
        key = _SHORT.get(k, k)
        if k == "stop_alloc":
            t.append("stop_alloc=", style="dim")
            t.append("ON " if v else "off ", style="bold red" if v else "green")
            continue
        t.append(f"{key}=", style="dim")
        t.append(f"{_fmt(v)} ")
    b = d.get("boundary")
    if isinstance(b, dict):
        t.append("boundary=", style="dim")
        t.append(f"{b.get('queue')} after job {b.get('last_job')} ")
    return t


def queue_lines(d: dict, width: int, max_lines: int) -> list[Text]:
    """One line per queue, as the discipline names them, with its parameters (N_k, sizes,
    BQSL...), its waiting jobs, a marker on the current queue and the pass boundary."""
    queues = d.get("queues") or []
    lines = []
    name_w = max((len(str(q.get("name", ""))) for q in queues), default=2)
    for q in queues:
        t = Text(no_wrap=True, overflow="ellipsis")
        cur = q.get("current")
        t.append("▶ " if cur else "  ", style="bold yellow")
        t.append(str(q.get("name", "")).ljust(name_w), style="bold" if q.get("jobs") else "dim")
        for k, v in q.items():
            if k in _QSKIP:
                continue
            if k == "sizes" and isinstance(v, (list, tuple)) and len(v) == 2:
                t.append(f" {v[0]}+" if v[1] is None else (f" {v[0]}-{v[1]}" if v[0] != v[1] else f" {v[0]}"),
                         style="dim")
                continue
            t.append(f" {_SHORT.get(k, k)}=", style="dim")
            t.append(_fmt(v), style="bold red" if (k == "N_k" and q.get("over_threshold")) else "")
        jobs = q.get("jobs") or []
        t.append(f" [{len(jobs)}] ", style="bold" if jobs else "dim")
        t.append_text(_jobs_text(jobs, q.get("in_pass"), max(10, width - t.cell_len)))
        lines.append((bool(jobs) or "N_k" in q, t))
    if len(lines) > max_lines:  # keep the queues that hold jobs; name the empty ones
        keep = [t for busy, t in lines if busy]
        empty = [str(q.get("name")) for q in queues if not q.get("jobs")]
        if len(keep) >= max_lines:
            keep = keep[:max_lines - 1] + [Text(f"  … {len(keep) - max_lines + 1} more queues", style="dim")]
            return keep
        keep.append(Text("  empty: " + " ".join(empty), style="dim", no_wrap=True, overflow="ellipsis"))
        if len(keep) > max_lines:
            keep = [t for busy, t in lines if busy][:max_lines]
        return keep[:max_lines]
    return [t for _, t in lines]


def held_lines(d: dict, most: int = 3) -> list[Text]:
    """The jobs the discipline holds (they cannot fit while down nodes are out), one line
    each with the reason, at most ``most`` lines."""
    held = [h for h in d.get("held") or () if isinstance(h, dict)]
    out = []
    for i, h in enumerate(held):
        t = Text(no_wrap=True, overflow="ellipsis")
        if i == most - 1 and len(held) > most:
            t.append(f"⏸ held: {len(held) - i} more jobs ", style="magenta")
            t.append(" ".join(str(x.get("id")) for x in held[i:]), style="dim")
            out.append(t)
            break
        jid = h.get("id")
        t.append("⏸ held ", style="magenta")
        t.append(str(jid), style=job_colour(jid) if isinstance(jid, int) else "")
        t.append(f" {h.get('request', '')}: {h.get('reason', '')}", style="magenta")
        out.append(t)
    return out


def queues_panel(d: dict, width: int, max_h: int) -> tuple[Panel, int]:
    inner = width - 4
    head = _params_line(d)
    head_lines = len(head.wrap(_Measure, inner)) if head.plain else 0
    blocked = d.get("blocked")
    held = held_lines(d)
    fixed = head_lines + (1 if blocked else 0) + len(held)
    qlines = queue_lines(d, inner, max(1, max_h - 2 - fixed))
    parts = ([head] if head.plain else []) + qlines
    if blocked:
        b = Text("⚠ " + str(blocked), style="yellow", no_wrap=True, overflow="ellipsis")
        parts.append(b)
    parts += held
    if not d:
        parts = [Text("no discipline snapshot yet", style="dim")]
    name = d.get("discipline", "?")
    return (Panel(Group(*parts), title=f"queues · {name}", title_align="left", box=box.ROUNDED, padding=(0, 1)),
            len(parts) + 2 + max(0, head_lines - 1))
