"""Progress lines for long work, so an operator reading a task log sees a load move.

A 10M-row month spends minutes in single steps (S3 download, DuckDB conversion, the
PostgreSQL COPY) that used to log nothing between "loading" and "loaded". `Progress` logs at
most one line per interval (done / total, percent, rate, time left); `watch_duckdb` logs that
a DuckDB statement running as one call is still running, and for how long. Interval: FINOPS_PROGRESS_INTERVAL_S
(default 15 s; 0 logs every update). Pure: no Airflow imports; the clock is injectable for tests.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

INTERVAL_ENV = "FINOPS_PROGRESS_INTERVAL_S"
DEFAULT_INTERVAL_S = 15.0
log = logging.getLogger(__name__)


def interval_s() -> float:
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_INTERVAL_S
    except ValueError:
        log.warning("%s=%r is not a number of seconds; using %s", INTERVAL_ENV, raw, DEFAULT_INTERVAL_S)
        return DEFAULT_INTERVAL_S


def duration(seconds: float) -> str:
    """'45 s', '3 min 05 s', '1 h 02 min': short enough for a log line."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def _amount(value: float, unit: str, *, with_unit: bool = True) -> str:
    text = f"{value / 2**20:,.1f}" if unit == "bytes" else f"{value:,.0f}"
    return f"{text} {'MiB' if unit == 'bytes' else unit}" if with_unit else text


class Progress:
    """Counts work done (thread-safe: boto3 reports download bytes from several threads) and
    logs a line when `interval` has passed since the last one."""

    def __init__(
        self,
        what: str,
        total: float | None = None,
        unit: str = "rows",
        *,
        interval: float | None = None,
        logger: logging.Logger | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what, self.total, self.unit = what, total, unit
        self.interval = interval_s() if interval is None else interval
        self.log = logger or log
        self.clock = clock
        self.done = 0.0
        self.lines = 0
        self._start = self._last = clock()
        self._lock = threading.Lock()

    def add(self, n: float) -> None:
        with self._lock:
            self.done += n
            self._maybe_log()

    def set(self, done: float) -> None:
        with self._lock:
            self.done = done
            self._maybe_log()

    def _maybe_log(self) -> None:
        now = self.clock()
        if now - self._last < self.interval:
            return
        self._last = now
        self.lines += 1
        self.log.info("%s", self.line(now))

    def line(self, now: float | None = None) -> str:
        elapsed = max((self.clock() if now is None else now) - self._start, 1e-9)
        rate = self.done / elapsed
        rate_txt = f"{rate / 2**20:,.1f} MiB/s" if self.unit == "bytes" else f"{rate:,.0f} {self.unit}/s"
        if self.total:
            share = min(self.done / self.total, 1.0)
            parts = [
                f"{self.what}: {_amount(self.done, self.unit, with_unit=False)} of "
                f"{_amount(self.total, self.unit)} ({share:.0%})"
            ]
        else:
            parts = [f"{self.what}: {_amount(self.done, self.unit)}"]
        parts.append(rate_txt)
        if self.total and rate > 0 and self.done < self.total:
            parts.append(f"~{duration((self.total - self.done) / rate)} left")
        parts.append(f"{duration(elapsed)} so far")
        return ", ".join(parts)


@contextmanager
def watch_duckdb(
    con: duckdb.DuckDBPyConnection,
    what: str,
    *,
    interval: float | None = None,
    logger: logging.Logger | None = None,
) -> Iterator[list[str]]:
    """While the block runs a long statement on `con`, log every `interval` seconds that it is
    still running and for how long (`query_progress()`, made to be polled from another thread,
    says whether a statement runs). No percentage: DuckDB's estimate follows its scan, which runs
    ahead of the write: a 5.8 s CREATE TABLE AS read 50 % at 1.8 s and held there until 3.8 s,
    and our 6-7 s CUR -> focus_costs INSERT ended at an estimated 27-32 %. Yields the lines
    logged (tests read them); nothing is logged for quick statements."""
    every = interval_s() if interval is None else interval
    out = logger or log
    lines: list[str] = []
    stop = threading.Event()
    start = time.monotonic()
    prev = _progress_settings(con)
    con.execute("SET enable_progress_bar = true; SET enable_progress_bar_print = false")

    def poll() -> None:
        while not stop.wait(max(every, 0.05)):
            try:
                pct = float(con.query_progress())
            except Exception:  # noqa: BLE001 - progress is best effort; the statement decides
                return
            if pct < 0:  # no statement running
                continue
            line = f"{what}: running, {duration(time.monotonic() - start)} so far"
            lines.append(line)
            out.info("%s", line)

    thread = threading.Thread(target=poll, name="finops-duckdb-progress", daemon=True)
    thread.start()
    try:
        yield lines
    finally:
        stop.set()
        thread.join()
        _restore_progress_settings(con, prev)


def _progress_settings(con: duckdb.DuckDBPyConnection) -> tuple[str, str] | None:
    try:
        row = con.execute(
            "SELECT current_setting('enable_progress_bar'), current_setting('enable_progress_bar_print')"
        ).fetchone()
    except Exception:  # noqa: BLE001 - an engine without the settings: nothing to restore
        return None
    return (str(row[0]).lower(), str(row[1]).lower()) if row else None


def _restore_progress_settings(con: duckdb.DuckDBPyConnection, prev: tuple[str, str] | None) -> None:
    if prev is None:
        return
    bar, printed = (("true" if v == "true" else "false") for v in prev)
    try:
        con.execute(f"SET enable_progress_bar = {bar}; SET enable_progress_bar_print = {printed}")
    except Exception:  # noqa: BLE001 - a dead connection must not mask the error that killed it
        log.debug("could not restore DuckDB progress settings", exc_info=True)
