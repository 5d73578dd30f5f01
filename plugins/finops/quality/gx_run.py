"""Run the rule suite with GX Core's SQL engine against a DuckDB relation: a view over staging
parquet, or the partition the embedded warehouse has just inserted (not yet committed).

Why SQL and not pandas: GX pushes every expectation down as SQL, DuckDB streams the data
column by column, so a 10M-row month validates in bounded memory. Two passes: BOOLEAN_ONLY
over everything (one aggregate per column, fast), then SUMMARY only for the failed rules to
get row counts and sample values for the messages.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from finops.quality.rules import Rule
from finops.quality.suite import build_suite

if TYPE_CHECKING:
    import duckdb

_QUIET = ("great_expectations", "great_expectations.core", "great_expectations.data_context")


def _context() -> Any:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    return ctx


def run_suite(
    con: duckdb.DuckDBPyConnection, table: str, rules: list[Rule]
) -> tuple[dict[str, Any], list[tuple[Rule, dict[str, Any]]]]:
    """(GX result as JSON dict, [(failed rule, its SUMMARY result entry)]).

    GX runs on `con` itself (gx_duckdb.shared): it sees `con`'s temp views and the rows of
    its open transaction, and inherits its memory limit and threads."""
    import finops.quality.gx_duckdb as gd  # registers the dialect

    ctx = _context()
    name = f"staging_{uuid.uuid4().hex[:8]}"
    with gd.shared(con) as engine_kwargs:
        ds = ctx.data_sources.add_sql(
            name=name, connection_string=f"{gd.SCHEME}:///:memory:", kwargs=engine_kwargs
        )
        return _validate(ds, table, rules)


def _validate(
    ds: Any, table: str, rules: list[Rule]
) -> tuple[dict[str, Any], list[tuple[Rule, dict[str, Any]]]]:
    try:
        batch = (
            ds.add_table_asset(name="focus", table_name=table)
            .add_batch_definition_whole_table("all")
            .get_batch()
        )
        result = batch.validate(build_suite(rules), result_format="BOOLEAN_ONLY").to_json_dict()
        failed_keys = {r["expectation_config"]["meta"]["rule"] for r in result["results"] if not r["success"]}
        failed = [r for r in rules if r.key in failed_keys]
        by_key: dict[str, dict[str, Any]] = {}
        # second pass, failed rules only: SUMMARY gives counts + sample values of column rules;
        # rows rules show sampled rows only in COMPLETE (capped by GX at 200 rows, values cut)
        complete = [r for r in failed if r.kind == "rows" and r.show_values]
        summary = [r for r in failed if r not in complete]
        for subset, fmt in ((summary, "SUMMARY"), (complete, "COMPLETE")):
            if subset:
                res = batch.validate(
                    build_suite(subset, name=f"focus_staging_{fmt.lower()}"), result_format=fmt
                )
                by_key.update(
                    {r["expectation_config"]["meta"]["rule"]: r for r in res.to_json_dict()["results"]}
                )
        details = [(r, by_key[r.key]) for r in failed if r.key in by_key]
        result["results"] = [
            by_key.get(r["expectation_config"]["meta"]["rule"], r) for r in result["results"]
        ]
        return result, details
    finally:
        try:
            ds.get_engine().dispose()
        except Exception:  # disposal is best effort; the connection belongs to the caller
            logging.getLogger(__name__).debug("engine dispose failed", exc_info=True)


def _show(values: list[Any], limit: int = 5) -> str:
    """Distinct sample values, repr'd and cut, so hostile text stays inert in the message."""
    seen: list[str] = []
    for v in values:
        s = repr(tuple(v) if isinstance(v, list) else v)
        s = s if len(s) <= 80 else s[:77] + "..."
        if s not in seen:
            seen.append(s)
    more = ", ..." if len(seen) > limit else ""
    return "[" + ", ".join(seen[:limit]) + more + "]"


def _rows(n: Any) -> str:
    return "1 row" if n == 1 else f"{n} rows"


def _row_value(row: Any, cols: tuple[str, ...]) -> Any:
    if isinstance(row, dict):
        vals = [row.get(c) for c in cols]
    else:
        vals = list(row)[: len(cols)]
    return vals[0] if len(vals) == 1 else tuple(vals)


def _exception(entry: dict[str, Any]) -> str | None:
    info = entry.get("exception_info") or {}
    if info.get("raised_exception"):
        return str(info.get("exception_message") or "error")
    for v in info.values():  # GX 1.x keys metric errors by metric id
        if isinstance(v, dict) and v.get("exception_message"):
            return str(v["exception_message"])
    return None


def sample(values: list[Any], limit: int = 5) -> list[str]:
    """Distinct example values, repr'd (control characters escaped) and cut to 80 characters:
    safe to print in a report, a log line or an alert whatever the export held."""
    seen: list[str] = []
    for v in values:
        s = repr(tuple(v) if isinstance(v, list) else v)
        s = s if len(s) <= 80 else s[:77] + "..."
        if s not in seen:
            seen.append(s)
        if len(seen) == limit:
            break
    return seen


def failure_problem(rule: Rule, entry: dict[str, Any]) -> dict[str, Any]:
    """The failure as data for a quarantine report: column, rule, rows failed, examples."""
    res = entry.get("result") or {}
    if rule.kind == "rows":
        n = res.get("observed_value")
        rows = (res.get("details") or {}).get("unexpected_rows") or [] if rule.show_values else []
        examples = sample([_row_value(r, rule.needs) for r in rows])
    else:
        n = res.get("unexpected_count")
        examples = [] if rule.kind == "not_null" else sample(res.get("partial_unexpected_list") or [])
    return {
        "column": rule.column,
        "rule": rule.rule,
        "rows": int(n) if isinstance(n, int | float) else None,
        "examples": examples,
        "message": failure_message(rule, entry),
    }


def failure_message(rule: Rule, entry: dict[str, Any]) -> str:
    """e.g. "charge_category: values outside allowed set: ['Bogus'] (3 rows)"."""
    res = entry.get("result") or {}
    error = _exception(entry)
    if error:
        return f"{rule.column}: {rule.rule} could not be checked: {error[:200]}"
    if rule.kind == "rows":
        n = res.get("observed_value")
        if rule.show_values:
            rows = (res.get("details") or {}).get("unexpected_rows") or []
            sample = [_row_value(r, rule.needs) for r in rows]
            return f"{rule.column}: {rule.message}: {_show(sample)} ({_rows(n)})"
        return f"{rule.column}: {rule.message} ({_rows(n)})"
    n = res.get("unexpected_count")
    if rule.kind == "not_null":
        return f"{rule.column}: {rule.message} ({_rows(n)})"
    return f"{rule.column}: {rule.message}: {_show(res.get('partial_unexpected_list') or [])} ({_rows(n)})"
