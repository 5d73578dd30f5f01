"""The billing spine, provider-agnostic: raw local files -> FOCUS (DuckDB SQL) -> validate ->
one-transaction replace of the (source, billing period) partition + `load_log` row; or
quarantine (files kept, `load_log` row, alert) with the loaded partition untouched.

Every billing source (AWS CUR, GCP, Azure, Lambda) hands a `RawBatch` plus a `Converter`
(pure SQL text, in finops.focus.*) to `load_batch`; both types live in finops.batch, below the
extractors, the converters and this module, and are re-exported here. Two ways through, one
judgement:

- embedded DuckDB warehouse (default): the converter's SELECT runs inside the warehouse
  transaction, straight into focus_costs; the GX suite and the reconciliation read the new
  rows before COMMIT (`_load_direct`). A month is written once: 1.3x (10M rows) to
  1.6x (2M) faster than going through staging (bench/ingest.py).
- PostgreSQL and dry runs: the SELECT streams into staging parquet in a scratch DuckDB
  (memory limit + spill directory under FINOPS_HOME), is validated there, then COPYed.

Both run out-of-core, so a 10M-row month stays well under 1.5 GB of RAM.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finops.batch import ConversionError, ConvertContext, Converter, RawBatch
from finops.exceptions import FinopsError
from finops.focus.schema import COLUMNS, Kind
from finops.paths import path_segment, subdir
from finops.progress import watch_duckdb
from finops.sql_text import sql_ident, sql_literal
from finops.warehouse.base import DataRefused, LoadLogEntry

if TYPE_CHECKING:
    import duckdb

    from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)

FOCUS_TABLE = "focus_costs"
STAGING_TYPES = {
    Kind.STRING: "VARCHAR",
    Kind.MONEY: "DECIMAL(38,10)",
    Kind.QUANTITY: "DECIMAL(38,12)",
    Kind.TIMESTAMP: "TIMESTAMP",
    Kind.JSON: "VARCHAR",
}


# --------------------------------------------------------------------------- what a load notes
@dataclass
class LoadNotes:
    """What a load says about the delivery besides its totals, for load_log and the warning:
    the detected variant, the rows per FOCUS column filled in because the export lacks it,
    and the unit values outside FOCUS UnitFormat (kept as sent: never a reason to quarantine)."""

    variant: str | None = None
    derived: dict[str, int] = field(default_factory=dict)
    unknown_units: dict[str, dict[str, int]] = field(default_factory=dict)

    def apply(self, entry: LoadLogEntry) -> None:
        entry.variant = self.variant
        entry.derived_columns = dict(self.derived) or None
        entry.unknown_units = dict(self.unknown_units) or None

    def describe(self) -> str:
        """e.g. "derived: ServiceSubcategory 120 rows; unknown units kept: PricingUnit '10K' 3 rows"."""
        parts = []
        if self.derived:
            parts.append("derived: " + ", ".join(f"{c} {_rows(n)}" for c, n in sorted(self.derived.items())))
        if self.unknown_units:
            units = [
                f"{col} {u!r} {_rows(n)}"
                for col, by in sorted(self.unknown_units.items())
                for u, n in by.items()
            ]
            parts.append("unknown units kept (not FOCUS UnitFormat): " + ", ".join(units))
        return "; ".join(parts)


class LoadInterrupted(FinopsError, RuntimeError):
    """The load was stopped from outside while DuckDB ran a query (the task's execution_timeout):
    not bad input, so it is raised (the task fails and may retry), never quarantined."""


def _check_interrupted(e: BaseException) -> None:
    """Raise LoadInterrupted when `e` is DuckDB's report of a stopped query.

    DuckDB's Python client runs signal handlers while a query executes; when one raises (Airflow's
    execution_timeout raises AirflowTaskTimeout from SIGALRM) it cancels the query and raises
    RuntimeError('Query interrupted') in its place, the original exception lost. Read as bad
    input, a timed-out load was quarantined and its task failed without retries."""
    if isinstance(e, LoadInterrupted):
        raise e
    if type(e) is RuntimeError and str(e) == "Query interrupted":
        raise LoadInterrupted(
            "stopped while DuckDB ran a query (the task's execution_timeout?): "
            "nothing loaded, the partition is as it was"
        ) from e


# --------------------------------------------------------------------------- load ids
def make_load_id(source: str, billing_period: str, fingerprint: str) -> str:
    """Deterministic: the same delivery always gets the same load id (idempotent rows)."""
    h = hashlib.sha256(f"{source}\x1f{billing_period}\x1f{fingerprint}".encode()).hexdigest()
    return f"{source}-{billing_period}-{h[:16]}"


# --------------------------------------------------------------------------- DuckDB engine
@dataclass
class StagingResult:
    staging_file: Path
    row_count: int
    raw_billed_total: Decimal
    focus_billed_total: Decimal
    focus_effective_total: Decimal
    currencies: list[str]
    raw_by_currency: dict[str | None, Decimal] = field(default_factory=dict)
    notes: LoadNotes = field(default_factory=LoadNotes)


def _engine(tmp: Path) -> duckdb.DuckDBPyConnection:
    import duckdb

    from finops.warehouse.duckdb_wh import memory_limit, threads

    con = duckdb.connect(":memory:")
    mem = memory_limit()  # the one reading of FINOPS_DUCKDB_MEMORY_LIMIT, as the warehouse uses
    con.execute(f"SET memory_limit = {sql_literal(mem)}")
    con.execute(f"SET threads = {threads(min(os.cpu_count() or 2, 8))}")
    con.execute(f"SET temp_directory = {sql_literal(str(tmp))}")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET TimeZone = 'UTC'")
    return con


def _canonical_select(inner: str) -> str:
    """Cast the converter's output to the canonical FOCUS types, in schema order. Key-value
    columns (Tags, SkuPriceDetails) get nested object / array values stringified: FOCUS allows
    only flat values there, and a real export carrying one must load, not be quarantined."""
    from finops.focus.projection import flat_key_value_sql

    def expr(c: Any) -> str:
        cast = f"CAST({sql_ident(c.snake)} AS {STAGING_TYPES[c.kind]})"
        return flat_key_value_sql(cast) if c.kind is Kind.JSON else cast

    cols = ",\n  ".join(f"{expr(c)} AS {sql_ident(c.snake)}" for c in COLUMNS)
    return f"SELECT\n  {cols}\nFROM (\n{inner}\n) AS focus_out"


def _detect_variant(converter: Converter, columns: Sequence[str]) -> str | None:
    """Converter.variant(columns), or None. A detector that fails names no variant: the load
    itself goes on (what it can convert is judged by the conversion and the checks)."""
    detect = getattr(converter, "variant", None)
    if detect is None:
        return None
    try:
        name = detect(list(columns))
    except Exception as e:  # noqa: BLE001 - an optional label must not fail a load
        log.warning("%s: variant detection failed: %s", getattr(converter, "name", converter), _short(e, 300))
        return None
    return str(name)[:200] if name else None


def _raw_views(
    con: duckdb.DuckDBPyConnection, batch: RawBatch, converter: Converter, ctx: ConvertContext
) -> None:
    """Temp views `finops_raw_src` (the files as read) and `finops_raw` (normalised) on `con`;
    fills ctx.raw_columns and ctx.variant. ConversionError for unreadable files or missing
    required columns."""
    files = [str(p) for p in batch.files]
    try:
        con.execute(f"CREATE OR REPLACE TEMP VIEW finops_raw_src AS {converter.reader_sql(files)}")
        cols = {r[0]: r[1] for r in con.execute("DESCRIBE finops_raw_src").fetchall()}
        ctx.variant = _detect_variant(converter, list(cols))
        normalize = getattr(converter, "normalize_sql", None)
        if normalize is not None:
            con.execute(f"CREATE OR REPLACE TEMP VIEW finops_raw AS {normalize('finops_raw_src', cols)}")
            cols = {r[0]: r[1] for r in con.execute("DESCRIBE finops_raw").fetchall()}
        else:
            con.execute("CREATE OR REPLACE TEMP VIEW finops_raw AS SELECT * FROM finops_raw_src")
    except Exception as e:  # noqa: BLE001 - any reader failure is a bad-input error
        _check_interrupted(e)
        raise ConversionError(f"cannot read raw files: {_short(e)}") from e
    # DuckDB names are case-insensitive: a header re-cased by a warehouse unload is the same column
    present = {c.lower() for c in cols}
    missing = [c for c in getattr(converter, "required_raw_columns", ()) if c.lower() not in present]
    if missing:
        raise ConversionError(f"missing required column(s): {', '.join(missing)}")
    ctx.raw_columns = cols


def focus_select(
    con: duckdb.DuckDBPyConnection, batch: RawBatch, converter: Converter, ctx: ConvertContext
) -> str:
    """Temp views over the raw files on `con`, and the SELECT mapping them to canonical FOCUS rows:
    what both loads write, and what bench/ingest.py times alone. ConversionError for bad input."""
    _raw_views(con, batch, converter, ctx)
    ctx.converted_sql = converter.focus_sql("finops_raw", ctx)
    return _canonical_select(ctx.converted_sql)


# --------------------------------------------------------------------------- what a load notes
UNIT_COLUMNS = {
    "pricing_unit": "PricingUnit",
    "consumed_unit": "ConsumedUnit",
    "commitment_discount_unit": "CommitmentDiscountUnit",
}
KEY_VALUE_COLUMNS = {c.snake: c.name for c in COLUMNS if c.kind is Kind.JSON}

_MAX_UNITS = 50  # distinct unknown units kept per column: load_log stays small whatever arrives


def derived_counts(con: duckdb.DuckDBPyConnection, converter: Converter) -> dict[str, int]:
    """Converter.derived_counts_sql over `finops_raw`: {FOCUS column: rows filled in}. A failing
    count is logged, not raised: it describes the load, it does not judge it."""
    sql_of = getattr(converter, "derived_counts_sql", None)
    if sql_of is None:
        return {}
    try:
        rows = con.execute(sql_of("finops_raw")).fetchall()
    except Exception as e:  # noqa: BLE001 - see docstring
        _check_interrupted(e)
        log.warning(
            "%s: derived-column count failed: %s", getattr(converter, "name", converter), _short(e, 300)
        )
        return {}
    out: dict[str, int] = {}
    for column, n in rows:
        if column is not None and n:
            out[str(column)] = out.get(str(column), 0) + int(n)
    return out


def nested_key_value_counts(
    con: duckdb.DuckDBPyConnection, relation: str, converted_sql: str
) -> dict[str, int]:
    """Rows whose Tags / SkuPriceDetails held nested objects or arrays, which the canonical
    select stringified. The rewritten object is to_json's output, where a stringified value reads
    `:"{` or `:"[` (no blank), so that substring test on `relation` (the rows written) decides
    whether the converter's SELECT is read again to count exactly; a month without such values
    costs one pass of substring tests."""
    from finops.focus.projection import nested_key_value_sql

    probes = ", ".join(
        f"count(*) FILTER (WHERE contains(CAST({c} AS VARCHAR), ':\"' || chr(123)) "
        f"OR contains(CAST({c} AS VARCHAR), ':\"['))"
        for c in KEY_VALUE_COLUMNS
    )
    hit = con.execute(f"SELECT {probes} FROM {relation}").fetchone() or ()
    cols = [c for c, n in zip(KEY_VALUE_COLUMNS, hit, strict=True) if n]
    if not cols or not converted_sql:
        return {}
    exact = ", ".join(
        f"count(*) FILTER (WHERE {nested_key_value_sql(f'CAST({sql_ident(c)} AS VARCHAR)')})" for c in cols
    )
    counts = con.execute(f"SELECT {exact} FROM ({converted_sql}) AS focus_out").fetchone() or ()
    return {
        f"{KEY_VALUE_COLUMNS[c]} (nested values stringified)": int(n)
        for c, n in zip(cols, counts, strict=True)
        if n
    }


def unknown_units(con: duckdb.DuckDBPyConnection, relation: str) -> dict[str, dict[str, int]]:
    """{FOCUS column: {unit: rows}} for unit values outside FOCUS UnitFormat. One grouped pass
    (a month holds a few dozen distinct units), then the very regex the validator applies
    (finops.focus.units), in Python, on the distinct values only."""
    from finops.focus.units import is_focus_unit

    cols = list(UNIT_COLUMNS)
    rows = con.execute(f"SELECT {', '.join(cols)}, count(*) FROM {relation} GROUP BY ALL").fetchall()
    out: dict[str, dict[str, int]] = {}
    for *units, n in rows:
        for col, unit in zip(cols, units, strict=True):
            if unit is None or is_focus_unit(unit):
                continue
            by = out.setdefault(UNIT_COLUMNS[col], {})
            if unit in by or len(by) < _MAX_UNITS:
                by[unit] = by.get(unit, 0) + int(n)
    return {col: dict(sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))) for col, by in out.items()}


def load_notes(
    con: duckdb.DuckDBPyConnection,
    converter: Converter,
    ctx: ConvertContext,
    relation: str,
    derived: dict[str, int] | None = None,
) -> LoadNotes:
    """The notes of one converted delivery: `relation` holds its FOCUS rows, `finops_raw` its raw
    rows (both on `con`). `derived`: the converter's counts when already taken (the direct load
    takes them before its transaction: a failing query would abort the transaction)."""
    derived = dict(derived) if derived is not None else derived_counts(con, converter)
    derived.update(nested_key_value_counts(con, relation, ctx.converted_sql))
    return LoadNotes(variant=ctx.variant, derived=derived, unknown_units=unknown_units(con, relation))


def _drop_views(con: duckdb.DuckDBPyConnection) -> None:
    for view in ("finops_batch", "finops_raw", "finops_raw_src"):
        con.execute(f"DROP VIEW IF EXISTS {view}")


def convert_to_staging(
    batch: RawBatch, converter: Converter, ctx: ConvertContext, staging_file: Path
) -> StagingResult:
    """Run the converter inside DuckDB, streaming raw -> staging parquet (zstd level 1).

    Why level 1: staging lives minutes and is read twice (validate, load); on 2M CUR rows
    zstd's default level 3 cost ~2x the whole FOCUS SQL for a 6% smaller file (92 vs 98 MiB),
    uncompressed was no faster than level 1 and 4x larger (bench/ingest.py, /tmp experiments).

    Raises ConversionError with a readable message for any bad input."""
    tmp = subdir("tmp") / f"duckdb-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True, exist_ok=True)
    staging_file.parent.mkdir(parents=True, exist_ok=True)
    con = _engine(tmp)
    try:
        sql = focus_select(con, batch, converter, ctx)
        try:
            with watch_duckdb(con, f"{batch.source} {batch.billing_period}: converting to FOCUS staging"):
                con.execute(
                    f"COPY ({sql}) TO {sql_literal(str(staging_file))} "
                    "(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE 122880)"
                )
            raw_by_currency = raw_totals(con, converter)
            stats = con.execute(
                "SELECT count(*), coalesce(sum(billed_cost), 0), coalesce(sum(effective_cost), 0), "
                "list(DISTINCT billing_currency) FROM read_parquet(?)",
                [str(staging_file)],
            ).fetchone()
            notes = load_notes(con, converter, ctx, f"read_parquet({sql_literal(str(staging_file))})")
        except Exception as e:  # noqa: BLE001
            _check_interrupted(e)
            raise ConversionError(f"conversion failed: {_short(e)}") from e
        assert stats is not None
        return StagingResult(
            staging_file=staging_file,
            row_count=int(stats[0]),
            raw_billed_total=sum(raw_by_currency.values(), Decimal(0)),
            focus_billed_total=Decimal(stats[1]),
            focus_effective_total=Decimal(stats[2]),
            currencies=sorted(c for c in (stats[3] or []) if c is not None),
            raw_by_currency=raw_by_currency,
            notes=notes,
        )
    finally:
        con.close()
        shutil.rmtree(tmp, ignore_errors=True)


def raw_totals(con: duckdb.DuckDBPyConnection, converter: Converter) -> dict[str | None, Decimal]:
    """The raw export's exact billed total per currency (over the `finops_raw` view)."""
    out: dict[str | None, Decimal] = {}
    for currency, total in con.execute(converter.raw_billed_totals_sql("finops_raw")).fetchall():
        out[currency] = out.get(currency, Decimal(0)) + Decimal(total if total is not None else 0)
    return out


