"""The demo's cost summary judges the warehouse against the generators' totals: a mismatch or a
missing load must fail `make demo`, not scroll by in a table."""

from __future__ import annotations

from decimal import Decimal as D

from finops.demo.run import summary
from tests.allocation.focus_data import focus_row, insert_focus


def test_summary_names_every_total_that_does_not_match(duckdb_wh):
    insert_focus(duckdb_wh, [focus_row("2026-09-03", "10.004"), focus_row("2026-10-03", "20.00")])
    duckdb_wh.close()  # summary opens the warehouse itself, as the demo does
    text, problems = summary(["2026-09", "2026-10"], {"aws": {"2026-09": D("10.00"), "2026-10": D("20.00")}})
    assert problems == [] and "MISMATCH" not in text  # 10.004 is 10.00 to the cent

    text, problems = summary(["2026-09", "2026-10", "2026-11"],
                             {"aws": {"2026-09": D("10.00"), "2026-10": D("20.01"), "2026-11": D("5")}})
    assert problems == ["2026-10 aws: billed 20.0000000000 != expected 20.01",
                        "2026-11 aws: nothing loaded (expected 5)"]
    assert "MISMATCH" in text and "MISSING" in text
