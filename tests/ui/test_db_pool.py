"""The FinOps view's PostgreSQL reads share a bounded connection pool: many requests, sequential
or concurrent, use at most pool-size server connections; a request finding all of them busy
gets WarehouseBusy (a 503) after the wait; a connection the server dropped is replaced."""

from __future__ import annotations

import json
import threading

import pytest

from finops.ui import db


@pytest.fixture
def pooled(pg_wh, pg_conn_id, tmp_path, monkeypatch):
    cfg = tmp_path / "finops.yaml"
    cfg.write_text(json.dumps({"warehouse": {"conn_id": pg_conn_id.conn_id, "schema": pg_wh.schema}}))
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    monkeypatch.setenv("FINOPS_UI_PG_POOL_SIZE", "2")
    db.dispose_pools()
    yield pg_wh
    db.dispose_pools()


def _backend_pid(reader: db.Reader) -> int:
    return int(reader.query("SELECT pg_backend_pid()")[0][0])


def _open_backends(pg_wh, pids: set[int]) -> int:
    """How many of these server backends are still connected."""
    return int(pg_wh.query("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(?)", [sorted(pids)])[0][0])


def test_many_requests_reuse_at_most_pool_size_connections(pooled):
    pids: list[int] = []
    lock = threading.Lock()
    for _ in range(10):
        with db.open_reader() as r:
            assert r.has("focus_costs")  # the request's schema, on the pooled connection
            pids.append(_backend_pid(r))
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def request() -> None:
        try:
            for _ in range(5):
                with db.open_reader() as r:
                    barrier.wait(timeout=30)  # two requests hold a connection at the same time
                    with lock:
                        pids.append(_backend_pid(r))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=request) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and len(pids) == 20
    assert len(set(pids)) == 2  # 20 requests, two at a time: exactly pool-size server connections
    assert _open_backends(pooled, set(pids)) == len(set(pids))  # kept open for the next request


def test_a_request_finding_the_pool_busy_gets_busy_not_a_new_connection(pooled):
    with db.open_reader(lock_timeout_s=0.5) as a, db.open_reader(lock_timeout_s=0.5) as b:
        assert _backend_pid(a) != _backend_pid(b)
        with pytest.raises(db.WarehouseBusy, match="busy"):
            with db.open_reader(lock_timeout_s=0.5):
                pass
    with db.open_reader(lock_timeout_s=0.5) as c:  # released: served again
        assert c.has("focus_costs")


def test_a_dropped_connection_is_replaced(pooled):
    with db.open_reader() as r:
        first = _backend_pid(r)
    pooled.query("SELECT pg_terminate_backend(?)", [first])
    with db.open_reader() as r:
        assert _backend_pid(r) != first and r.has("focus_costs")