def _safe(part: str) -> str:
    """A path component that cannot climb out of its folder (the one rule: paths.path_segment)."""
    return path_segment(part)


def _rows(n: int) -> str:
    return "1 row" if n == 1 else f"{n} rows"


def _short(e: BaseException, limit: int = 600) -> str:
    msg = f"{type(e).__name__}: {e}".replace("\n", " ")
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."


def check_staging(batch: RawBatch, result: StagingResult) -> tuple[Any, list[str]]:
    """Validate a converted delivery exactly as a load does: the GX suite plus an exact
    BilledCost reconciliation with the raw export. Returns (report, failures); loads and dry
    runs both call this, so a dry run can never judge a delivery differently from a load."""
    from finops.quality import validate_staging

    report = validate_staging(
        [result.staging_file],
        source=batch.source,
        billing_period=batch.billing_period,
        raw_billed_total=result.raw_billed_total,
        raw_by_currency=result.raw_by_currency,
    )
    return report, [*report.failures, *_exact_mismatch(result.focus_billed_total, result.raw_billed_total)]


def _by_currency(
    stats: Mapping[str, Any], raw_by_currency: Mapping[str | None, Decimal]
) -> dict[str, dict[str, str]]:
    """load_log.billed_by_currency: {currency: {"billed": FOCUS total, "raw": export total}} as
    exact decimal text; the scalar totals beside it add currencies up when a delivery mixes them."""
    from finops.quality.reconciliation import currencies_of

    focus = stats.get("billed_by_currency") or {}
    return {
        str(c): {"billed": str(focus.get(c, Decimal(0))), "raw": str(raw_by_currency.get(c, Decimal(0)))}
        for c in currencies_of(focus, raw_by_currency)
    }


