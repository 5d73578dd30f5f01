"""Embedded DuckDB warehouse (the default): one file in FINOPS_HOME.

DuckDB allows one writing process at a time; Airflow may run tasks in parallel processes,
so opening retries on the file lock with backoff instead of failing the task.

Memory is bounded: DuckDB's default limit is 80% of the machine's RAM, so a 10M-row partition
load would take whatever it can. We set `memory_limit` (env FINOPS_DUCKDB_MEMORY_LIMIT, default
1GB) and a spill folder under FINOPS_HOME/tmp, so big loads spill to disk instead.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from finops.progress import watch_duckdb
from finops.warehouse.base import LOAD_LOG_COLUMNS, LoadLogEntry, WarehouseError
from finops.warehouse.migrations import all_migrations

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

DEFAULT_MEMORY_LIMIT = "1GB"


def memory_limit() -> str:
    """The DuckDB memory limit for FinOps connections (env FINOPS_DUCKDB_MEMORY_LIMIT)."""
    return os.environ.get("FINOPS_DUCKDB_MEMORY_LIMIT", "").strip() or DEFAULT_MEMORY_LIMIT


def threads(default: int | None) -> int | None:
    """The DuckDB thread cap (env FINOPS_DUCKDB_THREADS), or `default` when unset.

    One reading for every DuckDB the package opens, strict: a value that is not a positive
    integer fails naming the variable, rather than silently running with another cap."""
    raw = os.environ.get("FINOPS_DUCKDB_THREADS", "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise WarehouseError(f"FINOPS_DUCKDB_THREADS must be a positive integer, not {raw!r}")
    return int(raw)


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _ident(name: str) -> str:
    """Quote an identifier that comes from our own code (never from user input)."""
    if not name.replace("_", "").isalnum():
        raise WarehouseError(f"refusing odd identifier {name!r}")
    return f'"{name}"'


_PARTITION_LOCKS: dict[tuple[str, str, str], threading.Lock] = {}
_PARTITION_LOCKS_GUARD = threading.Lock()


def _partition_lock(path: str, table: str, partition: dict[str, Any]) -> threading.Lock:
    """The in-process lock of one partition of one DuckDB file (PostgreSQL's advisory lock here).

    Why: threads of a process share the file's database, and its MVCC sees no conflict between
    two transactions that each delete nothing (a new month) and insert: both committed, doubled."""
    key = (os.path.realpath(path) if path != ":memory:" else path, table, repr(sorted(partition.items())))
    with _PARTITION_LOCKS_GUARD:
        return _PARTITION_LOCKS.setdefault(key, threading.Lock())


class InsertRefused(WarehouseError):
    """The INSERT of `replace_partition_select` failed (bad data, constraint, read error):
    rolled back, nothing changed."""


class DuckDBWarehouse:
    dialect = "duckdb"

    def __init__(self, path: str | Path, lock_timeout_s: float = 120.0, read_only: bool = False):
        self.path = str(path)
        self.read_only = read_only
        Path(self.path).parent.mkdir(parents=True, exist_ok=True) if self.path != ":memory:" else None
        deadline = time.monotonic() + lock_timeout_s
        delay = 0.05
        while True:
            try:
                self.con = duckdb.connect(self.path, read_only=read_only)
                break
            except duckdb.IOException as e:  # another process holds the write lock
                if "lock" not in str(e).lower() or time.monotonic() > deadline:
                    raise WarehouseError(f"cannot open DuckDB warehouse {self.path}: {e}") from e
                time.sleep(delay + random.random() * delay)
                delay = min(delay * 2, 2.0)
        self.con.execute("SET TimeZone='UTC'")
        self._limit_memory()

    def _limit_memory(self) -> None:
        """memory_limit + a spill folder under FINOPS_HOME/tmp.

        Settings belong to the database instance, which DuckDB shares between connections to
        one file in one process: the folder is per (process, file), so a second connection
        sets the very same value, and instances never share spill files. DuckDB removes the
        folder it created when the instance shuts down."""
        self.con.execute(f"SET memory_limit = {_sql_str(memory_limit())}")
        # the direct billing load converts inside this connection: honour the same thread cap
        # as the staging engine (ingest._engine), so a worker running 4 loads can size them
        cap = threads(None)  # unset: DuckDB's own default, all cores
        if cap is not None:
            self.con.execute(f"SET threads = {cap}")
        if self.path == ":memory:" or self.read_only:
            return
        from finops.paths import subdir

        tag = hashlib.sha256(str(Path(self.path).resolve()).encode()).hexdigest()[:10]
        spill = subdir("tmp") / f"duckdb-wh-{os.getpid()}-{tag}"
        self.con.execute(f"SET temp_directory = {_sql_str(str(spill))}")

    # -- basics ----------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.con.execute(sql, list(params))

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.con.execute(sql, list(params)).fetchall()

    def query_arrow(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        # A relation streams straight to arrow (a DB-API result would copy the rows once more).
        rel = self.con.sql(sql, params=list(params)) if params else self.con.sql(sql)
        if rel is None:  # not a query (DDL / DML): nothing to return
            import pyarrow as pa

            return pa.table({})
        for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):  # duckdb 2.x / 1.x spellings
            if hasattr(rel, name):
                return getattr(rel, name)()
        raise WarehouseError("this duckdb version cannot export arrow tables")

    def partition_lock(self, table: str, partition: dict[str, Any]) -> threading.Lock:
        """The in-process lock of one partition of this file (see _partition_lock); other
        processes are kept out by DuckDB's own file lock."""
        return _partition_lock(self.path, table, partition)

    def table_exists(self, table: str) -> bool:
        return bool(
            self.query(
                "SELECT 1 FROM information_schema.tables WHERE table_name = ? AND table_schema = current_schema()",
                [table],
            )
        )

    def close(self) -> None:
        try:
            self.con.close()
        except Exception:  # noqa: BLE001 - closing twice is harmless
            pass

    def __enter__(self) -> DuckDBWarehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- migrations ------------------------------------------------------------------
    def migrate(self) -> list[int]:
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, description VARCHAR, "
            "applied_at TIMESTAMP DEFAULT current_timestamp)"
        )
        done = {r[0] for r in self.query("SELECT version FROM schema_migrations")}
        applied: list[int] = []
        for m in all_migrations():
            if m.version in done:
                continue
            self.con.execute("BEGIN")
            try:
                for stmt in m.statements(self.dialect):
                    self.con.execute(stmt)
                self.con.execute(
                    "INSERT INTO schema_migrations (version, description) VALUES (?, ?)",
                    [m.version, m.description],
                )
                self.con.execute("COMMIT")
            except Exception:
                self.con.execute("ROLLBACK")
                raise
            applied.append(m.version)
        if applied:
            log.info("warehouse %s: applied migrations %s", self.path, applied)
        return applied

    # -- loads -----------------------------------------------------------------------
    def _insert_log(self, log_entry: LoadLogEntry) -> None:
        row = log_entry.row()
        cols = ", ".join(LOAD_LOG_COLUMNS)
        marks = ", ".join("?" for _ in LOAD_LOG_COLUMNS)
        self.con.execute(
            f"INSERT INTO load_log ({cols}) VALUES ({marks})", [row[c] for c in LOAD_LOG_COLUMNS]
        )

    def append_log(self, log_entry: LoadLogEntry) -> None:
        self._insert_log(log_entry)

    def replace_partition(
        self,
        table: str,
        partition: dict[str, Any],
        parquet_files: Sequence[Path],
        log: LoadLogEntry | None = None,
    ) -> int:
        files = [str(p) for p in parquet_files]
        try:
            # union_by_name: files of one delivery may differ in optional columns (missing -> NULL,
            # and NOT NULL constraints still refuse a missing required column).
            inserted = self._replace_in_tx(
                "replace_partition",
                table,
                partition,
                lambda: self._bulk_insert(table, files) if files else 0,
                log=log,
            )
        except WarehouseError:
            raise
        except Exception as e:
            raise WarehouseError(f"replace_partition {table} {partition} failed: {e}") from e
        assert inserted is not None  # no check: never refused
        return inserted

    def replace_partition_select(
        self,
        table: str,
        partition: dict[str, Any],
        select_sql: str,
        *,
        check: Callable[[duckdb.DuckDBPyConnection], bool],
        log: LoadLogEntry | None = None,
        progress: str | None = None,
    ) -> int | None:
        """In ONE transaction: delete `partition`, insert the rows of `select_sql` (our own SQL,
        over views on this connection), then `check(con)`, which sees the new rows; commit
        (rows + `log`) only when it returns True, else roll back so the partition is as it was.

        Why: converting straight into the table writes a month once; going through staging
        parquet wrote it twice and read it twice more (bench/ingest.py). Returns the rows
        inserted, None when `check` refused them; InsertRefused when the INSERT itself failed.
        `progress`: label of the lines logged while the INSERT runs (finops.progress)."""

        def insert() -> int:
            try:
                with watch_duckdb(self.con, progress) if progress else nullcontext():
                    res = self.con.execute(f"INSERT INTO {_ident(table)} BY NAME {select_sql}").fetchone()
            except duckdb.Error as e:
                raise InsertRefused(f"insert into {table} failed: {e}") from e
            return int(res[0]) if res else 0

        return self._replace_in_tx("replace_partition_select", table, partition, insert, check=check, log=log)

    def _replace_in_tx(
        self,
        what: str,
        table: str,
        partition: dict[str, Any],
        insert: Callable[[], int],
        *,
        check: Callable[[duckdb.DuckDBPyConnection], bool] | None = None,
        log: LoadLogEntry | None = None,
    ) -> int | None:
        """The one partition-replace transaction both loads use: DELETE, `insert()`, optional
        `check` (False -> ROLLBACK, None returned), `load_log` row, COMMIT; any error rolls back."""
        if not partition:
            raise WarehouseError(f"{what} needs at least one partition key")
        where = " AND ".join(f"{_ident(k)} = ?" for k in partition)
        with self.partition_lock(table, partition), self._unordered_inserts():
            self.con.execute("BEGIN")
            try:
                self.con.execute(f"DELETE FROM {_ident(table)} WHERE {where}", list(partition.values()))
                inserted = insert()
                if check is not None and not check(self.con):
                    self.con.execute("ROLLBACK")
                    return None
                if log is not None:
                    log.row_count = inserted
                    self._insert_log(log)
                self.con.execute("COMMIT")
                return inserted
            except BaseException:
                try:
                    self.con.execute("ROLLBACK")
                except duckdb.Error:  # already rolled back (DuckDB aborts a failed transaction)
                    pass
                raise

    @contextmanager
    def _unordered_inserts(self) -> Iterator[None]:
        """Rows of a table have no order: without keeping it DuckDB streams inserts in parallel
        instead of buffering rows to restore it (less time, less RAM). The setting is per
        instance, so it is put back afterwards."""
        prev = self.con.execute("SELECT current_setting('preserve_insertion_order')").fetchone()
        self.con.execute("SET preserve_insertion_order = false")
        try:
            yield
        finally:
            try:
                self.con.execute(f"SET preserve_insertion_order = {'true' if prev and prev[0] else 'false'}")
            except duckdb.Error:  # a dead connection must not mask the error that killed it
                log.debug("could not restore preserve_insertion_order", exc_info=True)

    def _bulk_insert(self, table: str, files: list[str]) -> int:
        res = self.con.execute(
            f"INSERT INTO {_ident(table)} BY NAME SELECT * FROM read_parquet(?, union_by_name = true)",
            [files],
        ).fetchone()
        return int(res[0]) if res else 0

    def insert_arrow(self, table: str, data: pa.Table, dedup_keys: Sequence[str] | None = None) -> int:
        if data.num_rows == 0:
            return 0
        self.con.register("_finops_incoming", data)
        try:
            cols = ", ".join(_ident(c) for c in data.column_names)
            if dedup_keys:
                on = " AND ".join(f"t.{_ident(k)} IS NOT DISTINCT FROM i.{_ident(k)}" for k in dedup_keys)
                keys = ", ".join(_ident(k) for k in dedup_keys)
                sql = (
                    f"INSERT INTO {_ident(table)} ({cols}) SELECT {cols} FROM "
                    f"(SELECT DISTINCT ON ({keys}) * FROM _finops_incoming) i "
                    f"WHERE NOT EXISTS (SELECT 1 FROM {_ident(table)} t WHERE {on})"
                )
            else:
                sql = f"INSERT INTO {_ident(table)} ({cols}) SELECT {cols} FROM _finops_incoming"
            res = self.con.execute(sql).fetchone()
            return int(res[0]) if res else 0
        finally:
            self.con.unregister("_finops_incoming")

    def upsert_arrow(self, table: str, data: pa.Table, keys: Sequence[str]) -> int:
        if data.num_rows == 0:
            return 0
        self.con.register("_finops_incoming", data)
        self.con.execute("BEGIN")
        try:
            on = " AND ".join(f"{_ident(table)}.{_ident(k)} IS NOT DISTINCT FROM i.{_ident(k)}" for k in keys)
            self.con.execute(
                f"DELETE FROM {_ident(table)} WHERE EXISTS (SELECT 1 FROM _finops_incoming i WHERE {on})"
            )
            cols = ", ".join(_ident(c) for c in data.column_names)
            res = self.con.execute(
                f"INSERT INTO {_ident(table)} ({cols}) SELECT {cols} FROM _finops_incoming"
            ).fetchone()
            self.con.execute("COMMIT")
            return int(res[0]) if res else 0
        except Exception:
            self.con.execute("ROLLBACK")
            raise
        finally:
            self.con.unregister("_finops_incoming")
