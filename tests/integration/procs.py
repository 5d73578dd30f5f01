"""Process groups for the multi-process tests: start each service in its own session, kill a
whole group (and any child that left it), and kill everything still alive at interpreter exit,
so a failing or interrupted test never leaves an Airflow process behind."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

_LIVE: dict[int, ServiceProcess] = {}  # pid -> process, everything started and not yet reaped


@dataclass
class ServiceProcess:
    """One service (`airflow scheduler`, a celery worker ...) in its own process group."""

    name: str
    popen: subprocess.Popen
    log_path: Path
    known: set[int] = field(default_factory=set)  # pids seen in its tree (for stragglers)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tree(self) -> list[psutil.Process]:
        """The leader and every live descendant (also remembered, so a kill finds them later)."""
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            procs = []
        self.known.update(p.pid for p in procs)
        return procs

    def log_tail(self, chars: int = 4000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return text[-chars:]

    def kill(self, sig: int = signal.SIGKILL, timeout: float = 20.0) -> None:
        """Signal the whole process group, then any descendant that escaped it; wait for all."""
        procs = self.tree()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.send_signal(sig)
        _, alive = psutil.wait_procs(procs, timeout=timeout)
        for p in alive:  # SIGTERM ignored: no mercy at cleanup
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(alive, timeout=5)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)
        _LIVE.pop(self.pid, None)

    def stop(self, timeout: float = 15.0) -> None:
        """Graceful first (SIGTERM to the group), SIGKILL whatever is left."""
        if not self.alive() and not [p for p in self.tree() if p.is_running()]:
            _LIVE.pop(self.pid, None)
            return
        self.kill(signal.SIGTERM, timeout=timeout)
        self.kill(signal.SIGKILL, timeout=5)

    def survivors(self) -> list[int]:
        """Pids ever seen in this tree that still run (should be [] after kill)."""
        out = []
        for pid in self.known:
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(pid)
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    out.append(pid)
        return out


def start(name: str, argv: list[str], *, env: dict[str, str], cwd: Path, log_dir: Path) -> ServiceProcess:
    """Start `argv` in a new session (its own process group), output to log_dir/<name>.log."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    fh = log_path.open("ab")
    try:
        popen = subprocess.Popen(  # noqa: S603 - argv built by the test, no shell
            argv,
            env=env,
            cwd=cwd,
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        fh.close()
    proc = ServiceProcess(name, popen, log_path)
    _LIVE[popen.pid] = proc
    return proc


def kill_all() -> None:
    """Kill every process group this interpreter started and did not reap (atexit, finalizers)."""
    for proc in list(_LIVE.values()):
        with contextlib.suppress(Exception):
            proc.kill(signal.SIGKILL, timeout=5)
    _LIVE.clear()


def wait_until(what: str, check, timeout: float, interval: float = 0.5, on_timeout=None):
    """Poll `check()` until it returns a truthy value; raise TimeoutError saying what was awaited."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception as e:  # noqa: BLE001 - services starting up refuse connections
            last_exc = e
            value = None
        if value:
            return value
        time.sleep(interval)
    extra = f" (last error: {last_exc!r})" if last_exc else ""
    details = on_timeout() if on_timeout else ""
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{extra}\n{details}")


atexit.register(kill_all)