def _exact_mismatch(focus_total: Decimal | None, raw_total: Decimal) -> list[str]:
    """Belt and braces over the to-the-cent reconciliation: the totals must match exactly."""
    if focus_total == raw_total:
        return []
    return [f"reconciliation: sum(billed_cost) {focus_total} != raw total {raw_total}"]


def _record_failed(wh: Warehouse, entry: LoadLogEntry, e: BaseException) -> None:
    """A warehouse error while replacing: log it as `failed` (the caller re-raises: retry)."""
    entry.status = "failed"
    entry.message = f"warehouse replace failed: {_short(e)}"
    try:
        wh.append_log(entry)
    except Exception:  # noqa: BLE001 - the original error matters more
        log.exception("could not record failed load")


def _log_loaded(entry: LoadLogEntry, notes: LoadNotes | None = None) -> None:
    """The load's log line; a WARNING when the spine filled columns in or kept unknown units,
    so a reader of the task log sees what the warehouse holds that the export did not say."""
    said = notes.describe() if notes is not None else ""
    level = logging.WARNING if said else logging.INFO
    variant = f", variant {entry.variant}" if entry.variant else ""
    log.log(
        level,
        "%s %s: loaded %d rows, billed %s %s (%s%s)%s; %s",
        entry.source,
        entry.billing_period,
        entry.row_count,
        entry.focus_billed_total,
        entry.currency,
        entry.load_id,
        variant,
        f"; {said}" if said else "",
        ", ".join(f"{k} {v:.1f}" for k, v in entry.timings.items()),
    )


