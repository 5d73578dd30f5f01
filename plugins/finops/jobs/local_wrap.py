"""The `local` provider's instance: runs the job's argv as a child and records how it ended.

    python -m finops.jobs.local_wrap <instance dir> -- <argv...>
    python -m finops.jobs.local_wrap --store-exit <name> -- <argv...>   (a cloud instance)

The wrapper leads its own process group (the provider signals the group: SIGTERM is a spot
reclaim's warning, SIGKILL the reclaim) and writes `<instance dir>/exit` with the child's
return code once it ends, so whoever watches the instance later, from another process (the
triggerer, a retried task), can tell a clean finish from a crash. A SIGKILLed group leaves no
`exit` file: the instance is gone, as a reclaimed spot instance is. On a cloud instance
(`--store-exit`) the code goes to `<name>` in the job's checkpoint store instead
(FINOPS_CHECKPOINT_URI), which the orchestrator already reads.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: local_wrap <instance dir> -- <argv...>", file=sys.stderr)
        return 2
    if argv[0] == "--store-exit":
        return _store_exit(argv[1], argv[3:]) if len(argv) > 3 and argv[2] == "--" else 2
    inst = Path(argv[0])
    # The group gets every signal the provider sends, so the wrapper only has to outlive the
    # child; a Python handler (not SIG_IGN) is reset by exec, so the child still sees SIGTERM.
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    with (inst / "log").open("ab") as out:
        child = subprocess.Popen(argv[2:], stdout=out, stderr=subprocess.STDOUT)
        code = child.wait()
    tmp = inst / "exit.tmp"
    tmp.write_text(str(code))
    os.replace(tmp, inst / "exit")
    return 0


def _store_exit(name: str, cmd: list[str]) -> int:
    from finops.jobs.stores import open_store

    signal.signal(signal.SIGTERM, lambda signum, frame: None)  # the child saves; we report
    code = subprocess.call(cmd)
    open_store(os.environ["FINOPS_CHECKPOINT_URI"]).put(name, str(code).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
