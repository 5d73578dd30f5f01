"""finops.progress: the lines an operator sees while a long load runs."""

from __future__ import annotations

import logging
import re
import threading

import duckdb
import pytest

from finops.progress import INTERVAL_ENV, Progress, duration, interval_s, watch_duckdb


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_logs_at_most_once_per_interval_with_percent_rate_and_time_left(caplog):
    clock = Clock()
    p = Progress("aws-main 2025-01: COPY into finops.focus_costs", total=1_000_000, interval=10, clock=clock)
    with caplog.at_level(logging.INFO, logger="finops.progress"):
        p.add(100_000)  # t=0: too soon
        clock.t += 5
        p.add(100_000)  # 5 s: too soon
        clock.t += 5
        p.add(50_000)  # 10 s: a line
        clock.t += 1
        p.add(50_000)  # 11 s: too soon again
    assert p.lines == 1
    (line,) = [r.getMessage() for r in caplog.records]
    assert line == (
        "aws-main 2025-01: COPY into finops.focus_costs: 250,000 of 1,000,000 rows (25%), "
        "25,000 rows/s, ~30 s left, 10 s so far"
    )


def test_bytes_unknown_total_and_overshoot():
    clock = Clock()
    p = Progress("download s3://b/k", unit="bytes", interval=0, clock=clock)
    clock.t += 2
    p.add(3 * 2**20)
    assert p.line() == "download s3://b/k: 3.0 MiB, 1.5 MiB/s, 2 s so far"
    q = Progress("x", total=10, interval=0, clock=clock)
    clock.t += 1
    q.set(12)  # a source's row estimate can be short: never above 100 %, no negative time left
    assert q.line() == "x: 12 of 10 rows (100%), 12 rows/s, 1 s so far"


def test_counts_from_many_threads():
    # boto3 reports download progress from its transfer threads
    p = Progress("download", total=None, unit="bytes", interval=3600)
    threads = [threading.Thread(target=lambda: [p.add(1) for _ in range(10_000)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert p.done == 80_000


@pytest.mark.parametrize(
    ("secs", "text"), [(0.4, "0 s"), (59, "59 s"), (61, "1 min 01 s"), (3725, "1 h 02 min")]
)
def test_duration(secs, text):
    assert duration(secs) == text


def test_interval_from_environment(monkeypatch, caplog):
    monkeypatch.delenv(INTERVAL_ENV, raising=False)
    assert interval_s() == 15.0
    monkeypatch.setenv(INTERVAL_ENV, "0")
    assert interval_s() == 0.0
    monkeypatch.setenv(INTERVAL_ENV, "soon")
    with caplog.at_level(logging.WARNING, logger="finops.progress"):
        assert interval_s() == 15.0
    assert "is not a number of seconds" in caplog.text


def test_watch_duckdb_logs_while_a_statement_runs_and_restores_settings(caplog):
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    with caplog.at_level(logging.INFO, logger="finops.progress"):
        with watch_duckdb(con, "aws-main 2025-01: converting", interval=0.05) as lines:
            # long enough for several polls on a loaded 2-core CI machine
            total = con.execute("SELECT sum(i % 7) FROM range(150000000) t(i)").fetchone()[0]
    assert total == sum(i % 7 for i in range(7)) * (150_000_000 // 7) + sum(range(150_000_000 % 7))
    assert lines, "no progress line for a statement that ran for several poll intervals"
    assert all(re.fullmatch(r"aws-main 2025-01: converting: running, \d+ s so far", line) for line in lines)
    assert caplog.text.count("aws-main 2025-01: converting: running") == len(lines)
    assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0] is False


def test_watch_duckdb_is_silent_for_quick_work_and_survives_errors():
    con = duckdb.connect()
    with pytest.raises(duckdb.Error):
        with watch_duckdb(con, "x", interval=60) as lines:
            con.execute("SELECT 1").fetchall()
            con.execute("SELECT * FROM no_such_table")
    assert lines == []
    assert con.execute("SELECT 42").fetchone() == (42,)