# --------------------------------------------------------------------------- load
def _latest_loaded_id(wh: Warehouse, source: str, period: str) -> str | None:
    rows = wh.query(
        "SELECT load_id FROM load_log WHERE source = ? AND billing_period = ? AND status IN ('loaded', 'unchanged') "
        "ORDER BY finished_at DESC LIMIT 1",
        [source, period],
    )
    return rows[0][0] if rows else None


def _partition_has_rows(wh: Warehouse, source: str, period: str) -> bool:
    rows = wh.query(
        f"SELECT 1 FROM {FOCUS_TABLE} WHERE x_source = ? AND x_billing_period = ? LIMIT 1", [source, period]
    )
    return bool(rows)


def _empty_refusal(batch: RawBatch) -> str:
    return (
        f"delivery holds no rows, but {batch.source} {batch.billing_period} is already loaded: an empty "
        "delivery never replaces a loaded month (a truncated re-delivery would erase it); the month is kept "
        "as it was. If the month really is empty now, delete its rows from focus_costs and re-run"
    )


def load_batch(
    wh: Warehouse,
    batch: RawBatch,
    converter: Converter,
    *,
    run_id: str | None = None,
    force: bool = False,
    keep_staging: bool = False,
    direct: bool | None = None,
    after_load: Callable[[list[Path] | None], Any] | None = None,
) -> LoadLogEntry:
    """Convert, validate and load one delivery; returns its `load_log` entry.

    status: `loaded` (partition replaced in one transaction), `unchanged` (this very delivery
    is already the latest load; skipped unless force=True), `empty` (no data files: nothing
    touched), `quarantined` (bad input or failed validation: files kept under
    FINOPS_HOME/quarantine, alert emitted, partition untouched; also when the warehouse refuses
    the rows themselves, `DataRefused`, and when a delivery without rows would replace a month
    already loaded). Other warehouse errors while replacing are logged as
    `failed` and re-raised (the task should retry).

    `direct` (default: whenever the warehouse can, i.e. embedded DuckDB) converts straight
    into the warehouse table and validates the new rows before committing (`_load_direct`);
    otherwise the delivery goes through staging parquet (PostgreSQL, dry runs).

    `after_load(staging_files)` runs once the partition is committed: with the staging files
    just copied in (still on disk), or None after a direct load (e.g. to build rollups from
    the files instead of re-reading the warehouse)."""
    load_id = make_load_id(batch.source, batch.billing_period, batch.fingerprint)
    entry = LoadLogEntry(
        load_id=load_id,
        source=batch.source,
        provider=batch.provider,
        billing_period=batch.billing_period,
        status="loaded",
        manifest_key=batch.manifest_key,
        assembly_id=batch.assembly_id,
        files=[p.name for p in batch.files],
        run_id=run_id,
        currency=batch.currency_hint,
    )
    if (
        not force
        and _latest_loaded_id(wh, batch.source, batch.billing_period) == load_id
        and _partition_has_rows(wh, batch.source, batch.billing_period)
    ):
        entry.status = "unchanged"
        entry.message = "delivery already loaded (same fingerprint); skipped"
        wh.append_log(entry)
        log.info("%s %s: unchanged (%s)", batch.source, batch.billing_period, load_id)
        return entry
    if not batch.files:
        entry.status = "empty"
        entry.message = "delivery lists no data files; warehouse partition left as it was"
        wh.append_log(entry)
        return entry

    ctx = ConvertContext(batch.source, batch.provider, batch.billing_period, load_id)
    if direct is not False and hasattr(wh, "replace_partition_select"):
        done = _load_direct(wh, batch, converter, ctx, entry)
        if done is not None:
            if after_load is not None and done.status == "loaded":
                after_load(None)
            return done
    elif direct:
        raise ValueError(f"a {wh.dialect} warehouse cannot load directly; use direct=None")
    staging_file = (
        subdir("staging") / _safe(batch.source) / _safe(batch.billing_period) / f"{_safe(load_id)}.parquet"
    )
    t = time.perf_counter()
    try:
        try:
            result = convert_to_staging(batch, converter, ctx, staging_file)
        except ConversionError as e:
            entry.variant = ctx.variant
            return _quarantine(wh, batch, entry, error=str(e))
        entry.timings["convert_s"] = time.perf_counter() - t
        entry.row_count = result.row_count
        entry.raw_billed_total = result.raw_billed_total
        entry.focus_billed_total = result.focus_billed_total
        entry.focus_effective_total = result.focus_effective_total
        entry.currency = ",".join(result.currencies) or batch.currency_hint
        result.notes.apply(entry)
        if result.row_count == 0 and _partition_has_rows(wh, batch.source, batch.billing_period):
            return _quarantine(wh, batch, entry, error=_empty_refusal(batch))

        try:
            report, failures = check_staging(batch, result)
        except Exception as e:  # noqa: BLE001 - a validator crash must not load unvalidated data
            _check_interrupted(e)
            return _quarantine(wh, batch, entry, error=f"validation could not run: {_short(e)}")
        entry.timings["validate_s"] = time.perf_counter() - t - entry.timings["convert_s"]
        entry.billed_by_currency = _by_currency(report.stats, result.raw_by_currency)
        if not report.success or failures:
            return _quarantine(
                wh, batch, entry, report=report, error="; ".join(failures) or "validation failed"
            )

        partition = {"x_source": batch.source, "x_billing_period": batch.billing_period}
        try:
            wh.replace_partition(FOCUS_TABLE, partition, [staging_file], log=entry)
        except DataRefused as e:  # bad input the checks above let through: rolled back, never retried
            return _quarantine(wh, batch, entry, error=f"warehouse refused the rows: {_short(e)}")
        except Exception as e:
            _record_failed(wh, entry, e)
            raise
        entry.timings["total_s"] = time.perf_counter() - t
        entry.timings["load_s"] = (
            entry.timings["total_s"] - entry.timings["convert_s"] - entry.timings["validate_s"]
        )
        _log_loaded(entry, result.notes)
        if after_load is not None:
            after_load([staging_file])
        return entry
    finally:
        if not keep_staging:
            staging_file.unlink(missing_ok=True)


