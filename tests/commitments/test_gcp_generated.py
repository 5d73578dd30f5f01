"""A generated GCP detailed export through the real spine (load_batch into DuckDB): the A100
CUD's covered spend and the a2 family's coverage equal the export's rows exactly; GCP
reports no unused commitment, so utilisation stays None."""

from __future__ import annotations

from decimal import Decimal as D

from finops.commitments.query import commitment_lines, month_window
from finops.commitments.usage import coverage, utilisation
from finops.demo import gcp_generator as gen
from finops.focus.gcp_billing import CONVERTER
from finops.ingest import RawBatch, load_batch


def _machine(row: dict) -> str | None:
    return next(
        (lb["value"] for lb in row.get("system_labels") or [] if lb["key"].endswith("machine_spec")), None
    )


def test_cud_coverage_matches_the_export(duckdb_wh, tmp_path):
    sample = gen.generate(days=1)
    path = sample.write_parquet(tmp_path / "gcp.parquet")
    entry = load_batch(duckdb_wh, RawBatch("gcp-main", "gcp", "2026-10", [path], "g1"), CONVERTER)
    assert entry.status == "loaded", entry.message

    covered_list = covered_eff = eligible_a2 = eligible_other = D(0)
    for r in sample.rows:
        machine = _machine(r)
        cud = [c for c in r.get("credits") or [] if c["type"] == "COMMITTED_USAGE_DISCOUNT"]
        if cud:
            covered_list += D(str(r["cost_at_list"]))
            covered_eff += D(str(r["cost"])) + sum(D(str(c["amount"])) for c in r["credits"])
        elif machine and machine.startswith("a2-"):
            eligible_a2 += D(str(r["cost_at_list"]))
        elif machine and "Spot" not in r["sku"]["description"]:  # spot is never eligible
            eligible_other += D(str(r["cost_at_list"]))
    assert covered_list > 0 and eligible_a2 > 0 and eligible_other > 0

    lines = commitment_lines(duckdb_wh, *month_window("2026-10"), providers=["gcp"])
    fam = {c.family: c for c in coverage(lines, "month", by_account=False)}
    a2 = fam["a2"]
    assert (a2.covered_list, a2.covered_effective, a2.eligible_list) == (
        covered_list,
        covered_eff,
        eligible_a2,
    )
    assert a2.coverage == covered_list / (covered_list + eligible_a2)
    assert sum(c.eligible_list for f, c in fam.items() if f != "a2") == eligible_other  # n2 (g2 is spot)
    (cud,) = utilisation(lines, "month")
    assert (cud.commitment_type, cud.utilisation, cud.covered_list) == (
        "Committed Use Discount",
        None,
        covered_list,
    )
