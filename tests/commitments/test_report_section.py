"""The Commitments section of the monthly team report: per team, covered vs coverable spend at
list price and unused commitment from commitment_coverage, rendered (escaped) in the HTML."""

from __future__ import annotations

from decimal import Decimal as D

from finops.allocation.report import TeamReport
from finops.commitments.report import team_sections
from finops.commitments.settings import parse_settings
from finops.commitments.store import refresh_period
from tests.fixtures.commitments import RULES, load_commitment_rows


def test_team_sections_and_html(duckdb_wh):
    assert team_sections(duckdb_wh, "2026-10", ["ml"]) == {}  # nothing computed yet: no section
    load_commitment_rows(duckdb_wh)
    refresh_period(duckdb_wh, "2026-10", parse_settings({}), RULES)
    got = team_sections(duckdb_wh, "2026-10", ["ml", "platform", "nobody"])
    # ml: 10 covered, 4 on demand could be (10 / 14 = 71.4 %), the SP's 1 unused via account 111
    assert got["ml"] == [{"currency": "USD", "covered": D("10.00"), "eligible": D("4.00"),
                          "coverage_pct": D("71.4"), "unused": D("1.00")}]  # fmt: skip
    assert got["platform"][0]["unused"] == D("12.00") and "nobody" not in got
    r = TeamReport("ml", "2026-10", "amortised", None, [], {}, [], [], [], commitments=got["ml"])
    html = r.html(None)
    assert "<h2>Commitments</h2>" in html and "71.4 %" in html and "4.00" in html
    assert "<h2>Commitments</h2>" not in TeamReport(
        "x", "2026-10", "amortised", None, [], {}, [], [], []
    ).html(None)
