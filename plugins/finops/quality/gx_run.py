"""Run the rule suite with GX Core's SQL engine against a DuckDB relation: a view over staging
parquet, or the partition the embedded warehouse has just inserted (not yet committed).

Why SQL and not pandas: GX pushes every expectation down as SQL, DuckDB streams the data
column by column, so a 10M-row month validates in bounded memory. Each pass is a GX Checkpoint
over a ValidationDefinition (batch + suite), as GX users run it: BOOLEAN_ONLY over everything
(one aggregate per column, fast), then SUMMARY only for the failed rules to get row counts and
sample values for the messages. The results stay in the run's (ephemeral) context, so a
quarantined batch can have them rendered as a Data Docs site beside its files (`DataDocs`);
a passing batch never pays for rendering.
"""

from __future__ import annotations

import html
import logging
import uuid
from dataclasses import dataclass
from pathlib import Path
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


@dataclass
class DataDocs:
    """The GX context holding a batch's validation results, able to render them as a Data Docs
    site (GX's own HTML: index.html + one page per Checkpoint run) into a folder."""

    context: Any

    def render(self, folder: Path) -> Path:
        """Build the site under `folder` (created); return its index.html.

        GX writes the values it quotes (unexpected values, sampled rows) into the HTML as they
        are, so a hostile export value would become markup: they are HTML-escaped in the stored
        results first."""
        store = self.context.validation_results_store
        for key in store.list_keys():
            run = store.get(key)
            for r in run.results:
                r.result = _escaped(r.result)
            store.set(key, run)
        folder.mkdir(parents=True, exist_ok=True)
        site = f"quarantine_{uuid.uuid4().hex[:8]}"
        self.context.add_data_docs_site(
            site,
            {
                "class_name": "SiteBuilder",
                "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(folder)},
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            },
        )
        self.context.build_data_docs(site_names=[site])
        index = folder / "index.html"
        if not index.is_file():
            raise RuntimeError(f"GX built no Data Docs index under {folder}")
        return index


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return html.escape(value)
    if isinstance(value, dict):
        return {k: _escaped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_escaped(v) for v in value)
    return value


def run_suite(
    con: duckdb.DuckDBPyConnection, table: str, rules: list[Rule]
) -> tuple[dict[str, Any], list[tuple[Rule, dict[str, Any]]], DataDocs]:
    """(GX result as JSON dict, [(failed rule, its SUMMARY result entry)], the results' DataDocs).

    GX runs on `con` itself (gx_duckdb.shared): it sees `con`'s temp views and the rows of
    its open transaction, and inherits its memory limit and threads."""
    import finops.quality.gx_duckdb as gd  # registers the dialect

    ctx = _context()
    name = f"staging_{uuid.uuid4().hex[:8]}"
    with gd.shared(con) as engine_kwargs:
        ds = ctx.data_sources.add_sql(
            name=name, connection_string=f"{gd.SCHEME}:///:memory:", kwargs=engine_kwargs
        )
        result, details = _validate(ctx, ds, table, rules)
        return result, details, DataDocs(ctx)


def _checkpoint(ctx: Any, batch_definition: Any, suite: Any, result_format: Any) -> dict[str, Any]:
    """Run `suite` on the batch through a GX Checkpoint; the result as a JSON dict."""
    import great_expectations as gx

    suite = ctx.suites.add(suite)
    vd = ctx.validation_definitions.add(
        gx.ValidationDefinition(
            name=f"{suite.name}_{uuid.uuid4().hex[:6]}", data=batch_definition, suite=suite
        )
    )
    checkpoint = ctx.checkpoints.add(
        gx.Checkpoint(
            name=f"{vd.name}_checkpoint", validation_definitions=[vd], actions=[], result_format=result_format
        )
    )
    (run,) = checkpoint.run().run_results.values()
    result: dict[str, Any] = run.to_json_dict()
    return result


def _validate(
    ctx: Any, ds: Any, table: str, rules: list[Rule]
) -> tuple[dict[str, Any], list[tuple[Rule, dict[str, Any]]]]:
    try:
        batch_definition = ds.add_table_asset(
            name="focus", table_name=table
        ).add_batch_definition_whole_table("all")
        result = _checkpoint(ctx, batch_definition, build_suite(rules), "BOOLEAN_ONLY")
        failed_keys = {r["expectation_config"]["meta"]["rule"] for r in result["results"] if not r["success"]}
        failed = [r for r in rules if r.key in failed_keys]
        by_key: dict[str, dict[str, Any]] = {}
        # second pass, failed rules only: SUMMARY gives counts + sample values of column rules;
        # rows rules show sampled rows only in COMPLETE (capped by GX at 200 rows, values cut)
        complete = [r for r in failed if r.kind == "rows" and r.show_values]
        summary = [r for r in failed if r not in complete]
        for subset, fmt in ((summary, "SUMMARY"), (complete, "COMPLETE")):
            if subset:
                res = _checkpoint(
                    ctx, batch_definition, build_suite(subset, name=f"focus_staging_{fmt.lower()}"), fmt
                )
                by_key.update({r["expectation_config"]["meta"]["rule"]: r for r in res["results"]})
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
