"""`connect()`: open the configured warehouse backend.

It sits above the backends: `base` defines the protocol and the load_log types every backend
implements and imports none of them, each backend imports `base`, and only this module picks
one. The backend is imported when it is opened, so a DuckDB run never loads psycopg."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from finops.config import FinOpsConfig
    from finops.warehouse.base import Warehouse


def connect(config: FinOpsConfig | None = None, migrate: bool = True) -> Warehouse:
    """Open the configured warehouse: embedded DuckDB unless warehouse.conn_id is set."""
    from finops.config import get_config

    cfg = config or get_config()
    if cfg.warehouse.conn_id:
        from finops.warehouse.postgres_wh import PostgresWarehouse

        wh: Warehouse = PostgresWarehouse.from_conn_id(cfg.warehouse.conn_id, schema=cfg.warehouse.schema_)
    else:
        from finops.paths import warehouse_path
        from finops.warehouse.duckdb_wh import DuckDBWarehouse

        wh = DuckDBWarehouse(warehouse_path())
    if migrate:
        wh.migrate()
    return wh
