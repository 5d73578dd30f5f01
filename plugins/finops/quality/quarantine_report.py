"""What a person reads when a delivery is quarantined: the cause, the column / rule that failed,
how many rows, a few example values, and what to do.

`diagnose` turns the spine's error text and the validation report into a `Diagnosis` (pure
data, no I/O); `render` writes it as the Markdown file kept beside the quarantined files, and
`Diagnosis.summary` is the short form stored in load_log.quarantine_summary and sent in the
alert. Example values come only through `gx_run.sample` (repr'd, cut): whatever an export
holds, it stays inert text here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from finops.quality.gx_run import sample
from finops.quality.report import ValidationReport

REPORT_NAME = "quarantine-report.md"

# cause -> (headline, what to do). The headline says what happened; the action what a person
# does next. Nothing in the warehouse changed in any of them: the month keeps its last good load.
CAUSES: dict[str, tuple[str, str]] = {
    "unreadable": (
        "the raw file(s) could not be read",
        "Open the file(s) kept here (DuckDB: `SELECT * FROM 'FILE' LIMIT 5`). A truncated or half-written "
        "file is a delivery still in progress or a broken transfer: wait for the provider's next delivery "
        "(or re-run its export) and re-run the load. A file in another format than the source's `format` "
        "in finops.yaml needs that setting fixed.",
    ),
    "missing_column": (
        "the export lacks a column the conversion needs",
        "Compare the export's columns with the variant matrix in docs/billing-exports/ for this provider. "
        "If the export is configured without the column (column selection, an older schema), add it in "
        "the provider's export settings, or set the source's `format` in finops.yaml to the one it "
        "delivers. If the export is a variant the matrix does not list, report its header line (no cost "
        "data needed): it is a converter gap, not your data.",
    ),
    "conversion": (
        "a value could not be converted (a date, an amount or a type the converter does not read)",
        "Find the example value in the kept file(s). If the provider really sent it (a date format, a "
        "locale's decimal comma), it is a converter gap: report it with this file. If the file is "
        "damaged, wait for or request a re-delivery and re-run the load.",
    ),
    "reconciliation": (
        "the converted rows do not add up to the export's own total",
        "Nothing was loaded. Compare the per-currency totals in report.json. A difference means rows "
        "were lost or doubled in conversion (a converter defect: report it with this folder) or the "
        "delivery is incomplete (a missing part file: wait for the full delivery and re-run).",
    ),
    "validation": (
        "converted rows break FOCUS rules",
        "Look at the column, the rule and the example values below. Values the provider really sends "
        "are a mapping gap in the converter: report them with this folder; do not edit the export by "
        "hand. Values that look damaged mean a damaged delivery: wait for or request a re-delivery.",
    ),
    "empty_delivery": (
        "the delivery holds no rows, but the month is already loaded",
        "An empty delivery never replaces a loaded month (a truncated re-delivery would erase it). "
        "Wait for the provider's complete delivery and re-run the load. If the month really has no "
        "cost now, delete its rows from focus_costs and re-run.",
    ),
    "validator_error": (
        "the validation itself could not run",
        "Nothing was loaded. Re-run the task (a resource limit or a transient error); if it fails the "
        "same way, report it with this folder.",
    ),
    "warehouse_refused": (
        "the warehouse refused the rows",
        "A value the warehouse cannot store (such as a NUL character) passed the checks: report it with "
        "this folder; re-running the same delivery fails the same way.",
    ),
}

_QUOTED = re.compile(r"'((?:[^']|'')*)'")
_CAST = re.compile(r"(?:convert|cast)\w*\s+(?:string\s+)?'((?:[^']|'')*)'\s+to\s+(\w+)", re.IGNORECASE)
# DuckDB's cast errors: 'invalid timestamp field format: "31/02/2021", ...' and the SQL line it
# points at, whose CAST names the FOCUS column ('LINE 12:   CAST("charge_period_end" AS TIMESTAMP)')
_DUCK_VALUE = re.compile(r'(?:format|string|value):?\s*"((?:[^"\\]|\\.)*)"')
_DUCK_LINE = re.compile(r'LINE \d+:\s*CAST\("([^"]+)" AS (\w+)')
_MISSING = re.compile(r"missing (?:required )?column\(?s?\)?:?\s*(.+)", re.IGNORECASE)


@dataclass
class Diagnosis:
    cause: str
    problems: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    report_path: str | None = None  # set once quarantine_batch has written the Markdown report
    data_docs_path: str | None = None  # the GX Data Docs index.html rendered beside the files, if any

    @property
    def headline(self) -> str:
        return CAUSES[self.cause][0]

    @property
    def action(self) -> str:
        return CAUSES[self.cause][1]

    def first(self) -> dict[str, Any]:
        return self.problems[0] if self.problems else {}

    def summary(self) -> dict[str, Any]:
        """The short form for load_log.quarantine_summary and the alert."""
        p = self.first()
        return {
            "cause": self.cause,
            "headline": self.headline,
            "column": p.get("column"),
            "rule": p.get("rule"),
            "rows": p.get("rows"),
            "examples": p.get("examples") or [],
            "problems": len(self.problems),
            "action": self.action,
            "report": self.report_path,
        }

    def text(self) -> str:
        """Alert text: what happened, where, what to do."""
        p = self.first()
        lines = [f"Cause: {self.headline}."]
        if p:
            where = " / ".join(str(x) for x in (p.get("column"), p.get("rule")) if x)
            rows = f", {p['rows']} rows" if p.get("rows") is not None else ""
            ex = f", e.g. {', '.join(p['examples'][:3])}" if p.get("examples") else ""
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            lines.append(f"Failed: {where}{rows}{ex}{more}.")
        lines.append(f"What to do: {self.action}")
        if self.error:
            lines.append(f"Detail: {self.error[:500]}")
        if self.report_path:
            lines.append(f"Report: {self.report_path}")
        return "\n".join(lines)


def _error_problem(cause: str, error: str) -> dict[str, Any]:
    if cause == "missing_column" and (m := _MISSING.search(error)):
        cols = [c.strip() for c in re.split(r",\s*", m.group(1).split(";")[0]) if c.strip()]
        return {
            "column": ", ".join(cols)[:200],
            "rule": "required column",
            "rows": None,
            "examples": [],
            "message": error[:500],
        }
    if cause == "conversion":
        column, rule, examples = None, "conversion", []
        if m := _CAST.search(error):
            rule, examples = f"cast to {m.group(2)}", sample([m.group(1).replace("''", "'")])
        elif m := _DUCK_VALUE.search(error):
            examples = sample([m.group(1)])
        if m := _DUCK_LINE.search(error):
            column, rule = m.group(1), f"cast to {m.group(2)}"
        if column or examples:
            return {
                "column": column,
                "rule": rule,
                "rows": None,
                "examples": examples,
                "message": error[:500],
            }
    return {
        "column": None,
        "rule": None,
        "rows": None,
        "examples": sample([q.replace("''", "'") for q in _QUOTED.findall(error)][:3]),
        "message": error[:500],
    }


def classify(error: str) -> str:
    """The cause of a quarantine the spine reports only as text (conversion-time errors)."""
    low = error.lower()
    if "holds no rows" in low:
        return "empty_delivery"
    if "missing required column" in low or "missing column" in low:
        return "missing_column"
    if low.startswith("cannot read raw files"):
        return "unreadable"
    if low.startswith("validation could not run"):
        return "validator_error"
    if low.startswith("warehouse refused"):
        return "warehouse_refused"
    if "reconciliation" in low:
        return "reconciliation"
    return "conversion"


def diagnose(error: str, report: ValidationReport | None = None) -> Diagnosis:
    """Cause and problems of one quarantine, from the spine's error and the validation report."""
    problems = list(report.problems) if report is not None else []
    cause = classify(error)
    if problems and cause not in ("empty_delivery", "validator_error", "warehouse_refused"):
        recon = [p for p in problems if p.get("rule") == "reconciliation"]
        cause = "reconciliation" if recon and len(recon) == len(problems) else "validation"
        # rules that name rows first: they are what a person can look at in the file
        problems.sort(key=lambda p: (p.get("rule") == "reconciliation", p.get("rows") is None))
    elif not problems:
        problems = [_error_problem(cause, error)]
    return Diagnosis(cause, problems, error)


