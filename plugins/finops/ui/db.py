"""Opening the warehouse for one UI request: read-only, briefly, never migrating.

DuckDB lets one process write a file at a time, and Airflow tasks write the warehouse: the UI
opens it read-only per request (short lock wait, then 503) instead of holding it open. A
warehouse that does not exist yet reads as "no tables": every page shows its empty state.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property

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


@contextmanager
def open_reader(lock_timeout_s: float | None = None) -> Iterator[Reader]:
    """The warehouse for one request; DuckDB waits up to FINOPS_UI_LOCK_TIMEOUT_S (10 s) for a writer."""
    from finops.config import get_config

    if lock_timeout_s is None:
        lock_timeout_s = float(os.environ.get("FINOPS_UI_LOCK_TIMEOUT_S", "10"))
    cfg = get_config()
    wh: Warehouse | None
    try:
        if cfg.warehouse.conn_id:
            from finops.warehouse.backends import connect

            wh = connect(cfg, migrate=False)
        else:
            from finops.paths import warehouse_path

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
