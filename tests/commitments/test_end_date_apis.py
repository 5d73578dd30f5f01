"""Commitment end dates fetched from the Azure Reservations / Billing Benefits APIs and the GCP
Compute aggregatedList through an Airflow connection, against a local server answering in the
documented shapes (two pages each way: ARM nextLink, Google nextPageToken); a refused call is
recorded and leaves the end dates already known in place."""

from __future__ import annotations

from datetime import date

import pytest

from finops.commitments import inventory as inv
from finops.commitments.settings import CommitmentsConfigError, parse_settings
from finops.commitments.sources import fetch_end_dates
from tests.fixtures.commitments import RI

AZ = "/providers/microsoft.capacity/reservationorders/1e6407ba-37a5-499f-80ed-a3f0f338e44{0}/reservations/cae5924e-7a15-419f-a369-124f52d4a10{0}"
SP_ID = (
    "/providers/microsoft.billingbenefits/savingsplanorders/20000000-0000-0000-0000-000000000000"
    "/savingsplans/30000000-0000-0000-0000-000000000000"
)
GCP = "https://www.googleapis.com/compute/v1/projects/finops-test/regions/{}/commitments/{}"


def _settings(**extra):
    return parse_settings({
        "end_date_sources": [
            {"provider": "azure", "conn_id": "commitments_api"},
            {"provider": "gcp", "conn_id": "commitments_api", "project": "finops-test"},
        ],
        **extra,
    })  # fmt: skip


def test_fetches_every_page_of_every_api(commitment_apis, duckdb_wh):
    res = fetch_end_dates(duckdb_wh, _settings())
    assert res.failed == {}
    # 2 reservations (one per page) + 1 savings plan; 2 GCP commitments (the CANCELLED one is out)
    assert res.stored == {"azure:commitments_api": 3, "gcp:commitments_api:finops-test": 2}
    got = {(i.provider, i.commitment_id): (i.end, i.start, i.commitment_type, i.term, i.source)
           for i in inv.load(duckdb_wh)}  # fmt: skip
    assert got == {
        # expiry 2026-12-10T21:20Z: still in force that day
        ("azure", AZ.format(1)): (date(2026, 12, 10), date(2025, 11, 28), "Reservation", "P1Y", "azure-reservations-api"),
        # expiry at 00:00 is exclusive: the last day is the day before
        ("azure", AZ.format(2)): (date(2027, 5, 31), date(2025, 11, 28), "Reservation", "P1Y", "azure-reservations-api"),
        ("azure", SP_ID): (date(2028, 10, 20), date(2025, 10, 20), "Savings Plan", "P3Y", "azure-billing-benefits-api"),
        # 2027-01-01T00:00-08:00 is 08:00 UTC: 1 January still applies
        ("gcp", GCP.format("us-central1", "cud-a100-1y")): (
            date(2027, 1, 1), date(2026, 1, 1), "Committed Use Discount", "TWELVE_MONTH", "gcp-compute-api"),
        ("gcp", GCP.format("europe-west4", "cud-a100-eu")): (
            date(2026, 12, 15), date(2026, 1, 1), "Committed Use Discount", "TWELVE_MONTH", "gcp-compute-api"),
    }  # fmt: skip
    paths = commitment_apis.requests
    assert "/providers/Microsoft.Capacity/reservationOrders?api-version=2022-11-01&$skiptoken=1" in paths
    assert any("aggregated/commitments" in p and "pageToken=page-2" in p for p in paths)
    assert len(paths) == 5  # 2 order pages + 1 savings plan page + 2 commitment pages


def test_a_refused_call_is_recorded_and_known_dates_stand(commitment_apis, duckdb_wh):
    known = [
        inv.InventoryItem("azure", AZ.format(1), date(2026, 12, 31), source="finops.yaml"),
        inv.InventoryItem("aws", RI, date(2027, 3, 20), source="cur2"),
    ]
    inv.store(duckdb_wh, known)
    commitment_apis.refuse = True
    res = fetch_end_dates(duckdb_wh, _settings())
    assert res.stored == {}
    assert set(res.failed) == {"azure:commitments_api", "gcp:commitments_api:finops-test"}
    assert all("HTTP 403" in why and "does not have authorization" in why for why in res.failed.values())
    assert {(i.provider, i.commitment_id, i.end, i.source) for i in inv.load(duckdb_wh)} == {
        (k.provider, k.commitment_id, k.end, k.source) for k in known
    }


def test_a_wrong_token_is_refused_and_the_next_source_still_runs(commitment_apis, duckdb_wh):
    # a source without a connection sends no token: refused; the GCP one after it still stores
    s = parse_settings({"end_date_sources": [
        {"provider": "azure", "base_url": commitment_apis.base},
        {"provider": "gcp", "conn_id": "commitments_api", "project": "finops-test"},
    ]})  # fmt: skip
    res = fetch_end_dates(duckdb_wh, s)
    assert list(res.failed) == [f"azure:{commitment_apis.base}"]
    assert res.stored == {"gcp:commitments_api:finops-test": 2}


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"provider": "azure"}, "commitments.end_date_sources.0: Value error, conn_id is required"),
        ({"provider": "aws", "conn_id": "x"}, "commitments.end_date_sources.0.provider"),
        (
            {"provider": "gcp", "conn_id": "x", "project": "Bad Project"},
            "commitments.end_date_sources.0.project",
        ),
        ({"provider": "azure", "conn_id": "x", "project": "finops-test"}, "project: only for provider gcp"),
    ],
)
def test_bad_source_fails_naming_the_key(source, message):
    with pytest.raises(CommitmentsConfigError, match=message.replace(".", r"\.")):
        parse_settings({"end_date_sources": [source]})