def render(
    diagnosis: Diagnosis,
    *,
    source: str,
    billing_period: str,
    load_id: str,
    provider: str | None,
    variant: str | None,
    files: list[dict[str, Any]],
    quarantined_at: str,
    data_docs: str | None = None,
) -> str:
    """The Markdown report kept beside the quarantined files; `data_docs`: the Data Docs
    index.html relative to the report's folder."""
    out = [
        f"# Quarantined: {source} {billing_period}",
        "",
        f"**Cause:** {diagnosis.headline}. Nothing in the warehouse changed: the month keeps its last good load.",
        "",
        f"- provider: {provider or 'unknown'}",
        f"- export variant detected: {variant or 'not detected (the converter names none)'}",
        f"- load id: `{load_id}`",
        f"- quarantined at: {quarantined_at}",
        "",
        "## Files (kept in this folder)",
        "",
    ]
    for f in files:
        size = f"{f['bytes']} bytes" if "bytes" in f else "missing at quarantine time"
        out.append(f"- `{f.get('stored_as') or f['name']}` ({size}), from `{f['original']}`")
    if data_docs:
        out += ["", f"Great Expectations Data Docs of this batch's validation: [{data_docs}]({data_docs})"]
    out += ["", "## What failed", "", "| column | rule | rows | examples |", "|---|---|---|---|"]
    for p in diagnosis.problems[:50]:
        rows = "" if p.get("rows") is None else str(p["rows"])
        ex = ", ".join(p.get("examples") or [])
        out.append(f"| {_cell(p.get('column'))} | {_cell(p.get('rule'))} | {rows} | {_cell(ex)} |")
    if len(diagnosis.problems) > 50:
        out.append(f"| ... | {len(diagnosis.problems) - 50} more in report.json | | |")
    out += ["", "Messages:", ""]
    out += [f"- {_cell(p.get('message'))}" for p in diagnosis.problems[:50]]
    out += [
        "",
        "## What to do",
        "",
        diagnosis.action,
        "",
        "Re-running the load after the cause is fixed replaces the month in one transaction; "
        "the files here are never deleted by the pipeline. Full detail: report.json (and gx_result.json).",
        "",
    ]
    return "\n".join(out)


def _cell(value: Any) -> str:
    """Table-cell text: one line, no pipe, bounded."""
    text = "" if value is None else str(value)
    text = text.replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    return text if len(text) <= 300 else text[:297] + "..."
