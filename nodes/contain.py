"""Task containment: every process a task starts ends with the task (docs/ARCHITECTURE.md,
"Contained tasks").

Two ways, chosen once per process (``mode``; ``MCEMU_CONTAIN=cgroup|session`` forces one):

* ``cgroup``: where a cgroup v2 hierarchy is mounted and writable (the unified hierarchy of a
  hybrid host, or a pure v2 host), each agent has a directory ``BASE/agent-PID`` and each task
  one below it. A task is in its cgroup BEFORE it runs any code of its own (the cold spawn's
  wrapper moves itself in, the warm child is moved in while it is still blocked on its pipe), so
  nothing it forks can leave it: ``setsid``, double forks and a change of account all stay
  inside. ``cgroup.kill`` (Linux 5.14) ends the whole tree at once; without it every pid listed
  in ``cgroup.procs`` is killed until the cgroup is empty. Whoever outlives a dead agent on
  this host ends its tasks by its pid alone (``kill_agent``): the daemon before it faults the
  node's jobs, the launcher when it reaps the node, any later agent or launcher (``sweep``).
* ``session``: elsewhere. The agent is a child subreaper: orphans of its tasks are re-parented
  to it, not to init; a task's end kills its process group, every process of its session and
  the adopted orphans. A ``setsid`` child of a running task is then only found once its parent
  has left it (it is adopted); a dead agent's orphans go to the launcher, also a subreaper.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from nodes.sched import _libc

PR_SET_CHILD_SUBREAPER = 36
KILL_WAIT = 2.0  # seconds a kill waits for a cgroup to be empty (SIGKILLed processes exit in ms)
_base: list = []  # the cached answer of base(): [Path or None]


def set_subreaper() -> bool:
    """Orphans of this process's descendants are re-parented to it (Linux 3.4)."""
    return _libc is not None and _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _cgroup2_mount() -> str | None:
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 2 and parts[2] == "cgroup2":
                    return parts[1]
    except OSError:
        pass
    return None


def base() -> Path | None:
    """The directory under which agents make their cgroups, None where tasks are contained by
    session (no writable cgroup v2, or ``MCEMU_CONTAIN=session``)."""
    if _base:
        return _base[0]
    got = None
    if os.environ.get("MCEMU_CONTAIN", "auto") != "session":
        mnt = _cgroup2_mount()
        if mnt is not None:
            d = Path(mnt) / "mcemu"
            try:
                d.mkdir(exist_ok=True)
                if os.access(d / "cgroup.procs", os.W_OK):
                    got = d
            except OSError:
                pass
    _base.append(got)
    return got


def mode() -> str:
    return "cgroup" if base() is not None else "session"


def agent_dir(pid: int) -> Path | None:
    b = base()
    return None if b is None else b / f"agent-{pid}"


def task_dir(agent_pid: int, job: int, attempt: int, rank: int) -> Path | None:
    """The cgroup of one task of the agent ``agent_pid``."""
    d = agent_dir(agent_pid)
    return None if d is None else d / f"j{job}.a{attempt}.r{rank}"


def _populated(d: Path) -> bool:
    try:
        return "populated 1" in (d / "cgroup.events").read_text()
    except OSError:
        return False


def _procs(d: Path) -> list[int]:
    out = []
    for sub, _dirs, files in os.walk(d):
        if "cgroup.procs" in files:
            try:
                out += [int(p) for p in Path(sub, "cgroup.procs").read_text().split()]
            except (OSError, ValueError):
                pass
    return out


def kill_cgroup(d: Path) -> None:
    """SIGKILL every process in cgroup ``d`` and below it (not waiting)."""
    try:
        (d / "cgroup.kill").write_text("1")
        return
    except FileNotFoundError:
        if not d.exists():
            return
    except OSError:
        pass
    for pid in _procs(d):  # before Linux 5.14: one by one (kill_tree repeats until empty)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def remove(d: Path) -> bool:
    """Remove cgroup ``d`` and its children (empty ones); True when it is gone."""
    for sub, dirs, _files in os.walk(d, topdown=False):
        for x in dirs:
            try:
                os.rmdir(os.path.join(sub, x))
            except OSError:
                pass
    try:
        os.rmdir(d)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def kill_tree(d: Path | None, timeout: float = KILL_WAIT) -> bool:
    """Kill everything in cgroup ``d``, wait until it is empty (at most ``timeout``), remove it;
    True when nothing of it is left."""
    if d is None or not d.exists():
        return True
    end = time.monotonic() + timeout
    kill_cgroup(d)
    while _populated(d) and time.monotonic() < end:
        time.sleep(0.001)
        if _procs(d):
            kill_cgroup(d)
    return remove(d) or not _populated(d)


