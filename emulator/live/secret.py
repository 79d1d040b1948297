"""A task's claim to its rank (issue 30): the secret only that task was given.

The cluster has one random key, ``MCEMU_HOME/task.key`` (mode 0600). The secret of rank R of
attempt A of job J is ``HMAC-SHA256(key, "J:A:R")`` in hex: the daemon puts it in that rank's
``run`` message (emulator.live.manager), the node agent in the task's environment as
MCEMU_TASK_SECRET (nodes.spawn, nodes.warm), the task in its ``net_hello`` (nodes.comm), and the
interconnect checks it (emulator.live.netjobs.Membership) by computing it again: no question to
the daemon, no table of secrets to keep in step. Whichever of the daemon and the interconnect
starts first makes the key (``cluster_key``: created whole or not at all), and both read it.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

KEY_FILE = "task.key"
KEY_BYTES = 32
ENV = "MCEMU_TASK_SECRET"

_keys: dict[Path, bytes] = {}  # home -> its key, read once per process
_macs: dict[bytes, hmac.HMAC] = {}


def cluster_key(home) -> bytes:
    """The cluster's task key, made now when ``home`` has none. A file is linked into place
    only once written, so a reader never sees half a key, and of two processes making it at
    the same moment one wins and both read the winner's."""
    path = Path(home) / KEY_FILE
    got = _keys.get(path)
    if got is not None:
        return got
    if not path.exists():
        tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(KEY_BYTES) + "\n")
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
    try:
        key = bytes.fromhex(path.read_text().strip())
    except ValueError:
        key = b""
    if len(key) < 16:
        raise ValueError(f"{path}: a task key is at least 16 random bytes in hex (remove it to make a new one)")
    _keys[path] = key
    return key


def task_secret(key: bytes, job: int, attempt: int, rank: int) -> str:
    """The secret of rank ``rank`` of attempt ``attempt`` of job ``job``."""
    base = _macs.get(key)
    if base is None:  # the key's inner and outer pads hashed once: 1.2 us a rank, not 2.3
        base = _macs[key] = hmac.new(key, digestmod=hashlib.sha256)
    h = base.copy()
    h.update(f"{job}:{attempt}:{rank}".encode())
    return h.hexdigest()


def refusal(key: bytes | None, m: dict) -> tuple[str, str] | None:
    """Why the hello ``m`` does not prove its claim, as (code, reason); None when it does (or
    when there is no key: a membership driven in memory, without a cluster)."""
    if key is None:
        return None
    given = m.get("secret")
    if not given:
        return "bad-secret", (f"a task's hello carries its secret ({ENV}, from its run message): none given "
                              f"for rank {m['rank']} of job {m['job']}")
    want = task_secret(key, m["job"], m["attempt"], m["rank"])
    if not hmac.compare_digest(given.encode(), want.encode()):
        return "bad-secret", f"not the secret of rank {m['rank']} of attempt {m['attempt']} of job {m['job']}"
    return None


__all__ = ["ENV", "KEY_FILE", "cluster_key", "refusal", "task_secret"]
