"""Coverage and utilisation on small hand-written FOCUS rows of three clouds, in a real
warehouse (DuckDB and PostgreSQL); every expected number is worked out in the comments."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal as D

import pytest

from finops.commitments.family import instance_family
from finops.commitments.query import commitment_lines, month_window
from finops.commitments.usage import coverage, utilisation

EC2 = "Amazon Elastic Compute Cloud"
VM = "Virtual Machines"
GCE = "Compute Engine"


SP, RI, AZR, CUD = "arn:sp-1", "arn:ri-1", "/reservations/az-res-1", "projects/p/commitments/cud-1"
TYPES = {SP: "Savings Plan", RI: "Reserved Instance", AZR: "Reservation", CUD: "Committed Use Discount"}
SPS = "Savings Plans for AWS Compute usage"
S3 = "Amazon Simple Storage Service"
A100, A100x2 = "Standard_NC24ads_A100_v4", "Standard_NC48ads_A100_v4"

# provider, account, day, service, charge, pricing, billed, effective, list, instance, status, id, qty, unit
# fmt: off
TABLE = [
    # AWS day 1, account 111: SP covers $10 on-demand of g5 for $6; its negation; $2 of SP unused
    ("aws", "111", 1, EC2, "Usage", "Committed", "10", "6", "10", "g5.2xlarge", "Used", SP, "6", "USD"),
    ("aws", "111", 1, EC2, "Usage", "Committed", "-10", "0", "0", "g5.2xlarge", "Used", SP, None, None),
    ("aws", "111", 1, SPS, "Usage", "Committed", "0", "2", "0", None, "Unused", SP, "2", "USD"),
    # RI: 1 p4d hour used ($32.77 on demand, $20 effective), 0.25 h unused ($5); its purchase row
    ("aws", "111", 1, EC2, "Usage", "Committed", "0", "20", "32.77", "p4d.24xlarge", "Used", RI, "1", "Hours"),
    ("aws", "111", 1, EC2, "Usage", "Committed", "0", "5", "0", "p4d.24xlarge", "Unused", RI, "0.25", "Hours"),
    ("aws", "111", 1, EC2, "Purchase", "Committed", "25", "0", "25", None, None, RI, "1.25", "Hours"),
    # eligible: on-demand g5 $4; not eligible: spot g5 $3, S3 $1 (no instance)
    ("aws", "111", 1, EC2, "Usage", "Standard", "4", "4", "4", "g5.4xlarge", None, None, None, None),
    ("aws", "111", 1, EC2, "Usage", "Dynamic", "3", "3", "10", "g5.4xlarge", None, None, None, None),
    ("aws", "111", 1, S3, "Usage", "Standard", "1", "1", "1", None, None, None, None, None),
    # AWS day 2: the SP fully used ($8 of $8; the fee line's unused row is $0)
    ("aws", "111", 2, EC2, "Usage", "Committed", "13", "8", "13", "g5.xlarge", "Used", SP, "8", "USD"),
    ("aws", "111", 2, SPS, "Usage", "Committed", "0", "0", "0", None, "Unused", SP, "0", "USD"),
    # Azure (amortised): reservation covers $3.67 list for $2.20, $0.55 unused; $7.34 on demand, same family
    ("azure", "sub-1", 1, VM, "Usage", "Committed", "0", "2.20", "3.67", A100, "Used", AZR, "1", "Hours"),
    ("azure", "sub-1", 1, VM, "Usage", "Committed", "0", "0.55", "0.55", A100, "Unused", AZR, "0.25", "Hours"),
    ("azure", "sub-1", 1, VM, "Usage", "Standard", "7.34", "7.34", "7.34", A100x2, None, None, None, None),
    # GCP: CUD-covered a2 ($2.93 list, credited to 0); $5.86 of a2 on demand; no unused rows exist
    ("gcp", "proj-1", 1, GCE, "Usage", "Committed", "2.93", "0", "2.93", "a2-highgpu-1g", "Used", CUD, None, None),
    ("gcp", "proj-1", 1, GCE, "Usage", "Standard", "5.86", "5.86", "5.86", "a2-highgpu-2g", None, None, None, None),
    # day 0 = 1 November: outside the October window, must not count
    ("aws", "111", 0, EC2, "Usage", "Standard", "99", "99", "99", "g5.2xlarge", None, None, None, None),
]
# fmt: on


def _row(
    provider, account, day, service, charge, pricing, billed, effective, list_, itype, status, cid, qty, unit
):
    start = datetime(2026, 10, day) if day else datetime(2026, 11, 1)
    return {
        "billed_cost": D(billed), "billing_account_id": f"payer-{provider}", "billing_currency": "USD",
        "billing_period_start": datetime(2026, 10, 1), "billing_period_end": datetime(2026, 11, 1),
        "charge_category": charge, "charge_period_start": start, "charge_period_end": start.replace(hour=1),
        "contracted_cost": D(billed), "effective_cost": D(effective), "invoice_issuer_name": provider,
        "list_cost": D(list_), "provider_name": provider, "publisher_name": provider, "service_category": "Compute",
        "service_name": service, "sub_account_id": account, "pricing_category": pricing,
        "commitment_discount_status": status, "commitment_discount_id": cid, "commitment_discount_type": TYPES.get(cid),
        "commitment_discount_quantity": None if qty is None else D(qty), "commitment_discount_unit": unit,
        "x_instance_type": itype, "x_source": f"hand-{provider}", "x_billing_period": "2026-10",
        "x_provider": provider, "x_load_id": "hand",
    }  # fmt: skip


ROWS = [_row(*t) for t in TABLE]


def _load(wh) -> None:
    cols = list(ROWS[0])
    sql = f"INSERT INTO focus_costs ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"
    for r in ROWS:
        wh.execute(sql, [r[c] for c in cols])


@pytest.fixture
def lines(any_wh):
    _load(any_wh)
    return commitment_lines(any_wh, *month_window("2026-10"))


def _by_id(rows):
    return {(u.commitment_id, u.period): u for u in rows}


def test_utilisation_per_commitment_day_and_month(lines):
    day = _by_id(utilisation(lines, "day"))
    sp1 = day[(SP, "2026-10-01")]
    assert (sp1.used_cost, sp1.unused_cost, sp1.utilisation) == (D(6), D(2), D("0.75"))
    sp2 = day[(SP, "2026-10-02")]
    assert (sp2.used_cost, sp2.unused_cost, sp2.utilisation) == (D(8), D(0), D(1))
    ri = day[(RI, "2026-10-01")]
    assert (ri.used_cost, ri.unused_cost, ri.utilisation) == (D(20), D(5), D("0.8"))
    assert (ri.used_quantity, ri.unused_quantity, ri.quantity_utilisation) == (D(1), D("0.25"), D("0.8"))
    az = day[(AZR, "2026-10-01")]
    assert (az.used_cost, az.unused_cost, az.utilisation) == (D("2.20"), D("0.55"), D("0.8"))
    gcp = day[(CUD, "2026-10-01")]
    assert gcp.utilisation is None and gcp.used_cost == 0  # GCP's export reports no unused CUD

    month = _by_id(utilisation(lines, "month"))
    sp = month[(SP, "2026-10")]  # (6 + 8) / (6 + 8 + 2 + 0)
    assert (sp.total_cost, sp.utilisation) == (D(16), D("0.875"))
    assert sp.quantity_utilisation == D("0.875") and sp.commitment_type == "Savings Plan"
    assert set(month) == {(SP, "2026-10"), (RI, "2026-10"), (AZR, "2026-10"), (CUD, "2026-10")}


def test_coverage_per_family_and_per_account(lines):
    fam = {(c.provider, c.family, c.period): c for c in coverage(lines, "month")}
    g5 = fam[("aws", "g5", "2026-10")]  # covered 10 + 13 list; eligible on-demand 4 (spot excluded)
    assert (g5.covered_list, g5.covered_effective, g5.eligible_list) == (D(23), D(14), D(4))
    assert g5.coverage == D(23) / D(27)
    p4d = fam[("aws", "p4d", "2026-10")]
    assert (p4d.covered_list, p4d.eligible_list, p4d.coverage) == (D("32.77"), D(0), D(1))
    assert fam[("aws", None, "2026-10")].unused_cost == D(7)  # SP 2 + 0, RI 5
    nc = fam[("azure", "NCads_A100_v4", "2026-10")]
    assert nc.coverage == D("3.67") / D("11.01") and nc.eligible_effective == D("7.34")
    assert fam[("azure", None, "2026-10")].unused_cost == D("0.55")
    a2 = fam[("gcp", "a2", "2026-10")]
    assert (a2.covered_list, a2.eligible_list) == (D("2.93"), D("5.86"))

    acct = {(c.provider, c.account, c.period): c for c in coverage(lines, "day", by_family=False)}
    aws1 = acct[("aws", "111", "2026-10-01")]  # 10 + 32.77 covered, 4 eligible, 2 + 5 unused
    assert (aws1.covered_list, aws1.eligible_list, aws1.unused_cost) == (D("42.77"), D(4), D(7))
    assert acct[("aws", "111", "2026-10-02")].coverage == D(1)
    # the November row is outside the window
    assert sum(c.eligible_list for c in coverage(lines, by_account=False, by_family=False)) == D("17.20")


def test_provider_filter_and_bad_input(any_wh):
    _load(any_wh)
    only_gcp = commitment_lines(any_wh, date(2026, 10, 1), date(2026, 11, 1), providers=["gcp"])
    assert {ln.provider for ln in only_gcp} == {"gcp"} and len(only_gcp) == 2
    with pytest.raises(ValueError, match="end 2026-10-01 must be after start"):
        commitment_lines(any_wh, date(2026, 10, 1), date(2026, 10, 1))
    with pytest.raises(ValueError, match="expected YYYY-MM"):
        month_window("October")
    with pytest.raises(ValueError, match="grain 'week'"):
        utilisation(only_gcp, "week")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("provider", "name", "family"),
    [
        ("aws", "g5.2xlarge", "g5"),
        ("aws", "p4d.24xlarge", "p4d"),
        ("gcp", "a2-highgpu-1g", "a2"),
        ("gcp", "n2d-standard-8", "n2d"),
        ("azure", "Standard_NC24ads_A100_v4", "NCads_A100_v4"),
        ("azure", "Standard_ND96asr_v4", "NDasr_v4"),
        ("azure", "Standard_D4s_v5", "Ds_v5"),
        ("lambda", "gpu_1x_h100_pcie", "gpu_1x_h100_pcie"),
        ("aws", None, None),
        ("gcp", " ", None),
    ],
)
def test_instance_family(provider, name, family):
    assert instance_family(provider, name) == family
