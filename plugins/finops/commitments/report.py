"""The commitments section of the monthly team report: per team and currency, how much of the
team's commitment-eligible spend commitments covered (at list price) and what unused
commitment its accounts carried, from commitment_coverage (finops_commitments)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

CENT = Decimal("0.01")


def team_sections(wh: Any, period: str, teams: list[str]) -> dict[str, list[dict[str, Any]]]:
    """team -> rows {currency, covered, eligible, coverage_pct, unused}; teams without
    commitment data are absent (and so is the section)."""
    if not teams or not wh.table_exists("commitment_coverage"):
        return {}
    marks = ", ".join("?" for _ in teams)
    out: dict[str, list[dict[str, Any]]] = {}
    for team, cur, covered, eligible, unused in wh.query(
        "SELECT team, currency, SUM(covered_list), SUM(eligible_list), SUM(unused_cost) FROM commitment_coverage "
        f"WHERE billing_period = ? AND team IN ({marks}) GROUP BY team, currency ORDER BY team, currency",
        [period, *teams],
    ):
        covered, eligible, unused = Decimal(covered), Decimal(eligible), Decimal(unused)
        total = covered + eligible
        out.setdefault(team, []).append(
            {
                "currency": cur,
                "covered": covered.quantize(CENT),
                "eligible": eligible.quantize(CENT),
                "coverage_pct": None if total == 0 else (100 * covered / total).quantize(Decimal("0.1")),
                "unused": unused.quantize(CENT),
            }
        )
    return out


def capacity_block_rows(wh: Any) -> list[dict[str, Any]]:
    """The AWS Capacity Block offerings the price jobs described, priced against the latest
    on-demand price (organisation-wide, the same for every team). Described, never purchased."""
    from finops.commitments.capacity import block_row, stored_capacity_blocks

    return [block_row(region, b) for region, b in stored_capacity_blocks(wh)]
