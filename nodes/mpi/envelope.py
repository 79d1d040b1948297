"""The MPI layer's message envelope: the 9 bytes before the user's bytes in every message
(context id, tag, kind: a pickled object or raw buffer bytes). Its own module, without numpy,
because the interconnect reads it too (emulator.live.ic_virtual: a wait that names envelopes)
and should not load the MPI layer's numpy at start-up."""
from __future__ import annotations

import struct

ENVELOPE = struct.Struct("<IiB")   # context, tag, kind
HEAD = ENVELOPE.size
OBJ, BUF = 0, 1                    # kinds: a pickled object, raw buffer bytes
MORE = 0x80                        # in a kind: a packet of a longer message, more follow (matching)

__all__ = ["BUF", "ENVELOPE", "HEAD", "MORE", "OBJ"]
