"""GCP Cloud Billing Catalog against a local server in the API's real shape."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from finops.prices import gcp, jobs
from finops.prices.http import HttpClient, PriceSourceError
from finops.prices.settings import HttpSettings, parse_prices


def _client(sleeps=None, headers=None) -> HttpClient:
    return HttpClient(
        HttpSettings(), headers=headers, sleep=(sleeps.append if sleeps is not None else lambda s: 0)
    )


def test_unit_price_units_plus_nanos():
    assert gcp.unit_price({"unitPrice": {"units": "2", "nanos": 933908000}}) == Decimal("2.933908")
    assert gcp.unit_price({"unitPrice": {"units": "0", "nanos": 0}}) == 0
    assert gcp.unit_price({"unitPrice": {"units": "x", "nanos": 1}}) is None
    assert gcp.unit_price({"unitPrice": {"units": "0", "nanos": 1_000_000_000}}) is None
    assert gcp.unit_price({"unitPrice": {"units": "-1", "nanos": 0}}) is None
    assert gcp.unit_price({}) is None


def test_composes_instance_prices_as_gcp_bills_them(prices_gcp):
    recs = gcp.fetch(_client(), prices_gcp.base, ["us-central1", "us-east4"], ["g2", "a2", "a3"])
    got = {(r.region, r.instance_type, r.pricing_model): r.price_per_hour for r in recs}
    # g2-standard-4 = 4 vCPU x 0.024988 + 16 GiB x 0.002928 + 1 L4 x 0.56 (GCP lists $0.70683228)
    assert got[("us-central1", "g2-standard-4", "ondemand")] == Decimal("0.706800")
    assert got[("us-central1", "g2-standard-4", "spot")] == Decimal("4") * Decimal("0.009995") + Decimal(
        "16"
    ) * Decimal("0.001171") + Decimal("0.224")
    # a2-highgpu-1g = 12 x 0.031611 + 85 x 0.004237 + 2.933908 (GCP lists $3.673385)
    assert got[("us-east4", "a2-highgpu-1g", "ondemand")] == Decimal("3.673385")
    # a2-ultragpu uses the A100 80GB SKU; no spot ultragpu GPU SKU -> no spot row
    assert got[("us-central1", "a2-ultragpu-1g", "ondemand")] == Decimal("12") * Decimal(
        "0.031611"
    ) + Decimal("170") * Decimal("0.004237") + Decimal("3.9275")
    assert ("us-central1", "a2-ultragpu-1g", "spot") not in got
    # the H100 SKU exists only in us-central1
    assert ("us-central1", "a3-highgpu-8g", "ondemand") in got
    assert ("us-east4", "a3-highgpu-8g", "ondemand") not in got
    details = json.loads(next(r for r in recs if r.instance_type == "g2-standard-4").details)
    assert details == {"core": "0.024988", "ram_gib": "0.002928", "gpu": "0.56"}
    # pages were followed through nextPageToken
    assert len(prices_gcp.requests) == -(-len(prices_gcp.skus) // prices_gcp.page_size)


def test_commitments_licences_and_hostile_skus_are_ignored(prices_gcp):
    comps = [c for c in (gcp.parse_sku(s) for s in prices_gcp.skus) if c]
    names = {(c.kind, c.name, c.pricing_model) for c in comps}
    assert ("gpu", "L4", "ondemand") in names and ("core", "G2", "spot") in names
    assert all(c.pricing_model in {"ondemand", "spot"} for c in comps)
    assert len(comps) == 16  # 23 SKUs, 7 of them commitment / licence / unknown / hostile / malformed


def test_429_and_5xx_then_success_with_api_key(prices_gcp):
    prices_gcp.api_key = "AIza-test-key"
    prices_gcp.fail(429, retry_after="2")
    prices_gcp.fail(502)
    sleeps: list[float] = []
    recs = gcp.fetch(
        _client(sleeps, {"X-Goog-Api-Key": "AIza-test-key"}), prices_gcp.base, ["us-central1"], ["g2"]
    )
    assert {r.instance_type for r in recs} >= {"g2-standard-4", "g2-standard-96"}
    assert sleeps[0] == 2.0 and len(sleeps) == 2
    assert not any("AIza" in q for q in prices_gcp.requests)  # the key travels in a header, not the URL


def test_hostile_region_rejected(prices_gcp):
    with pytest.raises(ValueError):
        gcp.fetch(_client(), prices_gcp.base, ["us-central1; rm -rf /"], ["g2"])


def test_job_through_http_connection_reruns_add_nothing(prices_gcp, duckdb_wh, wh_factory, monkeypatch):
    from urllib.parse import urlsplit

    prices_gcp.api_key = "AIza-conn-key"
    u = urlsplit(prices_gcp.base)
    monkeypatch.setenv(
        "AIRFLOW_CONN_FINOPS_GCP_PRICES",
        json.dumps(
            {
                "conn_type": "http",
                "host": u.hostname,
                "port": u.port,
                "schema": "http",
                "password": "AIza-conn-key",
            }
        ),
    )
    settings = parse_prices({"gcp": {"conn_id": "finops_gcp_prices", "regions": ["us-central1"]}})
    (job,) = jobs.plan_jobs(settings, provider="gcp")
    first = jobs.run_gcp(job, settings, wh_factory)
    assert first["ondemand_prices"] > 0 and first["spot_prices"] > 0
    again = jobs.run_gcp(job, settings, wh_factory)
    assert again["ondemand_prices"] == again["spot_prices"] == 0
    assert duckdb_wh.query(
        "SELECT gpu_model, gpu_count, vcpus FROM instance_catalog WHERE provider='gcp' AND instance_type='a3-highgpu-8g'"
    ) == [("H100-80GB", 8, 208)]


def test_a_region_dropped_from_a_sku_withdraws_the_shapes_priced_with_it(prices_gcp, duckdb_wh, wh_factory):
    settings = parse_prices({"gcp": {"base_url": prices_gcp.base, "regions": ["us-central1", "us-east4"]}})

    def latest():
        rows = duckdb_wh.query(
            "SELECT region, split_part(instance_type, '-', 1), pricing_model, count(*) FROM latest_prices "
            "WHERE provider = 'gcp' GROUP BY ALL"
        )
        return {tuple(r[:3]): r[3] for r in rows}

    (job,) = jobs.plan_jobs(settings, provider="gcp")
    jobs.run_gcp(job, settings, wh_factory)
    full = latest()
    assert full[("us-east4", "g2", "spot")] > 0 and full[("us-east4", "a2", "spot")] > 0
    # the spot L4 SKU is no longer sold in us-east4, nor the spot A100 one
    for sku in prices_gcp.skus:
        if sku.get("description") in (
            "Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas",
            "Nvidia Tesla A100 GPU attached to Spot Preemptible VMs running in Americas",
        ):
            sku["serviceRegions"] = ["us-central1"]
    # a backfill of the a2 series in us-east4 only judges a2 in us-east4
    (narrow,) = jobs.plan_jobs(settings, provider="gcp", regions=["us-east4"], families=["a2"])
    jobs.run_gcp(narrow, settings, wh_factory)
    assert latest() == {k: n for k, n in full.items() if k != ("us-east4", "a2", "spot")}
    jobs.run_gcp(job, settings, wh_factory)
    assert latest() == {k: n for k, n in full.items() if k[0] != "us-east4" or k[2] != "spot"}


def test_a_page_token_that_repeats_fails_the_fetch(prices_gcp):
    prices_gcp.rewrite(lambda body: body.replace(b'"tok-10"', b'"tok-5"'))  # page 2 links to itself
    with pytest.raises(PriceSourceError, match="repeats"):
        gcp.fetch(_client(), prices_gcp.base, ["us-central1"], ["g2"])
