"""A user's program for tests/test_live_net.py: ``ring K`` sends K messages from each rank to
the next (payloads of varying length that carry their sender and sequence number) and checks
that it gets K from the previous rank, in order and intact; ``hold`` says hello and waits
for one message (``--skip R``: rank R never connects, so a test may play it); ``flood K B``:
rank 0 sends K messages of B bytes to rank 1 without waiting for any (flow control paces it),
rank 1 takes them."""
import hashlib
import sys

from nodes.comm import Comm


def payload(rank: int, seq: int) -> bytes:
    body = hashlib.sha256(f"{rank}:{seq}".encode()).digest() * (1 + (seq * 37 + rank) % 100)
    return f"{rank}:{seq}:".encode() + body


def main(argv) -> int:
    import os

    if argv[0] == "hold":
        if len(argv) > 2 and argv[1] == "--skip" and os.environ["MCEMU_RANK"] == argv[2]:
            import time
            time.sleep(600)
            return 0
        comm = Comm()
        print("ready", flush=True)
        source, data = comm.recv()
        print(f"got {data!r} from {source}")
        return 0
    if argv[0] == "flood":
        k, size = int(argv[1]), int(argv[2])
        comm = Comm()
        if comm.Get_rank() == 0:
            for seq in range(k):
                comm.send(1, seq.to_bytes(4, "big") * (size // 4))
        else:
            for seq in range(k):
                _, data = comm.recv(timeout=120)
                assert data[:4] == seq.to_bytes(4, "big") and len(data) == size
            print(f"flood: {k} messages of {size} bytes in order")
        return 0
    k = int(argv[1])
    comm = Comm()
    me, n = comm.Get_rank(), comm.Get_size()
    for seq in range(k):
        comm.send((me + 1) % n, payload(me, seq))
    prev = (me - 1) % n
    for seq in range(k):
        source, data = comm.recv(timeout=60)
        if source != prev or data != payload(prev, seq):
            print(f"rank {me}: message {seq} wrong: from {source}, {data[:20]!r}", file=sys.stderr)
            return 1
    print(f"rank {me}: {k} messages from {prev} in order and intact")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
