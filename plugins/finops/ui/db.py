"""Opening the warehouse for one UI request: read-only, briefly, never migrating.

DuckDB lets one process write a file at a time, and Airflow tasks write the warehouse: the UI
opens it read-only per request (short lock wait, then 503) instead of holding it open. A
warehouse that does not exist yet reads as "no tables": every page shows its empty state.

PostgreSQL connections come from a bounded pool per (conn_id, schema), so a page's parallel
requests do not each pay a connection setup, and the api-server never holds more than
FINOPS_UI_PG_POOL_SIZE (default 4) server connections: a request that finds them all busy
waits up to the lock timeout, then gets a 503. A pooled connection is pinged on checkout and
replaced when the server dropped it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import Any

from finops.exceptions import FinopsError
from finops.warehouse.base import Warehouse, WarehouseError


class WarehouseBusy(FinopsError, RuntimeError):
    """The warehouse could not be opened now (DuckDB file locked by a writer, server down)."""


class Reader:
    """A warehouse (or none) plus a per-request cache of which tables exist."""

    def __init__(self, wh: Warehouse | None):
        self.wh = wh
        self.dialect = wh.dialect if wh is not None else "duckdb"

    @cached_property
    def _tables(self) -> set[str]:
        if self.wh is None:
            return set()
        rows = self.wh.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        return {r[0] for r in rows}

    @property
    def warehouse(self) -> Warehouse:
        """The open warehouse, for a query reached only once has(...) found its tables."""
        if self.wh is None:
            raise RuntimeError("no FinOps warehouse is open for this request")
        return self.wh

    def has(self, *tables: str) -> bool:
        return all(t in self._tables for t in tables)

    def missing(self, *tables: str) -> list[str]:
        return [t for t in tables if t not in self._tables]

    def query(self, sql: str, params: list | tuple = ()) -> list[tuple]:
        assert self.wh is not None
        return self.wh.query(sql, list(params))


def _open_duckdb(path: object, lock_timeout_s: float) -> Warehouse:
    import duckdb

    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    try:
        return DuckDBWarehouse(path, lock_timeout_s=lock_timeout_s, read_only=True)  # type: ignore[arg-type]
    except duckdb.ConnectionException as e:
        # This process already holds the file read-write (DuckDB shares one instance per process and
        # refuses a second configuration): join that instance; the UI still only runs SELECTs.
        if "different configuration" not in str(e):
            raise
        return DuckDBWarehouse(path, lock_timeout_s=lock_timeout_s)  # type: ignore[arg-type]


_POOLS: dict[tuple[str, str], Any] = {}
_POOLS_LOCK = threading.Lock()


def pool_size() -> int:
    return max(1, int(os.environ.get("FINOPS_UI_PG_POOL_SIZE", "4")))


def _ping(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
    """Checkout hook: a connection the server dropped is discarded and replaced (SQLAlchemy's
    pessimistic disconnect handling)."""
    import psycopg
    from sqlalchemy.exc import DisconnectionError

    try:
        dbapi_conn.execute("SELECT 1")
    except psycopg.Error as e:
        raise DisconnectionError(str(e)) from e


def _pg_pool(conn_id: str, schema: str, timeout_s: float) -> Any:
    """The bounded pool for (conn_id, schema): SQLAlchemy's QueuePool over psycopg connections
    opened through the Airflow connection, no overflow beyond pool_size()."""
    from sqlalchemy import event
    from sqlalchemy.pool import QueuePool

    from finops.warehouse.postgres_wh import connect_conn_id

    def creator() -> Any:
        return connect_conn_id(conn_id)

    with _POOLS_LOCK:
        pool = _POOLS.get((conn_id, schema))
        if pool is None:
            # reset_on_return=None: the warehouse runs in autocommit, there is no transaction to end
            pool = QueuePool(
                creator,
                pool_size=pool_size(),
                max_overflow=0,
                timeout=timeout_s,
                recycle=1800,
                reset_on_return=None,
            )
            event.listen(pool, "checkout", _ping)
            _POOLS[(conn_id, schema)] = pool
        return pool


def dispose_pools() -> None:
    """Close every pooled connection (tests, a config change)."""
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            pool.dispose()
        _POOLS.clear()


@contextmanager
def _pooled_postgres(conn_id: str, schema: str, timeout_s: float) -> Iterator[Warehouse]:
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    from finops.warehouse.postgres_wh import PostgresWarehouse

    try:
        proxy = _pg_pool(conn_id, schema, timeout_s).connect()
    except PoolTimeout as e:
        raise WarehouseBusy(f"all {pool_size()} warehouse connections are busy") from e
    except Exception as e:  # noqa: BLE001 - a driver / connection error: "unavailable", not 500
        raise WarehouseBusy(f"{type(e).__name__}: {e}") from e
    try:
        wh = PostgresWarehouse(proxy.dbapi_connection, schema=schema, owns_connection=False)
    except Exception as e:  # noqa: BLE001 - as above; the connection is suspect, drop it
        proxy.invalidate()
        raise WarehouseBusy(f"{type(e).__name__}: {e}") from e
    try:
        yield wh
    except BaseException:
        if proxy.dbapi_connection is None or proxy.dbapi_connection.closed or proxy.dbapi_connection.broken:
            proxy.invalidate()
        raise
    finally:
        proxy.close()  # back to the pool


@contextmanager
def open_reader(lock_timeout_s: float | None = None) -> Iterator[Reader]:
    """The warehouse for one request; DuckDB waits up to FINOPS_UI_LOCK_TIMEOUT_S (10 s) for a writer."""
    from finops.config import get_config

    if lock_timeout_s is None:
        lock_timeout_s = float(os.environ.get("FINOPS_UI_LOCK_TIMEOUT_S", "10"))
    cfg = get_config()
    wh: Warehouse | None
    if cfg.warehouse.conn_id:
        with _pooled_postgres(cfg.warehouse.conn_id, cfg.warehouse.schema_, lock_timeout_s) as pwh:
            yield Reader(pwh)
        return
    from finops.paths import warehouse_path

    try:
        path = warehouse_path()
        wh = _open_duckdb(path, lock_timeout_s) if path.exists() else None
    except WarehouseError as e:
        raise WarehouseBusy(str(e)) from e
    except Exception as e:  # noqa: BLE001 - a driver error opening it: say "unavailable", not 500
        raise WarehouseBusy(f"{type(e).__name__}: {e}") from e
    try:
        yield Reader(wh)
    finally:
        if wh is not None:
            wh.close()
