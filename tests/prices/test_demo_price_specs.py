"""The demo's price stage builds the GPU catalog from the Compute API fakes it serves
(finops.demo.price_apis), not from the static table: the demo's own config and connection,
the same job code the finops_prices DAG runs."""

from __future__ import annotations

import pytest

from finops.demo.config import GCP_PRICES_CONN, demo_sections
from finops.demo.price_apis import price_apis
from finops.prices import jobs, queries
from finops.prices.gpu_models import known_instance
from finops.prices.settings import parse_prices


@pytest.fixture
def demo_apis():
    with price_apis(GCP_PRICES_CONN) as apis:
        yield apis


def test_demo_gcp_catalog_comes_from_the_compute_api(demo_apis, duckdb_wh, wh_factory):
    settings = parse_prices(demo_sections(demo_apis.azure_url)["prices"])
    for job in jobs.plan_jobs(settings, provider="gcp"):
        jobs.RUNNERS["gcp"](job, settings, wh_factory, run_id="demo")
    rows = duckdb_wh.query(
        "SELECT instance_type, gpu_model, gpu_count, vcpus, source FROM instance_catalog WHERE provider = 'gcp'"
    )
    cat = {r[0]: r[1:] for r in rows}
    assert known_instance("gcp", "a3-megagpu-8g") is None  # only the API can bring it
    assert cat["a3-megagpu-8g"] == ("H100-80GB", 8, 208, "api+static")
    assert cat["g2-standard-24"][:3] == ("L4", 2, 24) and "n2-standard-4" not in cat
    assert {src for *_, src in cat.values()} <= {"api", "api+static"}  # never the table's alone
    # the machineTypes call carried the series filter, followed the pages, and set availability
    mt = [r for r in demo_apis.gcp_compute.requests if "machineTypes" in r]
    assert "filter=name+eq" in mt[0] and any("pageToken=" in r for r in mt)
    offered = queries.offered_places(duckdb_wh, "gcp")
    assert "a3-megagpu-8g" in offered[("gcp", "us-central1")]
    assert "a3-megagpu-8g" not in offered.get(("gcp", "us-east4"), set())
    # priced types are the API's shapes: A3 H100 on demand only where its GPU SKU is (us-central1)
    priced = {
        (r[0], r[1])
        for r in duckdb_wh.query("SELECT instance_type, region FROM ondemand_prices WHERE provider = 'gcp'")
    }
    assert ("a3-highgpu-8g", "us-central1") in priced and ("g2-standard-4", "us-east4") in priced


def test_demo_aws_prices_come_from_the_aws_fake(moto_reset, duckdb_wh, wh_factory):
    """The demo's AWS price config against finops.demo.aws_price_apis (moto behind it): real-
    looking spot history, on-demand prices, RI and Savings Plans rates, two Capacity Blocks."""
    from decimal import Decimal

    from finops.demo.aws_price_apis import ON_DEMAND, SPOT_SHARE, aws_price_apis
    from finops.demo.config import AWS_PRICES_CONN

    with aws_price_apis(moto_reset, AWS_PRICES_CONN) as apis:
        settings = parse_prices(demo_sections("http://127.0.0.1:9/azure")["prices"])
        out = [
            jobs.RUNNERS["aws"](job, settings, wh_factory, run_id="demo")
            for job in jobs.plan_jobs(settings, "aws")
        ]
    assert [o["region"] for o in out] == ["us-east-1"]
    assert out[0]["capacity_blocks"] == 2 and out[0]["commitment_rates"] > 0
    served = {a for a, _ in apis.calls}
    assert {"GetProducts", "DescribeSpotPriceHistory", "DescribeSavingsPlansOfferingRates"} <= served
    spot = dict(
        duckdb_wh.query(
            "SELECT instance_type, MIN(price_per_hour) FROM spot_prices WHERE provider = 'aws' GROUP BY 1"
        )
    )
    assert set(spot) == set(ON_DEMAND)  # p5 / p4d / g5: moto's 0.00001 placeholder never stored
    for itype, low in spot.items():
        share = Decimal(low) / Decimal(ON_DEMAND[itype][0])
        assert abs(share - Decimal(SPOT_SHARE[itype])) <= Decimal("0.02"), (itype, share)
    rates = duckdb_wh.query(
        "SELECT DISTINCT product, family FROM commitment_rates WHERE provider = 'aws' ORDER BY 1, 2"
    )
    assert ("reserved_instance", "g5") in rates and ("savings_plan", "p5") in rates
