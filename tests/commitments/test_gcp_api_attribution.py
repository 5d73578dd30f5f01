"""GCP Compute API commitments get their share of the billed resource-CUD fee.

A hand-written detailed export (the `Commitment v1: Nvidia Tesla A100 GPU running in Americas
for 1 Year` fee and A100 usage with COMMITTED_USAGE_DISCOUNT credits) loaded through the real
spine, and two us-central1 commitments as `regionCommitments.aggregatedList` lists them:

- cud-a100-1y: 3 A100s, all October;  cud-a100-new: 1 A100, from 6 October.
- europe-west4 cud-a100-eu (2 A100s) is another region: it shares nothing here.

5 Oct: fee $240.00 for 72 GPU-hours; 54 h used -> used $180.00, unused $60.00, list 54 x 4 =
$216. Only cud-a100-1y is active: it takes all of it.
6 Oct: fee $100.01 for 96 GPU-hours; 80 h used -> used 100.01 x 80/96 = 83.3416666667,
unused 16.6683333333, list $320. Shares 3:1 by amount, largest remainder:
  used   83.3416666667 -> 62.5062500000 + 20.8354166667 (the .75 remainder goes to the 1-GPU one)
  unused 16.6683333333 -> 12.5012500000 +  4.1670833333
  so cud-a100-1y costs 75.0075 (3/4 of 100.01) and cud-a100-new 25.0025; list 240 + 80;
  hours used 60 + 20, unused 12 + 4."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal as D

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops.commitments import inventory as inv
from finops.commitments.gcp_attribution import (
    CommitmentResource,
    accelerator_words,
    attribute,
    billing_resource,
    same_resource,
    split,
)
from finops.commitments.query import month_window
from finops.commitments.settings import parse_settings
from finops.commitments.store import calendar, gcp_fee_utilisation, refresh_period
from finops.commitments.usage import Utilisation
from finops.demo import gcp_generator as gen
from finops.focus.gcp_billing import CONVERTER
from finops.ingest import RawBatch, load_batch

PROJECT = "ml-training-prod"  # gen._proj(0): the project the usage and fees are billed to
LINK = "https://www.googleapis.com/compute/v1/projects/{p}/regions/{r}/commitments/{n}"
C1 = LINK.format(p=PROJECT, r="us-central1", n="cud-a100-1y")
C2 = LINK.format(p=PROJECT, r="us-central1", n="cud-a100-new")
EU = LINK.format(p=PROJECT, r="europe-west4", n="cud-a100-eu")
AGG = f"gcp-cud:{gen.BILLING_ACCOUNT}:us-central1:Nvidia Tesla A100 GPU running"
CE = {"id": "6F81-5844-456A", "description": "Compute Engine"}
FEE = {
    "id": "CUD-A100-1Y",
    "description": "Commitment v1: Nvidia Tesla A100 GPU running in Americas for 1 Year",
}
A100 = {"id": "A100-GPU", "description": "Nvidia Tesla A100 GPU running in Americas"}
SETTINGS = parse_settings({"providers": ["gcp"]})


def _commitment(name: str, region: str, gpus: int, start: str, end: str) -> dict:
    """One commitment in the Compute API's shape (int64 amounts as strings)."""
    base = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/regions/{region}"
    return {
        "kind": "compute#commitment", "id": str(abs(hash(name)) % 10**12), "name": name,
        "region": base, "selfLink": f"{base}/commitments/{name}", "status": "ACTIVE", "plan": "TWELVE_MONTH",
        "startTimestamp": start, "endTimestamp": end, "type": "ACCELERATOR_OPTIMIZED", "category": "MACHINE",
        "resources": [
            {"type": "VCPU", "amount": str(12 * gpus)},
            {"type": "MEMORY", "amount": str(87040 * gpus)},
            {"type": "ACCELERATOR", "amount": str(gpus), "acceleratorType": "nvidia-tesla-a100"},
        ],
    }  # fmt: skip


PAYLOAD = {
    "items": [
        _commitment("cud-a100-1y", "us-central1", 3, "2026-01-01T00:00:00.000-08:00", "2027-01-01T00:00:00.000-08:00"),
        _commitment("cud-a100-new", "us-central1", 1, "2026-10-06T00:00:00.000-07:00", "2027-10-06T00:00:00.000-07:00"),
        _commitment("cud-a100-eu", "europe-west4", 2, "2026-01-01T00:00:00.000-08:00", "2027-01-01T00:00:00.000-08:00"),
    ]
}  # fmt: skip


