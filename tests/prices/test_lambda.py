"""Lambda Cloud instance-types against a local server in the API's real shape."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from finops.prices import jobs, lambda_cloud
from finops.prices.http import HttpClient, PriceSourceError
from finops.prices.settings import HttpSettings, parse_prices


def test_parse_prices_specs_and_capacity(prices_lambda):
    prices, catalog = lambda_cloud.parse(prices_lambda.doc)
    by = {p.instance_type: p for p in prices}
    assert set(by) == {
        "gpu_1x_a100_sxm4",
        "gpu_8x_a100_80gb_sxm4",
        "gpu_1x_h100_pcie",
        "gpu_8x_h100_sxm5",
        "gpu_1x_gh200",
        "gpu_1x_a10",
    }  # hostile name, string price, broken entry skipped
    assert by["gpu_8x_h100_sxm5"].price_per_hour == Decimal("23.92")
    assert by["gpu_8x_h100_sxm5"].pricing_model == "ondemand" and by["gpu_8x_h100_sxm5"].region == "global"
    assert json.loads(by["gpu_8x_h100_sxm5"].details) == {
        "regions_with_capacity": ["us-east-1", "us-south-1"]
    }
    cat = {c.instance_type: c for c in catalog}
    assert (cat["gpu_8x_h100_sxm5"].gpu_model, cat["gpu_8x_h100_sxm5"].gpu_count) == ("H100-80GB", 8)
    assert cat["gpu_8x_h100_sxm5"].interconnect == "NVLink (SXM)"
    assert cat["gpu_8x_a100_80gb_sxm4"].gpu_model == "A100-80GB"
    assert cat["gpu_1x_a100_sxm4"].gpu_model == "A100-40GB"
    assert cat["gpu_1x_h100_pcie"].interconnect == "PCIe"
    assert (cat["gpu_1x_gh200"].gpu_model, cat["gpu_1x_gh200"].vcpus, cat["gpu_1x_gh200"].memory_gib) == (
        "GH200",
        64,
        432.0,
    )


def test_not_a_data_document_is_an_error():
    with pytest.raises(PriceSourceError):
        lambda_cloud.parse({"error": {"code": "global/unknown"}})


@pytest.mark.parametrize("auth", ["bearer", "basic"])
def test_job_via_airflow_connection_with_retries(
    prices_lambda, prices_lambda_conn, duckdb_wh, wh_factory, auth
):
    prices_lambda.fail(429, retry_after="0")
    prices_lambda.fail(500)
    settings = parse_prices({"lambda": {"auth": auth}, "http": {"backoff_base_s": 0.01}})
    (job,) = jobs.plan_jobs(settings, provider="lambda")
    first = jobs.run_lambda(job, settings, wh_factory)
    assert first["ondemand_prices"] == 6 and first["instance_catalog"] == 6
    assert len(prices_lambda.requests) == 3
    again = jobs.run_lambda(job, settings, wh_factory)
    assert again["ondemand_prices"] == 0
    prices_lambda.doc["data"]["gpu_1x_a10"]["instance_type"]["price_cents_per_hour"] = 86
    third = jobs.run_lambda(job, settings, wh_factory)
    assert third["ondemand_prices"] == 1
    assert duckdb_wh.query(
        "SELECT price_per_hour FROM ondemand_prices WHERE instance_type = 'gpu_1x_a10' ORDER BY observed_at"
    ) == [(Decimal("0.75"),), (Decimal("0.86"),)]


def test_bad_key_fails_without_leaking_it(prices_lambda):
    c = HttpClient(HttpSettings(), headers={"Authorization": "Bearer wrong-key-123"})
    with pytest.raises(PriceSourceError, match="HTTP 401") as ei:
        lambda_cloud.fetch(c, prices_lambda.base)
    assert "wrong-key-123" not in str(ei.value)


def _lambda_latest(wh):
    rows = wh.query("SELECT instance_type, price_per_hour FROM latest_prices WHERE provider = 'lambda'")
    return dict(rows)


def test_an_instance_type_lambda_drops_leaves_the_latest_prices(prices_lambda, prices_lambda_conn, any_wh):
    from finops.prices import queries
    from tests.fixtures.prices import factory_for

    settings = parse_prices({"lambda": {"conn_id": prices_lambda_conn}})
    (job,) = jobs.plan_jobs(settings, provider="lambda")
    jobs.run_lambda(job, settings, factory_for(any_wh))
    assert "gpu_1x_a10" in _lambda_latest(any_wh)
    assert [o.instance_type for o in queries.cheapest_offers(any_wh, "A10", max_age_days=None)] == [
        "gpu_1x_a10"
    ]

    a10 = prices_lambda.doc["data"].pop("gpu_1x_a10")  # Lambda no longer offers it
    jobs.run_lambda(job, settings, factory_for(any_wh))
    assert set(_lambda_latest(any_wh)) == {
        "gpu_1x_a100_sxm4",
        "gpu_8x_a100_80gb_sxm4",
        "gpu_1x_h100_pcie",
        "gpu_8x_h100_sxm5",
        "gpu_1x_gh200",
    }
    assert queries.cheapest_offers(any_wh, "A10", max_age_days=None) == []

    # an answer with no readable instance type is no evidence that everything was withdrawn
    saved = prices_lambda.doc["data"]
    prices_lambda.doc["data"] = {"broken": {"instance_type": "nope"}}
    jobs.run_lambda(job, settings, factory_for(any_wh))
    assert len(_lambda_latest(any_wh)) == 5

    prices_lambda.doc["data"] = {**saved, "gpu_1x_a10": a10}  # offered again, same price: back
    assert jobs.run_lambda(job, settings, factory_for(any_wh))["ondemand_prices"] == 0
    assert _lambda_latest(any_wh)["gpu_1x_a10"] == Decimal("0.75")