def kill_agent(pid, timeout: float = KILL_WAIT) -> bool:
    """End every task of the agent that ran as ``pid`` on this host (dead or alive: the agent
    itself is not in its cgroup); True when none is left."""
    if not isinstance(pid, int):
        return True
    return kill_tree(agent_dir(pid), timeout)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def sweep() -> int:
    """End the tasks of agents of this host that are gone (killed while nobody was left to do it);
    returns how many such agents' cgroups were found."""
    b = base()
    if b is None:
        return 0
    n = 0
    try:
        names = os.listdir(b)
    except OSError:
        return 0
    for name in names:
        if name.startswith("agent-") and name[6:].isdigit() and not _alive(int(name[6:])):
            n += 1
            kill_tree(b / name)
    return n


# ---------------------------------------------------------------- session (no cgroup)

def proc_table() -> list[tuple[int, int, int]]:
    """(pid, ppid, session) of every process (/proc)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                rest = f.read().rsplit(b")", 1)[1].split()
            out.append((int(name), int(rest[1]), int(rest[3])))
        except (OSError, IndexError, ValueError):
            pass
    return out


def descendants(roots, table=None) -> set[int]:
    """The pids below ``roots`` (their children, theirs, ...), from one look at /proc."""
    table = proc_table() if table is None else table
    kids: dict[int, list[int]] = {}
    for pid, ppid, _sid in table:
        kids.setdefault(ppid, []).append(pid)
    seen, todo = set(), list(roots)
    while todo:
        for c in kids.get(todo.pop(), ()):
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


def kill_pids(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


__all__ = ["TaskBox", "base", "descendants", "kill_agent", "kill_cgroup", "kill_pids", "kill_tree", "mode",
           "proc_table", "remove", "set_subreaper", "sweep", "task_dir"]


class TaskBox:
    """The agent's side (``nodes.agent.Agent.box``): a cgroup per task below the agent's own
    directory, or (session mode) the agent as subreaper. ``end`` is called when a task's main
    process has ended or is killed: whatever it left behind is killed with it."""

    ENTER = 'echo $$ >"$0" || exit 126; exec "$@"'  # a cold spawn's first act: into its cgroup

    def __init__(self, sweep_dead: bool = True):
        """``sweep_dead``: end the tasks of this host's dead agents first (an agent under a
        launcher leaves that to the launcher: 1024 agents need not each look at 1024 others)."""
        self.dir = agent_dir(os.getpid())
        if self.dir is not None:
            if sweep_dead:
                sweep()
            try:
                self.dir.mkdir(exist_ok=True)
            except OSError:
                self.dir = None
        if self.dir is None:
            set_subreaper()
        self.pending: list[Path] = []  # killed task cgroups not empty yet

    def make(self, job, attempt, rank) -> Path | None:
        """A new cgroup for the task (None in session mode)."""
        if self.dir is None:
            return None
        d = self.dir / task_dir(os.getpid(), job, attempt, rank).name
        try:
            d.mkdir()
        except FileExistsError:  # a re-sent run of a task that could not start
            kill_tree(d)
            d.mkdir()
        return d

    def wrap(self, cg: Path | None, argv: list[str]) -> list[str]:
        """``argv`` preceded by the move into cgroup ``cg``: the process is in it before exec."""
        if cg is None:
            return argv
        return ["/bin/sh", "-c", self.ENTER, str(cg / "cgroup.procs"), *argv]

    @staticmethod
    def enter(cg: Path | None, pid: int) -> None:
        if cg is not None:
            (cg / "cgroup.procs").write_text(str(pid))

    def end(self, cg: Path | None, pid: int, orphans=()) -> None:
        """The task ``pid`` (its cgroup ``cg``) ended or is killed: kill all of it. In session
        mode: its process group, its session, and ``orphans`` (adopted pids) with their trees."""
        if cg is not None:
            kill_cgroup(cg)
            if not remove(cg):
                self.pending.append(cg)
            return
        table = proc_table()  # before the kill: its children are still its own
        mine = {p for p, _pp, sid in table if sid == pid and p != os.getpid()} | descendants({pid}, table)
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        kill_pids(mine | set(orphans) | descendants(set(orphans) | mine, table))

    def tidy(self) -> bool:
        """Remove the killed task cgroups that are empty now; True while some are left."""
        self.pending = [d for d in self.pending if not remove(d)]
        return bool(self.pending)

    def close(self) -> None:
        """Every task of this agent, dead or alive, ends (its teardown)."""
        if self.dir is not None:
            kill_tree(self.dir)
