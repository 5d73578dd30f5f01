"""The demo's cost summary judges the warehouse against the generators' totals: a mismatch or a
missing load must fail `make demo`, not scroll by in a table."""

from __future__ import annotations

import json
from decimal import Decimal as D

from finops.demo.run import summary
from tests.fixtures.focus_data import focus_row, insert_focus


def test_summary_names_every_total_that_does_not_match(any_wh, request, tmp_path, monkeypatch):
    """On either warehouse: the demo follows warehouse.conn_id, so its summary SQL must run on PostgreSQL too."""
    if any_wh.dialect == "postgres":
        pg = request.getfixturevalue("pg_conn_id")
        cfg = tmp_path / "finops.yaml"
        cfg.write_text(json.dumps({"warehouse": {"conn_id": pg.conn_id, "schema": pg.schema}}))
        monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    insert_focus(
        any_wh,
        [
            focus_row("2026-09-03", "10.004"),
            focus_row("2026-10-03", "20.00", "12.00", x_instance_type="p5.48xlarge"),
        ],
    )
    any_wh.close()  # summary opens the warehouse itself, as the demo does
    text, problems = summary(["2026-09", "2026-10"], {"aws": {"2026-09": D("10.00"), "2026-10": D("20.00")}})
    assert problems == [] and "MISMATCH" not in text  # 10.004 is 10.00 to the cent
    assert "GPU instances by provider" in text and "12.00" in text.split("GPU instances", 1)[1]

    text, problems = summary(
        ["2026-09", "2026-10", "2026-11"],
        {"aws": {"2026-09": D("10.00"), "2026-10": D("20.01"), "2026-11": D("5")}},
    )
    assert problems == [
        "2026-10 aws: billed 20.0000000000 != expected 20.01",
        "2026-11 aws: nothing loaded (expected 5)",
    ]
    assert "MISMATCH" in text and "MISSING" in text
