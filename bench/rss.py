"""Peak resident memory of the calling process, for the bench scripts.

Why not `resource.getrusage(RUSAGE_SELF).ru_maxrss`: a child started by fork + exec (what
multiprocessing's "spawn" does on Linux) inherits the parent's high-water mark at exec, so a
child of a 1.6 GB parent (one that generated a 10M-row month) "peaks" at 1.6 GB whatever it
does. Measured: a spawned child of a parent holding 1 GB reported ru_maxrss 1039 MB while its
own VmHWM was 15 MB. VmHWM belongs to the address space exec creates, so it is the child's
own peak. ru_maxrss stays the fallback off Linux.
"""

from __future__ import annotations

import resource
from pathlib import Path

_STATUS = Path("/proc/self/status")


def _status_kb(field: str) -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def peak_rss_mb() -> float:
    """This process's own peak RSS in MiB (since start, or since the last `reset_peak`)."""
    kb = _status_kb("VmHWM")
    if kb is None:
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024


def current_rss_mb() -> float:
    kb = _status_kb("VmRSS")
    return (kb if kb is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024


def reset_peak() -> bool:
    """Start a new high-water mark (Linux >= 4.0: clear_refs 5), so the next reading is the
    peak of what runs from here on. False where the kernel does not allow it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True
