"""ValidationReport: what `validate_staging` returns and quarantine writes as report.json."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any


@dataclass
class ValidationReport:
    success: bool
    failures: list[str]  # human-readable, one per failed rule, names the column and rule
    stats: dict[str, Any]  # row_count, focus_billed_total (Decimal), raw_billed_total, currencies ...
    gx_result: dict[str, Any] = field(default_factory=dict)  # GX validation result, JSON-serialisable
    # the failures as data, one per failed rule: {"column", "rule", "rows", "examples", "message"}
    # (rows None where a check counts no rows, e.g. reconciliation); what a quarantine report lists
    problems: list[dict[str, Any]] = field(default_factory=list)
    # the GX results, renderable as Data Docs (gx_run.DataDocs); not part of the JSON
    data_docs: Any = field(default=None, repr=False, compare=False)

    def to_json_dict(self) -> dict[str, Any]:
        """Plain JSON types; Decimals become strings so no cent is lost to float."""
        return json.loads(
            json.dumps(
                {
                    "success": self.success,
                    "failures": self.failures,
                    "problems": self.problems,
                    "stats": self.stats,
                    "gx_result": self.gx_result,
                },
                default=_jsonable,
            )
        )


def _jsonable(o: Any) -> Any:
    if isinstance(o, Decimal):
        return str(o)
    if isinstance(o, datetime | date):
        return o.isoformat()
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    return str(o)
