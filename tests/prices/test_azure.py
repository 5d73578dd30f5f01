"""Azure Retail Prices against a local server in the API's real shape."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from finops.prices import azure, jobs
from finops.prices.http import HttpClient, PriceSourceError
from finops.prices.settings import HttpSettings, parse_prices

PREFIXES = ["Standard_NC", "Standard_ND"]


def _client(sleeps=None) -> HttpClient:
    return HttpClient(HttpSettings(), sleep=(sleeps.append if sleeps is not None else lambda s: None))


def _fetch(emu, region="eastus", sleeps=None):
    return azure.fetch_region(_client(sleeps), emu.base + "/api/retail/prices", region, PREFIXES)


def test_pages_filters_and_classifies(prices_azure):
    recs = _fetch(prices_azure)
    got = {(r.instance_type, r.pricing_model): r.price_per_hour for r in recs}
    assert got == {
        ("Standard_NC24ads_A100_v4", "ondemand"): Decimal("3.673"),
        ("Standard_NC24ads_A100_v4", "spot"): Decimal("0.7346"),
        ("Standard_NC4as_T4_v3", "ondemand"): Decimal("0.526"),
        ("Standard_NC4as_T4_v3", "spot"): Decimal("0.0526"),
        ("Standard_ND96isr_H100_v5", "ondemand"): Decimal("98.32"),
        ("Standard_ND96isr_H100_v5", "spot"): Decimal("39.33"),
    }
    assert all(r.region == "eastus" and r.currency == "USD" and r.os == "linux" for r in recs)
    # several pages were followed through NextPageLink with the server-side region filter
    assert len(prices_azure.requests) > 3
    assert all(
        "armRegionName+eq+%27eastus%27" in q or "armRegionName%20eq%20%27eastus%27" in q
        for q in prices_azure.requests
    )


@pytest.mark.parametrize("last_link", [None, ""])
def test_last_page_link_null_or_empty_string(prices_azure, last_link):
    prices_azure.last_link = last_link
    assert len(_fetch(prices_azure)) == 6


def test_trailing_empty_page_quirk_stops(prices_azure):
    prices_azure.trailing_empty_page = True
    assert len(_fetch(prices_azure)) == 6
    plain = len(prices_azure.requests)
    prices_azure.trailing_empty_page = False
    prices_azure.requests.clear()
    _fetch(prices_azure)
    assert plain == len(prices_azure.requests) + 1  # one extra (empty) page, then it stopped


def test_link_off_host_is_refused(prices_azure):
    prices_azure.items = prices_azure.items[:10]
    prices_azure.rewrite(lambda body: body.replace(prices_azure.base.encode(), b"http://169.254.169.254"))
    with pytest.raises(PriceSourceError, match="off the API host"):
        _fetch(prices_azure)


def test_429_retry_after_and_5xx_mid_paging(prices_azure):
    sleeps: list[float] = []
    prices_azure.fail(429, retry_after="3")
    recs1 = _fetch(prices_azure, sleeps=sleeps)
    prices_azure.fail(500)
    prices_azure.fail(503)
    recs2 = _fetch(prices_azure, sleeps=sleeps)
    assert len(recs1) == len(recs2) == 6
    assert sleeps[0] == 3.0 and len(sleeps) == 3


def test_hostile_region_is_rejected_before_any_request(prices_azure):
    with pytest.raises(ValueError):
        _fetch(prices_azure, region="eastus' or armRegionName ne 'x")
    assert prices_azure.requests == []


def test_job_stores_and_reruns_add_nothing(prices_azure, duckdb_wh, wh_factory):
    settings = parse_prices({"azure": {"base_url": prices_azure.base + "/api/retail/prices"}})
    job = {"provider": "azure", "region": "westus2", "families": PREFIXES}
    first = jobs.run_azure(job, settings, wh_factory)
    assert first["spot_prices"] == 3 and first["ondemand_prices"] == 3
    again = jobs.run_azure(job, settings, wh_factory)
    assert again["spot_prices"] == 0 and again["ondemand_prices"] == 0 and again["seen"] == 6
    # a price change adds exactly one point
    for i in prices_azure.items:
        if i["armRegionName"] == "westus2" and i["skuName"] == "ND96isr H100 v5 Spot":
            i["retailPrice"] = 41.0
    third = jobs.run_azure(job, settings, wh_factory)
    assert third["spot_prices"] == 1 and third["ondemand_prices"] == 0
    rows = duckdb_wh.query(
        "SELECT price_per_hour FROM spot_prices WHERE instance_type = ? ORDER BY observed_at",
        ["Standard_ND96isr_H100_v5"],
    )
    assert [r[0] for r in rows] == [Decimal("43.2630000000"), Decimal("41.0000000000")]
    cat = duckdb_wh.query(
        "SELECT gpu_model, gpu_count FROM instance_catalog WHERE provider = 'azure' AND instance_type = ?",
        ["Standard_ND96isr_H100_v5"],
    )
    assert cat == [("H100-80GB", 8)]
    # nothing hostile reached the warehouse
    assert duckdb_wh.query("SELECT count(*) FROM spot_prices WHERE instance_type LIKE '%DROP%'") == [(0,)]


def test_connection_host_overrides_base_url_and_keeps_api_path(prices_azure, monkeypatch):
    import json
    from urllib.parse import urlsplit

    from finops.prices.conn import resolve

    u = urlsplit(prices_azure.base)
    monkeypatch.setenv(
        "AIRFLOW_CONN_AZURE_PRICES",
        json.dumps({"conn_type": "http", "host": u.hostname, "port": u.port, "schema": "http"}),
    )
    ep = resolve("azure_prices", "https://prices.azure.com/api/retail/prices")
    assert ep.base_url == f"{prices_azure.base}/api/retail/prices" and ep.api_key is None
    assert len(azure.fetch_region(_client(), ep.base_url, "eastus", PREFIXES)) == 6


def _azure_latest(wh):
    rows = wh.query("SELECT instance_type, pricing_model FROM latest_prices WHERE provider = 'azure'")
    return {tuple(r) for r in rows}


def test_withdrawn_sku_leaves_latest_prices_only_when_a_fetch_covered_it(prices_azure, duckdb_wh, wh_factory):
    settings = parse_prices({"azure": {"base_url": prices_azure.base + "/api/retail/prices"}})
    job = {"provider": "azure", "region": "westus2", "families": PREFIXES}
    jobs.run_azure(job, settings, wh_factory)
    full = _azure_latest(duckdb_wh)
    assert len(full) == 6

    def drop(sku_name):
        prices_azure.items = [
            i
            for i in prices_azure.items
            if not (i["armRegionName"] == "westus2" and i["skuName"] == sku_name)
        ]

    drop("ND96isr H100 v5 Spot")  # the spot meter is withdrawn, the on-demand one stays
    drop("NC4as T4 v3")  # the NC4as on-demand meter is withdrawn too
    # a backfill narrowed to Standard_ND covers ND only: NC4as is not judged by it
    jobs.run_azure({**job, "families": ["Standard_ND"]}, settings, wh_factory)
    assert _azure_latest(duckdb_wh) == full - {("Standard_ND96isr_H100_v5", "spot")}
    # the eastus listing (another region) still has both and withdraws nothing in westus2
    jobs.run_azure({**job, "region": "eastus"}, settings, wh_factory)
    assert ("Standard_NC4as_T4_v3", "ondemand") in _azure_latest(duckdb_wh)
    jobs.run_azure(job, settings, wh_factory)
    latest = duckdb_wh.query(
        "SELECT region, instance_type, pricing_model FROM latest_prices WHERE provider = 'azure'"
    )
    westus2 = {(t, m) for r, t, m in latest if r == "westus2"}
    assert westus2 == full - {("Standard_ND96isr_H100_v5", "spot"), ("Standard_NC4as_T4_v3", "ondemand")}
    assert len([r for r in latest if r[0] == "eastus"]) == 6
    # the history stays: withdrawn is not deleted
    assert duckdb_wh.query(
        "SELECT count(*) FROM spot_prices WHERE region = 'westus2' AND instance_type = 'Standard_ND96isr_H100_v5'"
    ) == [(1,)]


def test_a_next_page_link_that_repeats_fails_the_fetch(prices_azure):
    # every page links to page 2
    prices_azure.rewrite(lambda body: re.sub(rb"%24skip=\d+", b"%24skip=4", body))
    with pytest.raises(PriceSourceError, match="repeats"):
        _fetch(prices_azure)
