"""GCP resource-CUD utilisation from a generated detailed export loaded through the real
spine: committed quantity from the `Commitment v1` fee SKU, used quantity from the usage that
carries a CUD credit, both summed straight from the export's rows for the expected numbers."""

from __future__ import annotations

from datetime import date
from decimal import Decimal as D

from finops.commitments.gcp import CudCovered, CudFee, cud_utilisation, fee_resource, matches
from finops.commitments.query import gcp_cud_rows, month_window
from finops.commitments.store import gcp_fee_utilisation
from finops.demo import gcp_generator as gen
from finops.focus.gcp_billing import CONVERTER
from finops.ingest import RawBatch, load_batch


def test_cud_utilisation_matches_the_export(duckdb_wh, tmp_path):
    sample = gen.generate(days=1)
    path = sample.write_parquet(tmp_path / "gcp.parquet")
    entry = load_batch(duckdb_wh, RawBatch("gcp-main", "gcp", "2026-10", [path], "g1"), CONVERTER)
    assert entry.status == "loaded", entry.message

    (fee_row,) = [r for r in sample.rows if r["sku"]["description"].startswith("Commitment v1")]
    committed = D(str(fee_row["usage"]["amount_in_pricing_units"]))  # 72 GPU-hours
    fee = D(str(fee_row["cost"]))
    used = covered_list = D(0)
    for r in sample.rows:
        if any(c["type"] == "COMMITTED_USAGE_DISCOUNT" for c in r.get("credits") or []):
            used += D(str(r["usage"]["amount_in_pricing_units"]))
            covered_list += D(str(r["cost_at_list"]))
    assert committed == 72 and 0 < used < committed

    fees, covered = gcp_cud_rows(duckdb_wh, *month_window("2026-10"))
    (u,) = cud_utilisation(fees, covered, "month")
    assert (u.resource, u.region, u.unit) == ("A100 GPU", "us-central1", "Hours")
    assert (u.fee, u.committed_quantity, u.used_quantity, u.covered_list) == (
        fee,
        committed,
        used,
        covered_list,
    )
    assert u.utilisation == used / committed
    assert u.used_cost + u.unused_cost == fee and u.used_cost == fee * used / committed

    # the day-grain rows of the table: the export's day runs 07:00-07:00 UTC, so the usage
    # spans two UTC days while the one fee row lands on the first; summed, they are the month
    days = gcp_fee_utilisation(duckdb_wh, *month_window("2026-10"))
    assert {r.commitment_id for r in days} == {"gcp-cud:01A2B3-C4D5E6-F7G8H9:us-central1:A100 GPU"}
    assert sum(r.used_quantity for r in days) == used and sum(r.total_cost for r in days) == fee
    first = days[0]  # the fee's day: utilisation from its own credited usage, now not None
    assert (
        first.utilisation == first.used_cost / fee
        and first.quantity_utilisation == first.used_quantity / committed
    )
    assert days[1].utilisation is None  # a day with credited usage but no fee billed


def test_fee_resource_and_matching():
    assert fee_resource("Commitment v1: A100 GPU in Americas for 1 Year") == "A100 GPU"
    assert fee_resource("Commitment v1: N2 Cpu in Americas for 3 Years") == "N2 Cpu"
    assert fee_resource("Commitment: Ram in EMEA for 1 Year") == "Ram"
    assert matches("A100 GPU", "Nvidia Tesla A100 GPU running in Americas")
    assert matches("N2 Cpu", "N2 Instance Core running in Americas")  # Cpu bills as Core
    assert not matches("N2 Cpu", "N2 Instance Ram running in Americas")
    assert not matches("A100 GPU", "Nvidia L4 GPU running in Americas")


def test_spend_based_and_unmatched_usage_are_left_out():
    d = date(2026, 10, 1)
    fees = [
        CudFee(
            "ba", "USD", d, "us-east1", "Commitment v1: N2 Cpu in Americas for 1 Year", "Hours", D(70), D(100)
        )
    ]
    covered = [
        CudCovered("ba", "USD", d, "us-east1", "N2 Instance Core running in Americas", "c1", "Usage", "Hours", D(60), D(9)),
        CudCovered("ba", "USD", d, "us-east1", "N2 Instance Core running in Americas", "s1", "Spend", "Hours", D(30), D(4)),
        CudCovered("ba", "USD", d, "us-west1", "N2 Instance Core running in Americas", "c2", "Usage", "Hours", D(5), D(1)),
    ]  # fmt: skip
    (u,) = cud_utilisation(fees, covered, "day")
    # only the us-east1 resource-CUD usage counts: 60 of 100 committed; 70 x 0.6 = 42 used
    assert (u.used_quantity, u.utilisation, u.used_cost, u.unused_cost) == (D(60), D("0.6"), D(42), D(28))
