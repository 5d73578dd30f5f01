"""The GPU catalog from the providers' spec APIs, against local fakes serving recorded answers in
the documented shapes (tests/data/prices) and moto's EC2 for AWS: new types the static table
does not know, fractional GPUs, availability, drift, and the static fallback when a call is refused."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import pytest

from finops.alerts import events
from finops.prices import aws, azure_skus, gcp_compute, jobs, queries
from finops.prices.gpu_models import known_instance
from finops.prices.http import HttpClient
from finops.prices.settings import HttpSettings, parse_prices
from tests.fixtures.prices import (
    PRICES_AZURE_SUBSCRIPTION,
    PRICES_GCP_PROJECT,
    PRICES_SPECS_DATA,
    prices_azure_item,
)

FAST = HttpSettings(max_attempts=2, backoff_base_s=0, backoff_max_s=0)
GCP_SERIES = ["a2", "a3", "a4", "g2", "g4"]
NEW_TYPES = {
    ("gcp", "a3-megagpu-8g"),
    ("gcp", "a3-ultragpu-8g"),
    ("gcp", "a4-highgpu-8g"),
    ("azure", "Standard_ND96is_MI300X_v5"),
    ("azure", "Standard_ND96isr_MI300X_v5"),
    ("azure", "Standard_NV6ads_A10_v5"),
    ("azure", "Standard_NG8ads_V620_v1"),
}
DRIFT = {("gcp", "g4-standard-48"), ("azure", "Standard_ND96isr_B300_v7")}


def _client() -> HttpClient:
    return HttpClient(FAST, sleep=lambda s: None)


@pytest.fixture
def alerts():
    got: list[events.AlertEvent] = []
    events.register_sink(got.append)
    yield got
    events.unregister_sink(got.append)


def _recorded_gpu_types() -> set[tuple[str, str]]:
    """Every GPU type the recorded answers list (read straight from the files, not via our parser)."""
    out = set()
    for page in json.loads((PRICES_SPECS_DATA / "gcp_machine_types.json").read_text()):
        for scope in page["items"].values():
            out |= {("gcp", t["name"]) for t in scope.get("machineTypes", []) if t.get("accelerators")}
    for page in json.loads((PRICES_SPECS_DATA / "azure_resource_skus.json").read_text()):
        for s in page["value"]:
            caps = {c["name"]: c["value"] for c in s["capabilities"]}
            gpu_family = any(f in (s.get("family") or "") for f in ("MI300X", "V620"))  # no `GPUs` listed
            if s["resourceType"] == "virtualMachines" and ("GPUs" in caps or gpu_family):
                out.add(("azure", s["name"]))
    return out


def test_new_types_are_not_in_the_static_table():
    assert all(known_instance(p, t) is None for p, t in NEW_TYPES | DRIFT)


def test_gcp_machine_types_give_specs_and_zones(prices_specs):
    entries, offers = gcp_compute.fetch_specs(
        _client(),
        prices_specs.base,
        PRICES_GCP_PROJECT,
        ["us-central1", "us-east4", "europe-west4"],
        GCP_SERIES,
    )
    cat = {e.instance_type: e for e in entries}
    mega, ultra, a4 = cat["a3-megagpu-8g"], cat["a3-ultragpu-8g"], cat["a4-highgpu-8g"]
    assert (mega.gpu_model, mega.gpu_count, mega.gpu_memory_gib, mega.vcpus) == ("H100-80GB", 8, 80.0, 208)
    assert (ultra.gpu_model, ultra.gpu_count, ultra.gpu_memory_gib) == ("H200", 8, 141.0)
    assert (a4.gpu_model, a4.gpu_count, a4.gpu_memory_gib, a4.memory_gib) == ("B200", 8, 180.0, 3968.0)
    assert a4.source == "api+static"  # memory and interconnect from the table, the rest from the API
    assert cat["a2-highgpu-1g"].source == "api"  # its description says the memory: nothing from the table
    assert cat["g2-standard-24"].source == "api+static" and cat["g2-standard-24"].gpu_count == 2
    assert cat["g4-standard-48"].is_drift and cat["g4-standard-48"].gpu_name == "NVIDIA RTX PRO 6000"
    where = {(o.region, o.zone, o.instance_type) for o in offers}
    assert ("us-east4", "us-east4-a", "a3-megagpu-8g") in where
    assert ("us-central1", "us-central1-b", "a4-highgpu-8g") in where
    assert not any(o.region == "asia-east1" for o in offers)  # not a configured region
    assert not any(o.region == "us-east4" and o.instance_type == "a4-highgpu-8g" for o in offers)
    # the series filter went to the server, and both pages were read
    mt = [r for r in prices_specs.requests if "machineTypes" in r]
    assert len(mt) == 2 and "filter=name+eq" in mt[0] and "pageToken=" in mt[1]


def test_azure_resource_skus_give_specs_fractions_and_restrictions(prices_specs):
    entries, offers = azure_skus.fetch_specs(
        _client(),
        prices_specs.base,
        PRICES_AZURE_SUBSCRIPTION,
        "eastus",
        ["Standard_NC", "Standard_ND", "Standard_NG", "Standard_NV"],
    )
    cat = {e.instance_type: e for e in entries}
    assert "Standard_D4s_v5" not in cat  # not a GPU prefix, and no GPU
    nv6, nv12, nv36 = (cat[f"Standard_NV{n}ads_A10_v5"] for n in (6, 12, 36))
    assert (nv6.gpu_model, nv6.gpu_count, nv6.gpu_divisor, nv6.gpu_memory_gib) == ("A10", 1, 6, 24.0)
    assert (nv12.gpu_divisor, nv36.gpu_divisor) == (3, 1)
    # the 880 GB sizes: a whole A10 (NV36adms) and two (NV72ads), never a slice
    nv36m, nv72 = cat["Standard_NV36adms_A10_v5"], cat["Standard_NV72ads_A10_v5"]
    assert (nv36m.gpu_count, nv36m.gpu_divisor, nv72.gpu_count, nv72.gpu_divisor) == (1, 1, 2, 1)
    mi = cat["Standard_ND96is_MI300X_v5"]  # the SKU has no GPUs capability: the count is the table's
    assert (mi.gpu_model, mi.gpu_count, mi.gpu_memory_gib, mi.source) == ("MI300X", 8, 192.0, "api+static")
    mir = cat["Standard_ND96isr_MI300X_v5"]  # the documented size says GPUs 8 itself
    assert (mir.gpu_model, mir.gpu_count, mir.vcpus, mir.memory_gib) == ("MI300X", 8, 96, 1850.0)
    ng8 = cat["Standard_NG8ads_V620_v1"]  # no GPUs capability, and a quarter of one V620
    assert (ng8.gpu_model, ng8.gpu_count, ng8.gpu_divisor, ng8.gpu_memory_gib) == ("V620", 1, 4, 32.0)
    assert cat["Standard_NC24ads_A100_v4"].source == "api+static"  # no Azure API says GPU memory
    assert cat["Standard_ND96isr_B300_v7"].is_drift
    restricted = {(o.instance_type, o.zone): o.restriction for o in offers if o.restriction}
    assert restricted == {
        ("Standard_NC24ads_A100_v4", "3"): "NotAvailableForSubscription",
        ("Standard_NC40ads_H100_v5", "1"): "NotAvailableForSubscription",
        ("Standard_NC40ads_H100_v5", "2"): "NotAvailableForSubscription",
        ("Standard_NC40ads_H100_v5", "3"): "NotAvailableForSubscription",
    }
    assert ("Standard_NC4as_T4_v3", "") in {
        (o.instance_type, o.zone) for o in offers
    }  # a region without zones
    assert any("%24skiptoken=1" in r or "$skiptoken=1" in r for r in prices_specs.requests)


def _settings(base: str):
    return parse_prices(
        {
            "gcp": {
                "base_url": base,
                "compute_base_url": base,
                "project": PRICES_GCP_PROJECT,
                "regions": ["us-central1", "us-east4", "europe-west4"],
                "instance_families": GCP_SERIES,
            },
            "azure": {
                "base_url": base + "/api/retail/prices",
                "arm_base_url": base,
                "subscription_id": PRICES_AZURE_SUBSCRIPTION,
                "regions": ["eastus"],
            },
            "http": FAST.model_dump(),
        }
    )


def _run_all(settings, wh_factory):
    for job in jobs.plan_jobs(settings, provider="gcp") + jobs.plan_jobs(settings, provider="azure"):
        jobs.RUNNERS[job["provider"]](job, settings, wh_factory, client=_client(), run_id="r1")


def test_every_gpu_type_the_apis_list_ends_in_the_catalog(
    prices_specs, prices_gcp, prices_azure, duckdb_wh, wh_factory, alerts
):
    _run_all(_settings(prices_specs.base), wh_factory)
    rows = duckdb_wh.query(
        "SELECT provider, instance_type, gpu_model, gpu_count, gpu_divisor, gpu_memory_gib, source FROM instance_catalog"
    )
    got = {(r[0], r[1]): r[2:] for r in rows}
    listed = _recorded_gpu_types()
    assert NEW_TYPES <= listed and DRIFT <= listed
    missing = listed - set(got)
    assert not missing, f"GPU types listed by the APIs but not in the catalog: {sorted(missing)}"
    for key in listed - DRIFT:
        model, count, divisor, mem, source = got[key]
        assert model and count and divisor and mem, (key, got[key])
        assert source in ("api", "api+static"), key
    assert got[("azure", "Standard_NV6ads_A10_v5")][:3] == ("A10", 1, 6)
    # drift: in the catalog without a model, listed by the query, alerted once per set
    drift = {(d.provider, d.instance_type) for d in queries.catalog_drift(duckdb_wh)}
    assert drift == DRIFT
    kinds = [a for a in alerts if a.kind == "gpu_catalog_drift"]
    assert {a.dedup_key for a in kinds} == {
        "gpu_catalog_drift:gcp:g4-standard-48",
        "gpu_catalog_drift:azure:Standard_ND96isr_B300_v7",
    }


def test_prices_follow_the_api_shapes_and_availability(
    prices_specs, prices_gcp, prices_azure, duckdb_wh, wh_factory
):
    prices_azure.items += [
        prices_azure_item("Standard_NV6ads_A10_v5", "NV6ads A10 v5", 0.454, "eastus"),
        prices_azure_item("Standard_NV36ads_A10_v5", "NV36ads A10 v5", 3.2, "eastus"),
        prices_azure_item("Standard_NC40ads_H100_v5", "NC40ads H100 v5", 6.98, "eastus"),
    ]
    _run_all(_settings(prices_specs.base), wh_factory)
    # a3-megagpu-8g, unknown to the static table, is priced from the API's shape where it is offered
    h100 = {
        (o.instance_type, o.region) for o in queries.cheapest_offers(duckdb_wh, "H100", 8, max_age_days=None)
    }
    assert ("a3-megagpu-8g", "us-central1") in h100 and ("a3-highgpu-8g", "us-central1") in h100
    # a sixth of an A10 is never offered as a whole A10; asked for, its GPU-hour costs six times its price
    whole = queries.cheapest_offers(duckdb_wh, "A10", 1, max_age_days=None)
    assert [o.instance_type for o in whole] == ["Standard_NV36ads_A10_v5"]
    (sixth,) = queries.cheapest_offers(
        duckdb_wh, "A10", 1, gpu_divisor=6, max_age_days=None, pricing=["ondemand"]
    )
    assert sixth.gpus == Fraction(1, 6) and sixth.price_per_gpu_hour == Decimal("0.454") * 6
    # restricted in the whole region for this subscription: priced, but never proposed
    assert queries.cheapest_offers(duckdb_wh, "H100 NVL", 1, max_age_days=None) == []
    places = queries.offered_places(duckdb_wh)
    assert "Standard_NC40ads_H100_v5" not in places[("azure", "eastus")]
    assert (
        "a4-highgpu-8g" in places[("gcp", "us-central1")]
        and "a4-highgpu-8g" not in places[("gcp", "us-east4")]
    )


def test_a_refused_spec_call_falls_back_to_the_static_table(
    prices_specs, prices_gcp, prices_azure, duckdb_wh, wh_factory
):
    prices_specs.fail(403, times=2)  # a 403 is not retried: the first spec call of each provider fails
    _run_all(_settings(prices_specs.base), wh_factory)
    rows = dict(duckdb_wh.query("SELECT instance_type, source FROM instance_catalog"))
    assert rows["a3-highgpu-8g"] == "static" and rows["Standard_NC24ads_A100_v4"] == "static"
    assert "a3-megagpu-8g" not in rows  # only an API can tell about a type the table does not know
    assert duckdb_wh.query("SELECT count(*) FROM ondemand_prices WHERE provider = 'gcp'")[0][0] > 0


def test_static_fallback_when_describe_instance_types_is_refused():
    entries = aws.static_instance_types(["p5", "g5"])
    assert {e.instance_type for e in entries} >= {"p5.48xlarge", "g5.xlarge"}
    assert all(e.source == "static" and e.instance_type.startswith(("p5.", "g5.")) for e in entries)
    assert "p5e.48xlarge" not in {e.instance_type for e in entries}  # p5 is a family, not a prefix of p5e


def test_azure_sign_in_failure_falls_back_and_a_missing_connection_is_named(
    prices_specs, prices_azure, wh_factory
):
    base = _settings(prices_specs.base).model_dump(by_alias=True)
    (job,) = jobs.plan_jobs(parse_prices(base), provider="azure")
    no_conn = parse_prices({**base, "azure": {**base["azure"], "arm_conn_id": None}})
    with pytest.raises(ValueError, match="arm_conn_id"):
        jobs.run_azure(job, no_conn, wh_factory)
    unknown = parse_prices({**base, "azure": {**base["azure"], "arm_conn_id": "finops_no_such_azure_conn"}})
    out = jobs.run_azure(job, unknown, wh_factory)
    assert out["instance_catalog"] > 0 and out["availability"] == 0  # the static table answered
    assert not any("/skus" in r for r in prices_specs.requests)  # no call went out without a token


def test_a_gpu_family_size_without_a_count_is_drift_not_dropped():
    sku = {
        "resourceType": "virtualMachines",
        "name": "Standard_ND192isr_MI300X_v6",
        "family": "standardNDISv5MI300XFamily",
        "capabilities": [{"name": "vCPUs", "value": "192"}, {"name": "MemoryGB", "value": "3700"}],
    }
    entry = azure_skus.parse_sku(sku)
    assert entry is not None and entry.gpu_model == "MI300X" and entry.gpu_count is None and entry.is_drift
    assert azure_skus.parse_sku({**sku, "family": "standardDSv5Family", "name": "Standard_D4s_v5"}) is None
