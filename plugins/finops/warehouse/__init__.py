"""Warehouse: one small protocol (base.Warehouse), embedded DuckDB and PostgreSQL backends,
versioned migrations (migrations/), and `connect()` which picks the backend from config."""

from finops.warehouse.backends import connect
from finops.warehouse.base import LoadLogEntry, Warehouse, WarehouseError

__all__ = ["LoadLogEntry", "Warehouse", "WarehouseError", "connect"]