def _row(
    day: int, sku: dict, cost: float, hours_qty: float, credit: float | None = None, span: int = 1
) -> dict:
    t0 = datetime(2026, 10, day, 0 if span == 24 else 3, tzinfo=UTC)
    credits = [] if credit is None else [{
        "name": "Committed use discount: A100 GPU", "amount": credit, "full_name": "Committed use discount",
        "id": "projects/ml-training-prod/regions/us-central1/commitments", "type": "COMMITTED_USAGE_DISCOUNT",
    }]  # fmt: skip
    return gen._row(
        service=CE, sku=sku, usage_start_time=t0, usage_end_time=t0 + timedelta(hours=span),
        project=gen._proj(0), export_time=t0 + timedelta(hours=span + 6), cost=cost, cost_at_list=cost,
        credits=credits, location={"location": "us-central1", "country": "US", "region": "us-central1", "zone": None},
        usage={"amount": hours_qty * 3600, "unit": "seconds", "amount_in_pricing_units": hours_qty,
               "pricing_unit": "hour"},
        invoice={"month": "202610", "publisher_type": "GOOGLE"},
    )  # fmt: skip


ROWS = [
    _row(5, FEE, 240.0, 72.0, span=24),
    _row(5, A100, 216.0, 54.0, credit=-216.0),  # 54 GPU-hours at $4 list, all credited
    _row(6, FEE, 100.01, 96.0, span=24),
    _row(6, A100, 320.0, 80.0, credit=-320.0),
]


def _load(wh, tmp_path) -> None:
    path = tmp_path / "gcp-a100.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS, schema=gen.arrow_schema()), path)
    entry = load_batch(wh, RawBatch("gcp-main", "gcp", "2026-10", [path], "a1"), CONVERTER)
    assert entry.status == "loaded", entry.message


def test_api_commitments_share_the_billed_fee_to_the_cent(any_wh, tmp_path):
    _load(any_wh, tmp_path)
    billed = gcp_fee_utilisation(any_wh, *month_window("2026-10"))
    assert {u.commitment_id for u in billed} == {AGG}  # no API commitments stored yet
    assert inv.store(any_wh, inv.gcp_commitments(PAYLOAD)) == 3

    refresh_period(any_wh, "2026-10", SETTINGS)
    got = any_wh.query(
        "SELECT day, commitment_id, used_cost, unused_cost, covered_list, used_quantity, unused_quantity, unit "
        "FROM commitment_utilisation WHERE provider = 'gcp' ORDER BY day, commitment_id"
    )
    assert got == [
        (date(2026, 10, 5), C1, D("180"), D("60"), D("216"), D("54"), D("18"), "Hours"),
        (date(2026, 10, 6), C1, D("62.50625"), D("12.50125"), D("240"), D("60"), D("12"), "Hours"),
        (date(2026, 10, 6), C2, D("20.8354166667"), D("4.1670833333"), D("80"), D("20"), D("4"), "Hours"),
    ]
    # the commitments add up exactly to what the export bills
    assert sum(r[2] + r[3] for r in got) == D("340.01") == sum(u.total_cost for u in billed)
    day6 = [r for r in got if r[0] == date(2026, 10, 6)]
    assert sum(r[2] for r in day6) == D("83.3416666667") and sum(r[3] for r in day6) == D("16.6683333333")


def test_calendar_shows_each_api_commitment_with_its_cost(duckdb_wh, tmp_path):
    _load(duckdb_wh, tmp_path)
    inv.store(duckdb_wh, inv.gcp_commitments(PAYLOAD))
    refresh_period(duckdb_wh, "2026-10", SETTINGS)
    entries = {e.commitment.commitment_id: e for e in calendar(duckdb_wh, SETTINGS, date(2026, 10, 7))}
    one, new, eu = entries[C1], entries[C2], entries[EU]
    # cud-a100-1y: 2 days, (240 + 75.0075) / 2 a day; on demand (216 + 240) / 2
    assert (one.days_observed, one.daily_commitment_cost, one.daily_on_demand_cost) == (
        2, D("157.50375"), D("228"),
    )  # fmt: skip
    assert one.daily_utilisation == (D("180") + D("62.50625")) / D("315.0075")
    assert (new.days_observed, new.daily_commitment_cost, new.daily_on_demand_cost) == (
        1,
        D("25.0025"),
        D("80"),
    )
    assert new.commitment.end == date(2027, 10, 6) and one.commitment.end == date(2027, 1, 1)
    assert (eu.days_observed, eu.daily_commitment_cost) == (0, D(0))  # nothing billed in its region


