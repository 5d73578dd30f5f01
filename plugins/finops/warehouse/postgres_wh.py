"""PostgreSQL warehouse: same behaviour as the DuckDB backend, on a shared server.

The connection comes from an Airflow connection through the Postgres provider's
`PostgresHook`, so AIRFLOW_CONN_* variables and secrets backends work unchanged. All our
tables live in one schema (default `finops`, created on first use; `search_path` points
at it), which also lets tests isolate themselves in a throw-away schema.

The connection runs in autocommit mode; every multi-statement operation opens an explicit
transaction, so a failure anywhere rolls the whole operation back. Bulk data moves with
`COPY ... FROM STDIN` fed batch by batch from pyarrow, so memory stays bounded by one batch
whatever the file size: in binary format (pg_binary: the server skips parsing every value from
text, about 2x less server time) whenever every column has an exact binary encoding, else as
CSV (arrow_copy). `copy_format="csv"` forces the CSV path.

focus_costs is partitioned per (x_source, x_billing_period) (migration 5), so a load never
deletes rows: it COPYs the files into a fresh index-less table over `copy_connections`
connections at once, builds the indexes, then swaps that table in as the partition in one short
transaction (`_replace_by_swap`). A table that is not partitioned that way loads by DELETE +
COPY in one transaction (`_replace_by_delete`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql
from psycopg.copy import QueuedLibpqWriter
from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb
from psycopg.types.string import TextLoader

from finops.progress import Progress
from finops.warehouse import arrow_copy, pg_arrow, pg_binary
from finops.warehouse.base import LOAD_LOG_COLUMNS, DataRefused, LoadLogEntry, WarehouseError
from finops.warehouse.migrations import all_migrations
from finops.warehouse.migrations.m0005_focus_costs_partitioned import (
    DEFAULT_PART,
    KEY_SEP,
    KEY_SQL,
    PART_PREFIX,
)
from finops.warehouse.qmark import translate

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

_SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
COPY_BATCH_ROWS = 20_000
FETCH_ROWS = 50_000
COPY_CONNECTIONS_ENV = "FINOPS_PG_COPY_CONNECTIONS"
DEFAULT_COPY_CONNECTIONS = 2
MAX_AUTO_COPY_CONNECTIONS = 4
STAGE_PREFIX = "focus_costs_s_"
SWAP_LOCK_TIMEOUT = "10s"
SWAP_LOCK_TRIES = 6  # then the last try waits as long as it takes
_SWAP_TABLE = "focus_costs"
_SWAP_KEYS = ("x_source", "x_billing_period")
_INDEXDEF_RE = re.compile(r"^CREATE (UNIQUE )?INDEX \S+ ON (?:ONLY )?\S+ (USING .*)$")


def copy_connections_default() -> int:
    """Connections a partition load COPYs over: FINOPS_PG_COPY_CONNECTIONS, else half this
    machine's cores, at least 2 and at most 4 (bench/warehouse_load.py on 16 cores: 2 -> 3.3x
    the CSV path, 4 -> 4.9x, 8 -> 5.6x; the server's free cores bound what more connections buy)."""
    auto = min(MAX_AUTO_COPY_CONNECTIONS, max(DEFAULT_COPY_CONNECTIONS, (os.cpu_count() or 2) // 2))
    raw = os.environ.get(COPY_CONNECTIONS_ENV, "").strip()
    try:
        return max(1, int(raw)) if raw else auto
    except ValueError:
        log.warning("%s=%r is not an integer; using %s", COPY_CONNECTIONS_ENV, raw, auto)
        return auto


def _ident(name: str) -> str:
    """Quote an identifier that comes from our own code (never from user input)."""
    if not name or not name.replace("_", "").isalnum():
        raise WarehouseError(f"refusing odd identifier {name!r}")
    return f'"{name}"'


def _adapt(value: Any) -> Any:
    """Python values the DuckDB backend accepts -> what psycopg binds the same way."""
    if isinstance(value, dict):
        return Jsonb(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def connect_conn_id(conn_id: str) -> psycopg.Connection:
    """A psycopg 3 connection from an Airflow connection, through the Postgres provider's hook
    (AIRFLOW_CONN_* and secrets backends apply)."""
    from airflow.providers.postgres.hooks.postgres import PostgresHook

    hook = PostgresHook(postgres_conn_id=conn_id)
    conn = hook.get_conn()
    if not isinstance(conn, psycopg.Connection):  # provider fell back to psycopg2
        conn.close()
        uri = hook.get_uri().replace("postgresql+psycopg2://", "postgresql://", 1)
        conn = psycopg.connect(uri)
    return conn


class PostgresWarehouse:
    dialect = "postgres"

    def __init__(
        self,
        conn: psycopg.Connection,
        schema: str = "finops",
        *,
        owns_connection: bool = True,
        copy_format: str = "binary",
        connect: Callable[[], psycopg.Connection] | None = None,
        copy_connections: int | None = None,
    ):
        """`connect` opens one more connection like `conn` (the parallel COPY's extra ones);
        without it a partition load COPYs over `conn` alone."""
        if not isinstance(conn, psycopg.Connection):
            raise WarehouseError(
                f"PostgresWarehouse needs a psycopg 3 connection, got {type(conn).__module__}.{type(conn).__name__}"
            )
        if not _SCHEMA_RE.match(schema):
            raise WarehouseError(f"warehouse schema must be a lower-case identifier, got {schema!r}")
        if copy_format not in ("binary", "csv"):
            raise WarehouseError(f"copy_format must be 'binary' or 'csv', got {copy_format!r}")
        self.conn = conn
        self.schema = schema
        self.copy_format = copy_format
        self._owns = owns_connection
        self._connect = connect
        n = copy_connections_default() if copy_connections is None else copy_connections
        self.copy_connections = max(1, n) if connect is not None else 1
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.rollback()
        conn.autocommit = True
        conn.row_factory = tuple_row
        # JSON comes back as its text, like DuckDB's JSON type (not parsed into dicts).
        conn.adapters.register_loader("json", TextLoader)
        conn.adapters.register_loader("jsonb", TextLoader)
        conn.execute("SET TimeZone TO 'UTC'")
        conn.execute("SET client_encoding TO 'UTF8'")
        # A DBA may pre-create the schema for a role without CREATE on the database: only create if absent.
        if not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema]).fetchone():
            with conn.transaction():
                # Two processes creating the schema at once would race on pg_namespace.
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"finops.schema.{schema}"]
                )
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {_ident(schema)}")
        conn.execute("SELECT set_config('search_path', %s, false)", [_ident(schema)])

    # -- construction ----------------------------------------------------------------
    @classmethod
    def from_dsn(
        cls,
        dsn: str,
        schema: str = "finops",
        *,
        copy_format: str = "binary",
        copy_connections: int | None = None,
        **connect_kwargs: Any,
    ) -> PostgresWarehouse:
        """Open from a libpq DSN / URI (tests, scripts)."""
        return cls(
            psycopg.connect(dsn, **connect_kwargs),
            schema=schema,
            copy_format=copy_format,
            connect=lambda: psycopg.connect(dsn, **connect_kwargs),
            copy_connections=copy_connections,
        )

    @classmethod
    def from_conn_id(cls, conn_id: str, schema: str = "finops") -> PostgresWarehouse:
        """Open through Airflow's PostgresHook, so AIRFLOW_CONN_* and secrets backends apply."""
        return cls(connect_conn_id(conn_id), schema=schema, connect=lambda: connect_conn_id(conn_id))

    # -- basics ----------------------------------------------------------------------
    def _run(self, cur: psycopg.Cursor, sql: str, params: Sequence[Any]) -> None:
        if params:
            cur.execute(translate(sql, len(params)), [_adapt(p) for p in params])
        else:
            cur.execute(sql)  # no parameters: sent verbatim (may hold several statements)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        with self.conn.cursor() as cur:
            self._run(cur, sql, params)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self.conn.cursor() as cur:
            self._run(cur, sql, params)
            return cur.fetchall() if cur.description else []

    def query_arrow(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        import pyarrow as pa

        with self.conn.cursor() as cur:
            self._run(cur, sql, params)
            if not cur.description:
                return pa.table({})
            names = [d.name for d in cur.description]
            types = [(d.type_code, d.precision, d.scale) for d in cur.description]
            chunks: list[pa.Table] = []
            while True:
                rows = cur.fetchmany(FETCH_ROWS)
                if not rows and chunks:
                    break
                chunks.append(pg_arrow.rows_to_table(names, types, rows))
                if not rows:
                    break
            return pg_arrow.concat(chunks)

    def _lock_key(self, table: str, partition: dict[str, Any]) -> str:
        return json.dumps([self.schema, table, partition], sort_keys=True, default=str)

    @contextmanager
    def partition_lock(self, table: str, partition: dict[str, Any]) -> Iterator[None]:
        """A session advisory lock on (schema, table, partition), the key replace_partition
        takes inside its own transaction; released on exit, or when the connection ends."""
        key = self._lock_key(table, partition)
        self.conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [key])
        try:
            yield
        finally:
            self.conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [key])

    def table_exists(self, table: str) -> bool:
        return bool(
            self.query(
                "SELECT 1 FROM information_schema.tables WHERE table_name = ? AND table_schema = current_schema()",
                [table],
            )
        )

    def table_columns(self, table: str) -> list[str]:
        rows = self.query(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
            "AND table_schema = current_schema() ORDER BY ordinal_position",
            [table],
        )
        return [r[0] for r in rows]

    def close(self) -> None:
        if self._owns and not self.conn.closed:
            self.conn.close()

    def __enter__(self) -> PostgresWarehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- migrations ------------------------------------------------------------------
    def migrate(self) -> list[int]:
        key = f"finops.migrate.{self.schema}"
        self.conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [key])
        try:
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, description TEXT, "
                "applied_at TIMESTAMP DEFAULT (now() AT TIME ZONE 'UTC'))"
            )
            done = {r[0] for r in self.query("SELECT version FROM schema_migrations")}
            applied: list[int] = []
            for m in all_migrations():
                if m.version in done:
                    continue
                with self.conn.transaction(), self.conn.cursor() as cur:
                    for stmt in m.statements(self.dialect):
                        cur.execute(stmt)
                    cur.execute(
                        "INSERT INTO schema_migrations (version, description) VALUES (%s, %s)",
                        [m.version, m.description],
                    )
                applied.append(m.version)
        finally:
            self.conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [key])
        if applied:
            log.info("warehouse postgres schema %s: applied migrations %s", self.schema, applied)
        return applied

    # -- loads -----------------------------------------------------------------------
    def _insert_log(self, cur: psycopg.Cursor, log_entry: LoadLogEntry) -> None:
        row = log_entry.row()
        cols = ", ".join(LOAD_LOG_COLUMNS)
        marks = ", ".join("?" for _ in LOAD_LOG_COLUMNS)
        self._run(cur, f"INSERT INTO load_log ({cols}) VALUES ({marks})", [row[c] for c in LOAD_LOG_COLUMNS])

    def append_log(self, log_entry: LoadLogEntry) -> None:
        with self.conn.cursor() as cur:
            self._insert_log(cur, log_entry)

    def _copy(
        self,
        cur: psycopg.Cursor,
        table: str,
        schema: pa.Schema,
        batches: Iterable[pa.RecordBatch],
        progress: Progress | None = None,
        what: str = "arrow data",
        types: dict[str, str] | None = None,
        target: str | None = None,
    ) -> int:
        """Stream record batches into `table` with one COPY (binary where every column has an
        exact binary encoding, else CSV); returns rows sent. Checks the columns exist first.
        `types` / `target` (a qualified name) let a cursor on another connection copy."""
        types = self._column_types(table) if types is None else types
        self._check_columns(table, schema.names, what, have=types)
        plan = pg_binary.plan(schema, types) if self.copy_format == "binary" else None
        if plan is not None:
            fmt, chunks = "binary", plan.chunks(batches)
        else:
            fmt, chunks = "csv", arrow_copy.csv_chunks(batches)
        cols = ", ".join(_ident(c) for c in schema.names)
        rows = 0
        # The queued writer sends from a worker thread, so encoding the next batch overlaps
        # waiting on the server (the encoders and libpq's waits release the GIL).
        into = target or _ident(table)
        with cur.copy(f"COPY {into} ({cols}) FROM STDIN (FORMAT {fmt})", writer=QueuedLibpqWriter(cur)) as cp:
            for n, payload in chunks:
                cp.write(payload)
                rows += n
                if progress is not None and n:
                    progress.add(n)
        return rows

    def _column_types(self, table: str) -> dict[str, str]:
        """Column name -> pg_type.typname of `table` as the search path resolves it (our schema,
        or this session's temp tables); {} if it does not exist."""
        rows = self.query(
            "SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
            "WHERE a.attrelid = to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            [_ident(table)],
        )
        return {r[0]: r[1] for r in rows}

    def _check_columns(
        self, table: str, columns: Sequence[str], what: str, have: dict[str, str] | None = None
    ) -> None:
        have = self._column_types(table) if have is None else have
        if not have:
            raise WarehouseError(f"table {table!r} does not exist in schema {self.schema!r}")
        extra = [c for c in columns if c not in have]
        if extra:
            raise WarehouseError(f"{what} has columns not in table {table!r}: {extra}")

    def replace_partition(
        self,
        table: str,
        partition: dict[str, Any],
        parquet_files: Sequence[Path],
        log: LoadLogEntry | None = None,
    ) -> int:
        if not partition:
            raise WarehouseError("replace_partition needs at least one partition key")
        if self._swappable(table, partition):
            return self._replace_by_swap(partition, parquet_files, log)
        return self._replace_by_delete(table, partition, parquet_files, log)

    def _swappable(self, table: str, partition: dict[str, Any]) -> bool:
        """focus_costs partitioned by migration 5, loaded by its own partition key."""
        if table != _SWAP_TABLE or sorted(partition) != sorted(_SWAP_KEYS):
            return False
        if not all(isinstance(partition[k], str) for k in _SWAP_KEYS):
            return False
        row = self.query("SELECT relkind FROM pg_class WHERE oid = to_regclass(?)", [_ident(table)])
        return bool(row) and row[0][0] == "p"

    def _replace_by_delete(
        self,
        table: str,
        partition: dict[str, Any],
        parquet_files: Sequence[Path],
        log: LoadLogEntry | None = None,
    ) -> int:
        import pyarrow.parquet as pq

        where = " AND ".join(f"{_ident(k)} = ?" for k in partition)
        lock_key = self._lock_key(table, partition)
        inserted = 0
        current = None
        label = " ".join(str(v) for v in partition.values())
        files: list[pq.ParquetFile] = []
        try:
            for path in parquet_files:
                current = Path(path)
                files.append(pq.ParquetFile(current, pre_buffer=False))
            current = None
            progress = Progress(
                f"{label}: COPY into {self.schema}.{table}", sum(f.metadata.num_rows for f in files)
            )
            with self.conn.transaction(), self.conn.cursor() as cur:
                # Serialise loads of the same partition: two concurrent DELETE+COPY would both insert.
                cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [lock_key])
                self._run(cur, f"DELETE FROM {_ident(table)} WHERE {where}", list(partition.values()))
                # pre_buffer=False (above): pyarrow otherwise fetches whole row groups' column chunks
                # ahead and holds them while the slower server drains the COPY. 10M-row staging
                # file: the COPY phase's memory 786 -> 314 MB, 121 -> 112 s.
                for path, pf in zip(parquet_files, files, strict=True):
                    current = Path(path)
                    batches = pf.iter_batches(batch_size=COPY_BATCH_ROWS)
                    inserted += self._copy(
                        cur, table, pf.schema_arrow, batches, progress, f"parquet file {current.name}"
                    )
                current = None
                if log is not None:
                    log.row_count = inserted
                    self._insert_log(cur, log)
        except WarehouseError:
            raise
        except Exception as e:  # psycopg / arrow errors: already rolled back by the transaction block
            where_txt = f" (file {current})" if current else ""
            # SQLSTATE classes 22 / 23 (a value the server cannot store, a constraint): the rows
            # themselves are refused, and would be on every retry
            err = DataRefused if isinstance(e, psycopg.DataError | psycopg.IntegrityError) else WarehouseError
            raise err(f"replace_partition {table} {partition} failed{where_txt}: {e}") from e
        finally:
            for pf in files:
                pf.close()
        return inserted

    def _stage(self, cur: psycopg.Cursor, table: str, data: pa.Table) -> str:
        """Copy `data` into a temp table typed like `table` (dropped at commit); return its name."""
        self._check_columns(table, data.column_names, "arrow data")
        tmp = f"_finops_in_{uuid.uuid4().hex[:12]}"
        cols = ", ".join(_ident(c) for c in data.column_names)
        cur.execute(
            f"CREATE TEMP TABLE {_ident(tmp)} ON COMMIT DROP AS SELECT {cols} FROM {_ident(table)} WITH NO DATA"
        )
        self._copy(cur, tmp, data.schema, arrow_copy.table_batches(data, COPY_BATCH_ROWS))
        return tmp

    def insert_arrow(self, table: str, data: pa.Table, dedup_keys: Sequence[str] | None = None) -> int:
        if data.num_rows == 0:
            return 0
        cols = ", ".join(_ident(c) for c in data.column_names)
        with self.conn.transaction(), self.conn.cursor() as cur:
            if not dedup_keys:
                return self._copy(cur, table, data.schema, arrow_copy.table_batches(data, COPY_BATCH_ROWS))
            # Writers of the same table queue here, so "skip if the key exists" holds under concurrency.
            cur.execute(f"LOCK TABLE {_ident(table)} IN SHARE ROW EXCLUSIVE MODE")
            tmp = self._stage(cur, table, data)
            on = " AND ".join(f"t.{_ident(k)} IS NOT DISTINCT FROM i.{_ident(k)}" for k in dedup_keys)
            keys = ", ".join(_ident(k) for k in dedup_keys)
            cur.execute(
                f"INSERT INTO {_ident(table)} ({cols}) SELECT {cols} FROM "
                f"(SELECT DISTINCT ON ({keys}) * FROM {_ident(tmp)}) i "
                f"WHERE NOT EXISTS (SELECT 1 FROM {_ident(table)} t WHERE {on})"
            )
            return max(cur.rowcount, 0)

    def upsert_arrow(self, table: str, data: pa.Table, keys: Sequence[str]) -> int:
        if data.num_rows == 0:
            return 0
        if not keys:
            raise WarehouseError("upsert_arrow needs key columns")
        cols = ", ".join(_ident(c) for c in data.column_names)
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(f"LOCK TABLE {_ident(table)} IN SHARE ROW EXCLUSIVE MODE")
            tmp = self._stage(cur, table, data)
            on = " AND ".join(f"t.{_ident(k)} IS NOT DISTINCT FROM i.{_ident(k)}" for k in keys)
            cur.execute(f"DELETE FROM {_ident(table)} t USING {_ident(tmp)} i WHERE {on}")
            cur.execute(f"INSERT INTO {_ident(table)} ({cols}) SELECT {cols} FROM {_ident(tmp)}")
            return max(cur.rowcount, 0)

    # -- partition swap ----------------------------------------------------------------
    def _qual(self, name: str) -> str:
        return f"{_ident(self.schema)}.{_ident(name)}"

    def _open_extra(self) -> psycopg.Connection:
        assert self._connect is not None
        conn = self._connect()
        conn.autocommit = True
        conn.execute("SET TimeZone TO 'UTC'")
        conn.execute("SET client_encoding TO 'UTF8'")
        return conn

    def _drop_stage_leftovers(self, prefix: str) -> None:
        """Staging tables of this partition left by a load that died before its swap (the
        caller holds the partition lock, so no live load owns one)."""
        rows = self.query(
            "SELECT relname FROM pg_class WHERE relnamespace = to_regnamespace(?) AND relkind = 'r' "
            "AND left(relname, ?) = ?",
            [_ident(self.schema), len(prefix), prefix],
        )
        for (name,) in rows:
            log.info("dropping %s.%s, left by a load that stopped before its swap", self.schema, name)
            self.execute(f"DROP TABLE IF EXISTS {_ident(name)}")

    def _replace_by_swap(
        self, partition: dict[str, Any], parquet_files: Sequence[Path], entry: LoadLogEntry | None
    ) -> int:
        """COPY into a fresh table over several connections, index it, then detach + drop the
        old partition and attach the new one in one transaction. Until that transaction commits
        the old partition is what readers see; a failure drops the staging table, a crash
        leaves it to the next load of the partition to drop."""
        import pyarrow.parquet as pq

        table = _SWAP_TABLE
        key = f"{partition['x_source']}{KEY_SEP}{partition['x_billing_period']}"
        digest = self.query("SELECT left(md5(?), 24)", [key])[0][0]
        part, prefix = PART_PREFIX + digest, f"{STAGE_PREFIX}{digest}_"
        stage = prefix + uuid.uuid4().hex[:8]
        bound = sql.Literal(key).as_string(self.conn)
        label = " ".join(str(v) for v in partition.values())
        current: Path | None = None
        metas: list[pq.FileMetaData] = []
        try:
            for path in parquet_files:
                current = Path(path)
                metas.append(pq.read_metadata(current))
        except Exception as e:  # a missing / unreadable file: nothing written yet
            raise WarehouseError(f"replace_partition {table} {partition} failed (file {current}): {e}") from e
        with self.partition_lock(table, partition):
            self._drop_stage_leftovers(prefix)
            staged = False
            try:
                inserted = 0
                if parquet_files:
                    types = self._column_types(table)
                    # the staged table becomes the partition: it goes where the parent puts its
                    # partitions (ALTER TABLE focus_costs SET TABLESPACE), not to the default
                    space = self.query(
                        "SELECT t.spcname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE n.nspname = ? AND c.relname = ?",
                        [self.schema, table],
                    )
                    self.execute(
                        f"CREATE TABLE {_ident(stage)} (LIKE {_ident(table)} INCLUDING DEFAULTS "
                        "INCLUDING CONSTRAINTS INCLUDING GENERATED)"
                        + (f" TABLESPACE {_ident(space[0][0])}" if space else "")
                    )
                    staged = True
                    # The partition bound as a CHECK: rows of another partition are refused as
                    # they arrive, and ATTACH finds its constraint proven and skips its scan.
                    self.execute(
                        f"ALTER TABLE {_ident(stage)} ADD CONSTRAINT {_ident(stage + '_bound')} "
                        f"CHECK ({KEY_SQL} IS NOT NULL AND {KEY_SQL} = {bound})"
                    )
                    progress = Progress(
                        f"{label}: COPY into {self.schema}.{table}", sum(m.num_rows for m in metas)
                    )
                    inserted = self._parallel_copy(stage, table, types, parquet_files, metas, progress)
                    self._build_indexes(table, stage)
                for attempt in range(1, SWAP_LOCK_TRIES + 1):
                    try:
                        self._swap(
                            stage if staged else None,
                            part,
                            key,
                            bound,
                            attempt < SWAP_LOCK_TRIES,
                            entry,
                            inserted,
                        )
                        break
                    except psycopg.errors.LockNotAvailable:
                        if attempt == SWAP_LOCK_TRIES:
                            raise
                        log.info("%s: focus_costs busy with readers, swap retried (%d)", label, attempt)
                        time.sleep(1.0)
                staged = False
                return inserted
            except WarehouseError:
                raise
            except Exception as e:
                err = (
                    DataRefused
                    if isinstance(e, psycopg.DataError | psycopg.IntegrityError)
                    else WarehouseError
                )
                raise err(f"replace_partition {table} {partition} failed: {e}") from e
            finally:
                if staged:
                    try:
                        self.execute(f"DROP TABLE IF EXISTS {_ident(stage)}")
                    except psycopg.Error:  # connection lost: the next load of the partition drops it
                        log.warning("could not drop staging table %s.%s", self.schema, stage, exc_info=True)

    def _swap(
        self,
        stage: str | None,
        part: str,
        key: str,
        bound: str,
        timed: bool,
        entry: LoadLogEntry | None,
        rows: int,
    ) -> None:
        """One transaction: detach + drop the old partition, clear the key from the DEFAULT
        partition, attach `stage` as the partition, write load_log. DETACH locks focus_costs
        exclusively, so readers queue behind it: with `timed`, waiting longer than
        SWAP_LOCK_TIMEOUT for a lock gives up (LockNotAvailable) and lets them through."""
        table = _SWAP_TABLE
        with self.conn.transaction(), self.conn.cursor() as cur:
            if timed:
                cur.execute(f"SET LOCAL lock_timeout = '{SWAP_LOCK_TIMEOUT}'")
            cur.execute(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE i.inhparent = to_regclass(%s) AND c.relname IN (%s, %s)",
                [_ident(table), part, DEFAULT_PART],
            )
            present = {r[0] for r in cur.fetchall()}
            if part in present:
                cur.execute(f"ALTER TABLE {_ident(table)} DETACH PARTITION {_ident(part)}")
                cur.execute(f"DROP TABLE {_ident(part)}")
            if DEFAULT_PART in present:  # rows inserted directly; ATTACH refuses overlap
                cur.execute(f"DELETE FROM {_ident(DEFAULT_PART)} WHERE {KEY_SQL} = %s", [key])
            if stage is not None:
                cur.execute(f"ALTER TABLE {_ident(stage)} RENAME TO {_ident(part)}")
                cur.execute(
                    f"ALTER TABLE {_ident(table)} ATTACH PARTITION {_ident(part)} FOR VALUES IN ({bound})"
                )
            if entry is not None:
                cur.execute("SET LOCAL lock_timeout = 0")
                entry.row_count = rows
                self._insert_log(cur, entry)

    def _parallel_copy(
        self,
        stage: str,
        table: str,
        types: dict[str, str],
        paths: Sequence[Path],
        metas: Sequence[Any],
        progress: Progress,
    ) -> int:
        """COPY the files into `stage`, one contiguous range of (file, row group) per connection:
        the server writes each connection's rows in its own backend, in parallel."""
        units = [
            (f, rg, m.row_group(rg).num_rows) for f, m in enumerate(metas) for rg in range(m.num_row_groups)
        ]
        shares = _split_units(units, self.copy_connections)
        target = self._qual(stage)
        errors: list[BaseException] = []
        stop = threading.Event()
        counts = [0] * len(shares)

        def work(i: int, conn: psycopg.Connection | None) -> None:
            try:
                if conn is None:
                    conn = self._open_extra()
                    try:
                        counts[i] = self._copy_share(
                            conn, table, target, types, paths, shares[i], progress, stop
                        )
                    finally:
                        conn.close()
                else:
                    counts[i] = self._copy_share(conn, table, target, types, paths, shares[i], progress, stop)
            except BaseException as e:  # noqa: BLE001 - re-raised by the caller below
                stop.set()
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i, None), daemon=True) for i in range(1, len(shares))]
        for t in threads:
            t.start()
        if shares:
            work(0, self.conn)
        for t in threads:
            t.join()
        if errors:
            first = next((e for e in errors if not isinstance(e, _Stopped)), errors[0])
            raise first
        return sum(counts)

    def _copy_share(
        self,
        conn: psycopg.Connection,
        table: str,
        target: str,
        types: dict[str, str],
        paths: Sequence[Path],
        share: list[tuple[int, list[int]]],
        progress: Progress,
        stop: threading.Event,
    ) -> int:
        import pyarrow.parquet as pq

        rows = 0
        for f, groups in share:
            path = Path(paths[f])
            pf = pq.ParquetFile(path, pre_buffer=False)
            try:
                with conn.cursor() as cur:
                    batches = _until(stop, pf.iter_batches(batch_size=COPY_BATCH_ROWS, row_groups=groups))
                    rows += self._copy(
                        cur,
                        table,
                        pf.schema_arrow,
                        batches,
                        progress,
                        f"parquet file {path.name}",
                        types=types,
                        target=target,
                    )
            finally:
                pf.close()
        return rows

    def _build_indexes(self, table: str, stage: str) -> None:
        """The parent's indexes on `stage`, over as many connections as the COPY used, so
        ATTACH adopts them instead of building its own."""
        defs = [
            r[0]
            for r in self.query(
                "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = to_regclass(?) ORDER BY indexrelid",
                [_ident(table)],
            )
        ]
        stmts = []
        for k, d in enumerate(defs):
            m = _INDEXDEF_RE.match(d)
            if m is None:
                raise WarehouseError(f"cannot rebuild index of {table} for its staging table: {d}")
            stmts.append(
                f"CREATE {m.group(1) or ''}INDEX {_ident(f'{stage}_i{k}')} ON {self._qual(stage)} {m.group(2)}"
            )
        n = min(self.copy_connections, len(stmts))
        errors: list[BaseException] = []

        def work(mine: list[str], conn: psycopg.Connection | None) -> None:
            try:
                own = conn is None
                c = self._open_extra() if conn is None else conn
                try:
                    for st in mine:
                        c.execute(st)
                finally:
                    if own:
                        c.close()
            except BaseException as e:  # noqa: BLE001 - re-raised below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(stmts[i::n], None), daemon=True) for i in range(1, n)]
        for t in threads:
            t.start()
        if stmts:
            work(stmts[0 :: max(n, 1)], self.conn)
        for t in threads:
            t.join()
        if errors:
            raise errors[0]


class _Stopped(WarehouseError):
    """Another connection's COPY failed: this one stops (its COPY is aborted)."""


def _until(stop: threading.Event, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for b in batches:
        if stop.is_set():
            raise _Stopped("stopped: another COPY connection failed")
        yield b


def _split_units(units: list[tuple[int, int, int]], n: int) -> list[list[tuple[int, list[int]]]]:
    """(file, row group, rows) in file order -> at most n contiguous shares of about equal rows,
    each as [(file, [row groups])]."""
    total = sum(r for _, _, r in units)
    n = max(1, min(n, len(units)))
    shares: list[list[tuple[int, list[int]]]] = [[] for _ in range(n)]
    done = 0
    for f, rg, rows in units:
        i = min(n - 1, done * n // total) if total else 0
        share = shares[i]
        if share and share[-1][0] == f:
            share[-1][1].append(rg)
        else:
            share.append((f, [rg]))
        done += rows
    return [s for s in shares if s]
