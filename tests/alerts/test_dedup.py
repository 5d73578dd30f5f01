"""The delivery ledger (alert_state) on both warehouse backends, with real threads: one
(dedup_key, channel) is delivered once however many tasks emit it at the same moment, and a
delivery that failed, or whose sender died, is not lost."""

from __future__ import annotations

import threading
import time

import pytest

from finops.alerts.dedup import AlertLedger
from finops.alerts.events import AlertEvent
from finops.alerts.routing import make_sink
from finops.config import AlertRoute, AlertsConfig

EVENT = AlertEvent(
    kind="validation_failed", title="main-payer 2026-10 quarantined", dedup_key="ingest:main-payer:2026-10"
)


@pytest.fixture
def open_wh(any_wh, request):
    """Opens another connection to the test's warehouse, as another task (or thread) would."""
    if any_wh.dialect == "duckdb":
        from finops.paths import warehouse_path
        from finops.warehouse.duckdb_wh import DuckDBWarehouse

        return lambda: DuckDBWarehouse(warehouse_path())
    from finops.warehouse.postgres_wh import PostgresWarehouse

    dsn = request.getfixturevalue("pg_dsn")
    return lambda: PostgresWarehouse.from_dsn(dsn, schema=any_wh.schema)


def _slow_ok(delay: float):
    """A Slack webhook that takes `delay` seconds to answer "ok": deliveries overlap."""
    from werkzeug import Response

    def handler(request):
        time.sleep(delay)
        return Response("ok")

    return handler


def _at_once(n: int, open_wh, body) -> list[BaseException]:
    """`n` threads, each with its own warehouse connection, run body(wh) at the same moment."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def worker() -> None:
        try:
            wh = open_wh()
            try:
                barrier.wait()
                body(wh)
            finally:
                wh.close()
        except BaseException as e:  # noqa: BLE001 - returned to the test
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return errors


def test_concurrent_emitters_deliver_once(any_wh, open_wh, alert_slack):
    """Four tasks emit the same key at once: before, each passed the 'already sent?' check
    while the others were still sending, and the key was delivered four times."""
    alert_slack.server.expect_request(alert_slack.path, method="POST").respond_with_handler(_slow_ok(0.3))
    alerts = AlertsConfig(routes=[AlertRoute(team="*", slack_conn_id=alert_slack.conn_id)])

    errors = _at_once(4, open_wh, lambda wh: make_sink(alerts, AlertLedger(wh))(EVENT))
    assert errors == []
    assert len(alert_slack.payloads()) == 1
    assert any_wh.query("SELECT status, send_count FROM alert_state") == [("sent", 1)]


def test_a_failed_delivery_releases_its_claim(any_wh, alert_slack):
    """The send fails after the claim: the key is not marked delivered, the next emitter (a
    retry, the next run) sends it, once."""
    srv = alert_slack.server
    srv.expect_ordered_request(alert_slack.path, method="POST").respond_with_data("invalid_token", status=403)
    srv.expect_ordered_request(alert_slack.path, method="POST").respond_with_data("ok")
    sink = make_sink(
        AlertsConfig(routes=[AlertRoute(team="*", slack_conn_id=alert_slack.conn_id)]), AlertLedger(any_wh)
    )
    with pytest.raises(RuntimeError, match="invalid_token"):
        sink(EVENT)
    assert any_wh.query("SELECT status, send_count FROM alert_state") == [("failed", 0)]
    sink(EVENT)
    sink(EVENT)
    assert len(alert_slack.payloads()) == 2  # the refused one, then one delivery
    assert any_wh.query("SELECT status, send_count FROM alert_state") == [("sent", 1)]


_DIE_WHILE_SENDING = """
import os, sys
from finops.alerts.dedup import AlertLedger
backend, target, schema = sys.argv[1:4]
if backend == "duckdb":
    from finops.warehouse.duckdb_wh import DuckDBWarehouse
    wh = DuckDBWarehouse(target)
else:
    from finops.warehouse.postgres_wh import PostgresWarehouse
    wh = PostgresWarehouse.from_dsn(target, schema=schema)
AlertLedger(wh).deliver_once("k", "slack:x", lambda: os._exit(9))  # killed mid-send: no release
"""


def test_a_sender_that_died_mid_send_is_taken_over_after_the_lease(any_wh, request):
    """A worker killed between claim and outcome leaves a claim: within the lease it is an
    in-flight delivery (pending: never reported as sent), after it another sender delivers."""
    import subprocess
    import sys
    from datetime import timedelta

    from finops.alerts.dedup import AlertInFlight

    if any_wh.dialect == "duckdb":
        target, schema = any_wh.path, ""
        any_wh.close()  # one process at a time on the DuckDB file
    else:
        target, schema = request.getfixturevalue("pg_dsn"), any_wh.schema
    proc = subprocess.run(
        [sys.executable, "-c", _DIE_WHILE_SENDING, any_wh.dialect, target, schema],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 9, proc.stderr
    if any_wh.dialect == "duckdb":
        from finops.warehouse.duckdb_wh import DuckDBWarehouse

        any_wh = DuckDBWarehouse(target)
    try:
        sends: list[int] = []
        with pytest.raises(AlertInFlight):
            AlertLedger(any_wh, wait_s=0.3).deliver_once("k", "slack:x", lambda: sends.append(1))
        assert (
            AlertLedger(any_wh, lease=timedelta(seconds=1), wait_s=10).deliver_once(
                "k", "slack:x", lambda: sends.append(1)
            )
            is True
        )
        assert sends == [1]
        assert any_wh.query("SELECT status, send_count FROM alert_state") == [("sent", 1)]
    finally:
        any_wh.close()