def _load_direct(
    wh: Any, batch: RawBatch, converter: Converter, ctx: ConvertContext, entry: LoadLogEntry
) -> LoadLogEntry | None:
    """Embedded-DuckDB fast path: in ONE warehouse transaction delete the partition, INSERT the
    converter's SELECT over the raw files, validate the inserted rows with the very checks a
    staging load runs (GX suite + exact reconciliation, `validate_relation`), then commit, or
    roll back and quarantine. The month is written once and read once (bench/ingest.py).

    Returns None when the INSERT itself fails (a NULL in a NOT NULL column, an uncastable
    value, a corrupt file part-way): the caller then re-runs the delivery through staging,
    whose report names the column, the rule and the rows, as it would for any other load."""
    from finops.quality.validate import validate_relation
    from finops.warehouse.duckdb_wh import InsertRefused

    con = wh.con
    verdict: dict[str, Any] = {}
    loaded_before = _partition_has_rows(wh, batch.source, batch.billing_period)  # the DELETE hides it below

    def check(con: duckdb.DuckDBPyConnection) -> bool:
        entry.timings["convert_insert_s"] = time.perf_counter() - t0
        try:
            raw_by_currency = raw_totals(con, converter)
            raw_total = sum(raw_by_currency.values(), Decimal(0))
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW finops_batch AS SELECT * FROM {FOCUS_TABLE} "
                f"WHERE x_source = {sql_literal(batch.source)} AND x_billing_period = {sql_literal(batch.billing_period)}"
            )
            report = validate_relation(
                con,
                "finops_batch",
                source=batch.source,
                billing_period=batch.billing_period,
                raw_billed_total=raw_total,
                raw_by_currency=raw_by_currency,
            )
            notes = load_notes(con, converter, ctx, "finops_batch", derived=derived)
        except Exception as e:  # noqa: BLE001 - a validator crash must not load unvalidated data
            _check_interrupted(e)  # rolls the transaction back and fails the load
            verdict["error"] = f"validation could not run: {_short(e)}"
            return False
        st = report.stats
        entry.row_count = int(st.get("row_count", 0))
        entry.raw_billed_total = raw_total
        entry.focus_billed_total = st.get("focus_billed_total")
        entry.focus_effective_total = st.get("focus_effective_total")
        entry.currency = (
            ",".join(sorted(c for c in st.get("currencies", {}) if c != "None")) or batch.currency_hint
        )
        entry.billed_by_currency = _by_currency(st, raw_by_currency)
        notes.apply(entry)
        verdict["notes"] = notes
        failures = [*report.failures, *_exact_mismatch(entry.focus_billed_total, raw_total)]
        if entry.row_count == 0 and loaded_before:
            failures.append(_empty_refusal(batch))
        verdict.update(report=report, failures=failures)
        entry.timings["validate_s"] = time.perf_counter() - t0 - entry.timings["convert_insert_s"]
        return report.success and not failures

    t0 = time.perf_counter()
    try:
        try:
            sql = focus_select(con, batch, converter, ctx)
        except ConversionError as e:
            entry.variant = ctx.variant
            return _quarantine(wh, batch, entry, error=str(e))
        entry.variant = ctx.variant
        derived = derived_counts(con, converter)  # outside the transaction: see load_notes
        partition = {"x_source": batch.source, "x_billing_period": batch.billing_period}
        try:
            inserted = wh.replace_partition_select(
                FOCUS_TABLE,
                partition,
                sql,
                check=check,
                log=entry,
                progress=f"{batch.source} {batch.billing_period}: converting + loading into {FOCUS_TABLE}",
            )
        except InsertRefused as e:
            log.warning(
                "%s %s: direct load refused (%s); re-running through staging for the full report",
                batch.source,
                batch.billing_period,
                _short(e, 300),
            )
            return None
        except Exception as e:
            _record_failed(wh, entry, e)
            _check_interrupted(e)  # the INSERT itself stopped by the timeout
            raise
    finally:
        try:
            _drop_views(con)
        except Exception:  # noqa: BLE001 - temp views die with the connection anyway
            log.debug("could not drop temp views", exc_info=True)
    entry.timings["total_s"] = time.perf_counter() - t0
    if inserted is None:
        report = verdict.get("report")
        error = verdict.get("error") or "; ".join(verdict.get("failures") or []) or "validation failed"
        return _quarantine(wh, batch, entry, report=report, error=error)
    _log_loaded(entry, verdict.get("notes"))
    return entry


