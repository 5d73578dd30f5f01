"""validate_staging: schema check, GX suite, reconciliation for one FOCUS staging batch.

Called by the billing spine (finops.ingest.load_batch) between conversion and load; a
failing report sends the batch to quarantine. Data problems never raise: they become
failures in the report. Bad arguments (period format, float money) do raise.
"""

from __future__ import annotations

import logging
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

from finops.quality.reconciliation import reconcile, to_cents
from finops.quality.report import ValidationReport
from finops.quality.rules import build_rules, check_period
from finops.quality.schema_check import check_files

log = logging.getLogger(__name__)
VIEW = "staging"


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _stats(con: Any) -> dict[str, Any]:
    """One streaming pass for the totals the spine logs and reconciliation needs."""
    row = con.execute(
        f"SELECT count(*), coalesce(sum(billed_cost), 0), coalesce(sum(effective_cost), 0), "
        f"coalesce(sum(list_cost), 0), min(charge_period_start), max(charge_period_end) FROM {VIEW}"
    ).fetchone()
    currencies = dict(
        con.execute(f"SELECT billing_currency, count(*) FROM {VIEW} GROUP BY 1 ORDER BY 2 DESC").fetchall()
    )
    return {
        "row_count": row[0],
        "focus_billed_total": Decimal(row[1]),
        "focus_effective_total": Decimal(row[2]),
        "focus_list_total": Decimal(row[3]),
        "charge_period_min": row[4],
        "charge_period_max": row[5],
        "currencies": {str(k): v for k, v in currencies.items()},
    }


def validate_staging(
    staging_files: list[Path],
    *,
    source: str,
    billing_period: str,
    raw_billed_total: Decimal,
    memory_limit: str = "512MB",
    threads: int = 2,
) -> ValidationReport:
    """Validate FOCUS staging parquet files of one (source, billing period) batch."""
    import duckdb

    check_period(billing_period)
    to_cents(raw_billed_total)  # TypeError for float / str: money is Decimal end to end
    files = [Path(f).resolve() for f in staging_files]
    stats: dict[str, Any] = {"raw_billed_total": raw_billed_total, "files": [f.name for f in files]}
    if not files:
        return ValidationReport(False, ["staging: no staging files"], stats, {})
    failures, bad_columns = check_files(files)
    if any(f.startswith("staging: cannot read") for f in failures):
        return ValidationReport(False, failures, stats, {})

    with tempfile.TemporaryDirectory(prefix="finops-validate-") as tmp:
        db = Path(tmp) / "validate.duckdb"
        con = duckdb.connect(str(db), config={"memory_limit": memory_limit, "threads": threads})
        try:
            paths = ", ".join(_sql_str(str(f)) for f in files)
            con.execute(f"CREATE VIEW {VIEW} AS SELECT * FROM read_parquet([{paths}], union_by_name = true)")
            money_ok = not bad_columns & {
                "billed_cost",
                "effective_cost",
                "list_cost",
                "charge_period_start",
                "charge_period_end",
                "billing_currency",
            }
            if money_ok:
                stats.update(_stats(con))
        finally:
            con.close()
        if money_ok:
            if (msg := reconcile(stats["focus_billed_total"], raw_billed_total)) is not None:
                failures.append(msg)
        else:
            failures.append("billed_cost: reconciliation skipped: money / period columns unusable")

        from finops.quality.gx_run import failure_message, run_suite

        rules = [r for r in build_rules(billing_period, source) if not set(r.needs) & bad_columns]
        gx_result, failed = run_suite(db, VIEW, rules, memory_limit=memory_limit, threads=threads)
    failures += [failure_message(rule, entry) for rule, entry in failed]
    stats["rules_checked"] = len(rules)
    report = ValidationReport(not failures, failures, stats, gx_result)
    log.info("validated %s %s: %s, %d failures", source, billing_period, report.success, len(failures))
    return report
