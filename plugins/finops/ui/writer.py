"""Opening the warehouse to WRITE one small thing for a UI request (a label on an anomaly):
briefly, never migrating. DuckDB lets one process write a file at a time and Airflow tasks
write it too, so the open waits up to FINOPS_UI_LOCK_TIMEOUT_S and then answers 503; a
read-only instance of the same file open in this process (a concurrent GET) is waited out the
same way, since DuckDB refuses a second configuration of one file in one process."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from finops.ui.db import WarehouseBusy
from finops.warehouse.base import Warehouse, WarehouseError


@contextmanager
def open_writer(lock_timeout_s: float | None = None) -> Iterator[Warehouse]:
    from finops.config import get_config

    if lock_timeout_s is None:
        lock_timeout_s = float(os.environ.get("FINOPS_UI_LOCK_TIMEOUT_S", "10"))
    cfg = get_config()
    deadline = time.monotonic() + lock_timeout_s
    while True:
        try:
            if cfg.warehouse.conn_id:
                from finops.warehouse.backends import connect

                wh = connect(cfg, migrate=False)
            else:
                from finops.paths import warehouse_path
                from finops.warehouse.duckdb_wh import DuckDBWarehouse

                path = warehouse_path()
                if not path.exists():
                    raise WarehouseBusy("the warehouse does not exist yet (no DAG has run)")
                wh = DuckDBWarehouse(path, lock_timeout_s=max(deadline - time.monotonic(), 0.1))
            break
        except WarehouseBusy:
            raise
        except (WarehouseError, Exception) as e:  # noqa: BLE001 - a lock or a driver error: retry, then 503
            if "different configuration" in str(e) and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            raise WarehouseBusy(f"{type(e).__name__}: {e}") from e
    try:
        yield wh
    finally:
        wh.close()