def _quarantine(
    wh: Warehouse, batch: RawBatch, entry: LoadLogEntry, *, error: str, report: Any = None
) -> LoadLogEntry:
    """Keep the delivery's files with a report a person can act on (quarantine-report.md: cause,
    variant, failing column / rule, rows, examples, what to do), log it (load_log.message and
    .quarantine_summary) and alert; the partition is untouched."""
    from finops.alerts.events import AlertEvent, emit
    from finops.quality import diagnose, quarantine_batch
    from finops.ui.quarantine_docs import docs_url

    diagnosis = diagnose(error, report)
    qpath = quarantine_batch(
        source=batch.source,
        billing_period=batch.billing_period,
        load_id=entry.load_id,
        raw_files=list(batch.files),
        report=report,
        error=error,
        diagnosis=diagnosis,
        provider=batch.provider,
        variant=entry.variant,
    )
    entry.status = "quarantined"
    entry.message = error[:4000]
    entry.quarantine_path = str(qpath)
    entry.quarantine_summary = diagnosis.summary()
    wh.append_log(entry)
    emit(
        AlertEvent(
            kind="validation_failed",
            title=f"Billing batch quarantined: {batch.source} {batch.billing_period}",
            severity="critical",
            summary=diagnosis.text()[:1500],
            facts={
                "source": batch.source,
                "provider": batch.provider,
                "billing_period": batch.billing_period,
                "variant": entry.variant,
                "cause": diagnosis.cause,
                "load_id": entry.load_id,
                "manifest_key": batch.manifest_key,
                "assembly_id": batch.assembly_id,
                "quarantine_path": str(qpath),
                "data_docs": docs_url(diagnosis.data_docs_path) or diagnosis.data_docs_path,
            },
            dedup_key=f"ingest:{batch.source}:{batch.billing_period}",
        )
    )
    log.error(
        "%s %s: quarantined (%s): %s -- %s; report %s",
        batch.source,
        batch.billing_period,
        entry.load_id,
        diagnosis.headline,
        error,
        diagnosis.report_path,
    )
    return entry


