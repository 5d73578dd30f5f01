"""The Warehouse protocol every backend implements, and the load_log row they all write
(`connect()` is in finops.warehouse.backends, above the backends).

SQL passed to `execute` / `query` uses qmark (`?`) placeholders on every backend; the
PostgreSQL backend translates them. Values are always bound, never formatted into SQL.
Identifiers (table / column names) only ever come from our own schema code.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from finops import exceptions
from finops.exceptions import WarehouseError as WarehouseError  # the warehouse modules raise it from here

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    import pyarrow as pa


class DataRefused(WarehouseError, exceptions.DataRefused):
    """The warehouse refused the rows themselves (a value it cannot store, such as U+0000 in
    PostgreSQL text / jsonb, or a constraint): rolled back, nothing changed. Retrying the same
    delivery fails the same way, so the billing spine quarantines it instead of retrying."""


LoadStatus = Literal["loaded", "unchanged", "quarantined", "failed", "empty"]


@dataclass
class LoadLogEntry:
    """One row of `load_log`: what was loaded (or refused) from which files / manifest."""

    load_id: str
    source: str
    provider: str
    billing_period: str  # YYYY-MM
    status: LoadStatus
    manifest_key: str | None = None
    assembly_id: str | None = None
    files: list[str] = field(default_factory=list)
    row_count: int = 0
    raw_billed_total: Decimal | None = None
    focus_billed_total: Decimal | None = None
    focus_effective_total: Decimal | None = None
    currency: str | None = None
    # {currency: {"billed": FOCUS total, "raw": export total}} (decimal text); the scalar totals
    # above add the currencies of a mixed delivery together
    billed_by_currency: dict[str, dict[str, str]] | None = None
    # the export variant the converter detected (Converter.variant), None when it cannot tell
    variant: str | None = None
    # {FOCUS column: rows} filled in because the export lacks it (Converter.derived_counts_sql,
    # and the spine's own repairs such as nested tag values stringified)
    derived_columns: dict[str, int] | None = None
    # {FOCUS column: {unit: rows}} units outside FOCUS UnitFormat, kept as sent
    unknown_units: dict[str, dict[str, int]] | None = None
    # quarantined loads: {"cause", "column", "rule", "rows", "examples", "action", "report"}
    quarantine_summary: dict[str, Any] | None = None
    message: str | None = None
    quarantine_path: str | None = None
    run_id: str | None = None
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC).replace(tzinfo=None))
    finished_at: datetime | None = None
    # seconds per phase of this load, for logs and bench/ingest.py (not a load_log column)
    timings: dict[str, float] = field(default_factory=dict, compare=False)

    def row(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("timings")
        d["files"] = json.dumps(self.files)
        for key in ("billed_by_currency", "derived_columns", "unknown_units", "quarantine_summary"):
            d[key] = None if d[key] is None else json.dumps(d[key], default=str)
        d["file_count"] = len(self.files)
        if d["finished_at"] is None:
            d["finished_at"] = datetime.now(UTC).replace(tzinfo=None)
        return d


LOAD_LOG_COLUMNS = (
    "load_id",
    "source",
    "provider",
    "billing_period",
    "status",
    "manifest_key",
    "assembly_id",
    "files",
    "file_count",
    "row_count",
    "raw_billed_total",
    "focus_billed_total",
    "focus_effective_total",
    "currency",
    "billed_by_currency",
    "variant",
    "derived_columns",
    "unknown_units",
    "quarantine_summary",
    "message",
    "quarantine_path",
    "run_id",
    "started_at",
    "finished_at",
)


@runtime_checkable
class Warehouse(Protocol):
    dialect: str  # "duckdb" | "postgres"

    def migrate(self) -> list[int]:
        """Apply pending migrations; return the versions applied now."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...

    def query_arrow(self, sql: str, params: Sequence[Any] = ()) -> pa.Table: ...

    def replace_partition(
        self,
        table: str,
        partition: dict[str, Any],
        parquet_files: Sequence[Path],
        log: LoadLogEntry | None = None,
    ) -> int:
        """In ONE transaction: delete rows matching `partition`, insert the parquet rows
        (columns matched by name), append `log` to load_log. Returns rows inserted.
        On any error nothing changes."""

    def append_log(self, log: LoadLogEntry) -> None:
        """Append a load_log row on its own (quarantine / failure / unchanged)."""

    def insert_arrow(self, table: str, data: pa.Table, dedup_keys: Sequence[str] | None = None) -> int:
        """Insert rows; with dedup_keys, skip rows whose key already exists. Returns rows inserted."""

    def upsert_arrow(self, table: str, data: pa.Table, keys: Sequence[str]) -> int:
        """Insert or replace rows by key, in one transaction."""

    def table_exists(self, table: str) -> bool: ...

    def partition_lock(self, table: str, partition: dict[str, Any]) -> AbstractContextManager[Any]:
        """Held around a DELETE + INSERT of one partition of a derived table: two writers of the
        same partition at once (threads, processes) queue instead of both inserting beside each
        other (an MVCC DELETE does not see the other's uncommitted rows)."""

    def close(self) -> None: ...
