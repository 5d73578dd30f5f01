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