# --------------------------------------------------------------------------- dry runs
def month_loaded_read_only(
    source: str, billing_period: str, config: Any = None, lock_timeout_s: float = 10.0
) -> bool | None:
    """Whether the configured warehouse already holds rows of (source, period), read without
    writing anything: a dry run's "this empty delivery would be quarantined" needs it, and a dry
    run must never migrate, create a schema or take a write lock. DuckDB: the file opened
    read_only (absent file: nothing loaded); PostgreSQL: a session whose transactions are read
    only. None when it cannot tell (the DuckDB file is held by a writer past `lock_timeout_s`,
    the server unreachable): the caller says so instead of guessing."""
    from finops.config import get_config

    cfg = config or get_config()
    try:
        if cfg.warehouse.conn_id:
            return _pg_month_loaded(cfg.warehouse.conn_id, cfg.warehouse.schema_, source, billing_period)
        from finops.paths import warehouse_path
        from finops.warehouse.duckdb_wh import DuckDBWarehouse

        path = warehouse_path()
        if not path.exists():
            return False
        wh = DuckDBWarehouse(path, lock_timeout_s=lock_timeout_s, read_only=True)
        try:
            return wh.table_exists(FOCUS_TABLE) and _partition_has_rows(wh, source, billing_period)
        finally:
            wh.close()
    except Exception as e:  # noqa: BLE001 - see docstring: unknown, said by the caller
        log.warning(
            "%s %s: cannot tell whether the month is loaded: %s", source, billing_period, _short(e, 300)
        )
        return None


