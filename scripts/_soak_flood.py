#!/usr/bin/env python
"""The soak's hostile client (scripts/soak.py starts it as a process of its own, with a client
key held to the daemon's quota and rate): bursts of submits and unpaged ``queue --all`` sent back
to back, every reply's code counted, what was accepted cancelled; JSON on stdout at the end."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from emulator.live.client import Client, ClientError  # noqa: E402

EXPECTED = {"quota", "rate-limited", "busy"}  # the daemon's admission refusing the flood


def flooder(a) -> None:
    """The hostile client (its own process): every ``--flood-every`` s, ``--flood`` submits and 20
    unpaged ``queue --all`` sent back to back, each reply's code counted, then a cancel of every
    job it got (a rate refusal is waited out, as its message says). JSON on stdout at the end."""
    from emulator.live import protocol as P
    from emulator.live.client import DaemonError

    got = {k: Counter() for k in ("submit", "queue", "cancel")}
    errors, bursts, n, silent = Counter(), 0, 0, []
    c = Client(a.endpoint, timeout=20.0, key=a.key)
    while not os.path.exists(a.stop_file):
        bursts += 1
        sent = {}
        for i in range(a.flood + 20):
            rid = next(c._ids)
            if i < a.flood:
                n += 1
                c.sock.send(P.encode("submit", id=rid, request={"shape": [1, 1]}, runtime=2.0, name=f"flood-{n}"))
            else:
                c.sock.send(P.encode("queue", id=rid, all=True))
            sent[rid] = "submit" if i < a.flood else "queue"
        jobs, deadline = [], time.monotonic() + 30
        while sent and time.monotonic() < deadline:
            if c.sock.poll(500):
                m = P.decode(c.sock.recv(), max_size=P.MAX_REPLY)
                what = sent.pop(m.get("id"), None)
                if what is not None:
                    got[what]["ok" if m["type"] == "ok" else m["code"]] += 1
                    if what == "submit" and m["type"] == "ok":
                        jobs.append(m["data"]["job"])
        if sent:  # the daemon was killed meanwhile (the soak checks when): its answers are lost with it
            silent.append(time.time())
            c.close()
            c = Client(a.endpoint, timeout=20.0, key=a.key)
        for jid in jobs:
            for _ in range(200):
                try:
                    c.cancel(jid)
                    got["cancel"]["ok"] += 1
                except DaemonError as e:
                    got["cancel"][e.code] += 1
                    if e.code == "rate-limited":
                        time.sleep(0.02)
                        continue
                except ClientError:
                    silent.append(time.time())
                    c.close()
                    c = Client(a.endpoint, timeout=20.0, key=a.key)
                break
        end = time.monotonic() + a.flood_every
        while time.monotonic() < end and not os.path.exists(a.stop_file):
            time.sleep(0.2)
    c.close()
    for what, codes in got.items():  # "not-active": a job that ended before its cancel came
        errors.update({f"{what} {k}": v for k, v in codes.items() if k not in EXPECTED | {"ok", "not-active"}})
    print(json.dumps({"bursts": bursts, **{k: dict(v) for k, v in got.items()}, "errors": dict(errors),
                      "unanswered_at": silent,
                      "refused": sum(v for codes in got.values() for k, v in codes.items() if k in EXPECTED)}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--key", required=True, help="the client key file (held to quota and rate)")
    ap.add_argument("--stop-file", required=True, help="the burst loop ends once this file exists")
    ap.add_argument("--flood", type=int, required=True, help="submits per burst")
    ap.add_argument("--flood-every", type=float, required=True, help="seconds between two bursts")
    flooder(ap.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