def test_a_commitment_of_another_billing_account_takes_no_share():
    day = date(2026, 10, 6)
    u = Utilisation("gcp", "gcp-cud:BA-1:us-east1:N2 Cpu", "Committed Use Discount", "USD", day.isoformat(),
                    used_cost=D("10.00"), unused_cost=D("2.00"), used_quantity=D(100), units={"Hours"})  # fmt: skip
    res = [
        CommitmentResource("c-a", "us-east1", "VCPU", D(8), plan_type="GENERAL_PURPOSE_N2", project="p-a"),
        CommitmentResource("c-b", "us-east1", "VCPU", D(8), plan_type="GENERAL_PURPOSE_N2", project="p-b"),
        CommitmentResource("c-n1", "us-east1", "VCPU", D(8), plan_type="GENERAL_PURPOSE", project="p-a"),
        CommitmentResource(
            "c-ram", "us-east1", "MEMORY", D(8), plan_type="GENERAL_PURPOSE_N2", project="p-a"
        ),
    ]
    (only,) = attribute([u], res, {"p-a": "BA-1", "p-b": "BA-2"})
    assert (only.commitment_id, only.used_cost, only.unused_cost, only.used_quantity) == (
        "c-a",
        D(10),
        D(2),
        D(100),
    )
    # a project focus_costs has not seen yet: it may be this account's, so it shares
    a, b = attribute([u], res, {"p-a": "BA-1"})
    assert [(x.commitment_id, x.used_cost, x.used_quantity) for x in (a, b)] == [
        ("c-a", D("5.00"), D(50)), ("c-b", D("5.00"), D(50))
    ]  # fmt: skip
    # a commitment that has ended backs nothing
    ended = CommitmentResource(
        "c-a", "us-east1", "VCPU", D(8), plan_type="GENERAL_PURPOSE_N2", end=date(2026, 10, 5)
    )
    assert attribute([u], [ended]) == [u]


@pytest.mark.parametrize(
    ("resource", "words"),
    [
        (CommitmentResource("c", "r", "ACCELERATOR", D(1), "nvidia-tesla-a100"), "A100 GPU"),
        (CommitmentResource("c", "r", "ACCELERATOR", D(1), "nvidia-h100-80gb"), "H100 80GB GPU"),
        (CommitmentResource("c", "r", "ACCELERATOR", D(1), "nvidia-a100-80gb"), "A100 80GB GPU"),
        (CommitmentResource("c", "r", "ACCELERATOR", D(1), "nvidia-l4"), "L4 GPU"),
        (CommitmentResource("c", "r", "VCPU", D(1), plan_type="GENERAL_PURPOSE"), "Cpu"),
        (CommitmentResource("c", "r", "VCPU", D(1), plan_type="GENERAL_PURPOSE_N2D"), "N2D Cpu"),
        (CommitmentResource("c", "r", "MEMORY", D(1), plan_type="ACCELERATOR_OPTIMIZED"), "A2 Ram"),
        (CommitmentResource("c", "r", "MEMORY", D(1), plan_type="ACCELERATOR_OPTIMIZED_A3"), "A3 Ram"),
    ],
)
def test_api_resources_name_the_fee_sku_words(resource, words):
    assert billing_resource(resource) == words


def test_fee_words_match_the_api_resource():
    # fee resources as finops.commitments.gcp.fee_resource cuts them from Google's SKU descriptions
    assert same_resource("Nvidia Tesla A100 GPU running", "A100 GPU")
    assert same_resource("Nvidia H100 80GB GPU running", accelerator_words("nvidia-h100-80gb"))
    assert same_resource("Nvidia L4 GPU", "L4 GPU")
    assert not same_resource("Nvidia A100 80GB GPU running", "A100 GPU")
    assert same_resource("N2 Cpu", "N2 Cpu") and same_resource("Cpu", "Cpu")
    assert not same_resource("N2 Cpu", "Cpu") and not same_resource("N2 Cpu", "N2 Ram")
    assert same_resource("A2 Memory", "A2 Ram")


def test_split_is_largest_remainder_and_exact():
    assert split(D("100.01"), [D(3), D(1)]) == [D("75.01"), D("25.00")]
    assert split(D("0.02"), [D(1), D(1), D(1)]) == [D("0.01"), D("0.01"), D("0.00")]
    assert split(D("-10.00"), [D(1), D(2)]) == [D("-3.33"), D("-6.67")]
    parts = split(D("83.34166666666666666666666666"), [D(3), D(1)])
    assert parts == [D("62.5062500000"), D("20.8354166667")]
    with pytest.raises(ValueError, match="positive weights"):
        split(D(1), [D(0)])
