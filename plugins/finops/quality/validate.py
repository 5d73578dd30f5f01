"""validate_staging / validate_relation: schema check, GX suite, reconciliation for one FOCUS batch.

Called by the billing spine (finops.ingest) between conversion and load; a failing report
sends the batch to quarantine. Two entry points, one judgement: `validate_staging` reads
staging parquet (PostgreSQL loads, dry runs); `validate_relation` reads a relation on a
DuckDB connection we hold (the embedded warehouse validates the partition it has just
inserted, inside the same transaction). Both run the same rules and the same reconciliation.
Data problems never raise: they become failures in the report. Bad arguments (period
format, float money) do raise.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finops.quality.reconciliation import reconcile, reconcile_by_currency, to_cents
from finops.quality.report import ValidationReport
from finops.quality.rules import build_rules, check_period
from finops.quality.schema_check import check_files

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger(__name__)
VIEW = "finops_staging"
MONEY_COLUMNS = frozenset(
    {
        "billed_cost",
        "effective_cost",
        "list_cost",
        "charge_period_start",
        "charge_period_end",
        "billing_currency",
    }
)


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _stats(con: duckdb.DuckDBPyConnection, relation: str) -> dict[str, Any]:
    """One streaming pass for the totals the spine logs and reconciliation needs."""
    row = con.execute(
        f"SELECT count(*), coalesce(sum(billed_cost), 0), coalesce(sum(effective_cost), 0), "
        f"coalesce(sum(list_cost), 0), min(charge_period_start), max(charge_period_end) FROM {relation}"
    ).fetchone()
    assert row is not None
    per_currency = con.execute(
        f"SELECT billing_currency, count(*), coalesce(sum(billed_cost), 0) FROM {relation} GROUP BY 1 ORDER BY 2 DESC"
    ).fetchall()
    return {
        "row_count": row[0],
        "focus_billed_total": Decimal(row[1]),
        "focus_effective_total": Decimal(row[2]),
        "focus_list_total": Decimal(row[3]),
        "charge_period_min": row[4],
        "charge_period_max": row[5],
        "currencies": {str(k): n for k, n, _ in per_currency},
        "billed_by_currency": {k: Decimal(total) for k, _, total in per_currency},
    }


def _problem(message: str, rule: str = "schema") -> dict[str, Any]:
    """A failure message that names its column before ':' as a report problem."""
    column = message.split(":", 1)[0].strip("'\"") if ":" in message else None
    return {"column": column, "rule": rule, "rows": None, "examples": [], "message": message}


def validate_relation(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    *,
    source: str,
    billing_period: str,
    raw_billed_total: Decimal,
    raw_by_currency: Mapping[str | None, Decimal] | None = None,
    bad_columns: frozenset[str] | set[str] = frozenset(),
    failures: list[str] | None = None,
    stats: dict[str, Any] | None = None,
) -> ValidationReport:
    """Validate `relation` (a table or view name of OUR making, on `con`) as one batch.

    `raw_by_currency`: the export's billed total per currency; when given, each currency must
    reconcile on its own too (see reconciliation.reconcile_by_currency).

    `bad_columns`: columns a schema check found missing / mistyped (their rules are skipped,
    the failures already name them)."""
    check_period(billing_period)
    to_cents(raw_billed_total)  # TypeError for float / str: money is Decimal end to end
    failures = list(failures or [])
    problems = [_problem(f) for f in failures]  # the schema check's, named by column
    stats = {"raw_billed_total": raw_billed_total, **(stats or {})}
    money_ok = not set(bad_columns) & MONEY_COLUMNS
    if money_ok:
        stats.update(_stats(con, relation))
        recon = [m for m in [reconcile(stats["focus_billed_total"], raw_billed_total)] if m is not None]
        if raw_by_currency is not None:
            recon += reconcile_by_currency(stats["billed_by_currency"], raw_by_currency)
        failures += recon
        problems += [_problem(m, rule="reconciliation") for m in recon]
    else:
        failures.append("billed_cost: reconciliation skipped: money / period columns unusable")
        problems.append(_problem(failures[-1], rule="reconciliation"))

    from finops.quality.gx_run import failure_message, failure_problem, run_suite

    rules = [r for r in build_rules(billing_period, source) if not set(r.needs) & set(bad_columns)]
    gx_result, failed, data_docs = run_suite(con, relation, rules)
    failures += [failure_message(rule, entry) for rule, entry in failed]
    problems += [failure_problem(rule, entry) for rule, entry in failed]
    stats["rules_checked"] = len(rules)
    report = ValidationReport(not failures, failures, stats, gx_result, problems, data_docs=data_docs)
    log.info("validated %s %s: %s, %d failures", source, billing_period, report.success, len(failures))
    return report


def validate_staging(
    staging_files: list[Path],
    *,
    source: str,
    billing_period: str,
    raw_billed_total: Decimal,
    raw_by_currency: Mapping[str | None, Decimal] | None = None,
    memory_limit: str = "512MB",
    threads: int = 2,
) -> ValidationReport:
    """Validate FOCUS staging parquet files of one (source, billing period) batch."""
    import duckdb

    check_period(billing_period)
    to_cents(raw_billed_total)
    files = [Path(f).resolve() for f in staging_files]
    stats: dict[str, Any] = {"raw_billed_total": raw_billed_total, "files": [f.name for f in files]}
    if not files:
        return ValidationReport(False, ["staging: no staging files"], stats, {})
    failures, bad_columns = check_files(files)
    if any(f.startswith("staging: cannot read") for f in failures):
        return ValidationReport(False, failures, stats, {})

    con = duckdb.connect(":memory:", config={"memory_limit": memory_limit, "threads": threads})
    try:
        paths = ", ".join(_sql_str(str(f)) for f in files)
        con.execute(f"CREATE VIEW {VIEW} AS SELECT * FROM read_parquet([{paths}], union_by_name = true)")
        return validate_relation(
            con,
            VIEW,
            source=source,
            billing_period=billing_period,
            raw_billed_total=raw_billed_total,
            raw_by_currency=raw_by_currency,
            bad_columns=bad_columns,
            failures=failures,
            stats=stats,
        )
    finally:
        con.close()