def _pg_month_loaded(conn_id: str, schema: str, source: str, billing_period: str) -> bool:
    import psycopg
    from airflow.providers.postgres.hooks.postgres import PostgresHook
    from psycopg import sql

    uri = re.sub(
        r"^postgres(?:ql)?\+\w+://", "postgresql://", PostgresHook(postgres_conn_id=conn_id).get_uri()
    )
    with psycopg.connect(uri, autocommit=True, options="-c default_transaction_read_only=on") as conn:
        name = sql.Identifier(schema, FOCUS_TABLE).as_string(conn)
        (table,) = conn.execute("SELECT to_regclass(%s)", [name]).fetchone() or (None,)
        if table is None:
            return False
        query = sql.SQL("SELECT 1 FROM {} WHERE x_source = %s AND x_billing_period = %s LIMIT 1").format(
            sql.Identifier(schema, FOCUS_TABLE)
        )
        return conn.execute(query, [source, billing_period]).fetchone() is not None


def notes_summary(notes: LoadNotes) -> dict[str, Any]:
    """A delivery's notes as JSON-able fields (a dry run's result shows what a load would record)."""
    return {"variant": notes.variant, "derived_columns": notes.derived, "unknown_units": notes.unknown_units}


def dry_run_refusals(batch: RawBatch, row_count: int) -> list[str]:
    """What a load would refuse that the checks on the delivery alone cannot see: an empty
    delivery over a month already loaded (read-only look at the warehouse)."""
    if row_count:
        return []
    loaded = month_loaded_read_only(batch.source, batch.billing_period)
    if loaded:
        return [_empty_refusal(batch)]
    if loaded is None:
        return [
            f"delivery holds no rows and the warehouse could not be read to tell whether {batch.source} "
            f"{batch.billing_period} is loaded: a load would quarantine it if it is"
        ]
    return []
