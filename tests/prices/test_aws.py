"""AWS: spot history paging / watermarks with botocore Stubber (moto's spot history is a one-price
stub), Pricing PriceList parsing via Stubber, hook wiring + describe_instance_types on moto."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import boto3
import pytest
from botocore.stub import ANY, Stubber

from finops.prices import aws, jobs, store
from finops.prices.gpu_models import known_instance
from finops.prices.settings import parse_prices
from tests.fixtures.prices import PRICES_T0, prices_price_list, prices_spot_item, prices_spot_pages


def _ec2():
    return boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def _pricing():
    return boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def _stub_history(
    stub: Stubber, pages: list[dict], start: datetime | object = ANY, pattern: str = "p5.*"
) -> None:
    for n, page in enumerate(pages):
        params = {
            "StartTime": start,
            "ProductDescriptions": ["Linux/UNIX"],
            "Filters": [{"Name": "instance-type", "Values": [pattern]}],
        }
        if n:
            params["NextToken"] = f"next-{n}"
        stub.add_response("describe_spot_price_history", page, params)


def test_multi_page_history_parses_every_point():
    ec2 = _ec2()
    pages = prices_spot_pages()
    with Stubber(ec2) as stub:
        _stub_history(stub, pages, start=PRICES_T0)
        hist = aws.fetch_spot_history(ec2, "us-east-1", "p5", PRICES_T0)
        stub.assert_no_pending_responses()
    assert hist.pages == len(pages) > 2
    assert len(hist.records) == sum(len(p["SpotPriceHistory"]) for p in pages) == 24
    assert {r.zone for r in hist.records} == {"us-east-1a", "us-east-1b", "us-east-1d"}
    assert {r.instance_type for r in hist.records} == {"p5.48xlarge", "p4d.24xlarge"}
    assert hist.max_timestamp == datetime(2026, 11, 1, 18, 14)  # naive UTC
    r0 = next(r for r in hist.records if r.zone == "us-east-1a" and r.observed_at == datetime(2026, 11, 1))
    assert r0.price_per_hour == Decimal("31.200000") and r0.pricing_model == "spot"


def test_malformed_points_are_skipped():
    ec2 = _ec2()
    ts = PRICES_T0
    page = {
        "SpotPriceHistory": [
            prices_spot_item("us-east-1a", "p5.48xlarge", "31.5", ts),
            prices_spot_item("us-east-1a", "p5.48xlarge", "not-a-price", ts),
            prices_spot_item("us-east-1a", "p5.48xlarge'; DROP TABLE x", "1.0", ts),
            prices_spot_item("us-east-1a", "p5.48xlarge", "1e999", ts),
        ]
    }
    with Stubber(ec2) as stub:
        _stub_history(stub, [page])
        hist = aws.fetch_spot_history(ec2, "us-east-1", "p5", ts)
    assert [r.price_per_hour for r in hist.records] == [Decimal("31.5")]


def test_family_and_region_names_are_validated():
    assert aws.type_pattern("g6e") == "g6e.*" and aws.type_pattern("g5.xlarge") == "g5.xlarge"
    for bad in ("p5*", "p5.*; x", "", "P5"):
        with pytest.raises(ValueError):
            aws.type_pattern(bad)
    with pytest.raises(ValueError):
        aws.check_region("us-east-1' OR 1=1")


def test_pricing_price_list_json_strings():
    pricing = _pricing()
    bad = json.dumps({"product": {"attributes": {"instanceType": "p5.48xlarge"}}})  # no terms
    with Stubber(pricing) as stub:  # types are queried in sorted order: p4d first, then p5 over two pages
        stub.add_response(
            "get_products",
            {
                "FormatVersion": "aws_v1",
                "PriceList": [prices_price_list("p4d.24xlarge", "us-east-1", "21.9576")],
            },
            {
                "ServiceCode": "AmazonEC2",
                "Filters": aws.pricing_filters("us-east-1", "p4d.24xlarge"),
                "FormatVersion": "aws_v1",
            },
        )
        stub.add_response(
            "get_products",
            {"FormatVersion": "aws_v1", "PriceList": [bad], "NextToken": "t2"},
            {
                "ServiceCode": "AmazonEC2",
                "Filters": aws.pricing_filters("us-east-1", "p5.48xlarge"),
                "FormatVersion": "aws_v1",
            },
        )
        stub.add_response(
            "get_products",
            {
                "FormatVersion": "aws_v1",
                "PriceList": [prices_price_list("p5.48xlarge", "us-east-1", "55.0400000000")],
            },
            {"ServiceCode": "AmazonEC2", "Filters": ANY, "FormatVersion": "aws_v1", "NextToken": "t2"},
        )
        recs = aws.fetch_ondemand(pricing, "us-east-1", ["p5.48xlarge", "p4d.24xlarge"])
    by = {r.instance_type: r for r in recs}
    assert by["p5.48xlarge"].price_per_hour == Decimal("55.04") and by[
        "p4d.24xlarge"
    ].price_per_hour == Decimal("21.9576")
    assert by["p5.48xlarge"].effective_from == datetime(2025, 6, 1)
    filters = {f["Field"]: f["Value"] for f in aws.pricing_filters("us-east-1", "p5.48xlarge")}
    assert filters == {
        "regionCode": "us-east-1",
        "instanceType": "p5.48xlarge",
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
    }


def test_windows_price_list_entry_is_ignored():
    assert (
        aws.parse_price_list_item(
            prices_price_list("p5.48xlarge", "us-east-1", "60", os_="Windows"), datetime(2026, 1, 1)
        )
        is None
    )


def test_hook_wiring_and_instance_types_on_moto(aws_conn):
    ec2, pricing = aws.clients(aws_conn, "us-east-1")
    assert ec2.meta.region_name == "us-east-1" and pricing.meta.service_model.service_name == "pricing"
    assert ec2.meta.endpoint_url.startswith("http://127.0.0.1")  # the connection's endpoint_url extra
    cat = {c.instance_type: c for c in aws.fetch_instance_types(ec2, ["p5", "g5"])}
    assert cat["p5.48xlarge"].gpu_model == "H100-80GB" and cat["p5.48xlarge"].gpu_count == 8
    assert cat["p5.48xlarge"].gpu_memory_gib == 80.0 and cat["p5.48xlarge"].vcpus == 192
    assert cat["p5.48xlarge"].interconnect.startswith("NVLink")
    assert cat["g5.12xlarge"].gpu_model == "A10G" and cat["g5.12xlarge"].gpu_count == 4
    assert all(t.startswith(("p5.", "g5.")) for t in cat)


def _describe_types_response() -> dict:
    return {
        "InstanceTypes": [
            {
                "InstanceType": "p5.48xlarge",
                "VCpuInfo": {"DefaultVCpus": 192},
                "MemoryInfo": {"SizeInMiB": 2097152},
                "GpuInfo": {
                    "Gpus": [
                        {
                            "Name": "H100",
                            "Manufacturer": "NVIDIA",
                            "Count": 8,
                            "MemoryInfo": {"SizeInMiB": 81920},
                        }
                    ],
                    "TotalGpuMemoryInMiB": 655360,
                },
            },
            {
                "InstanceType": "p4d.24xlarge",
                "VCpuInfo": {"DefaultVCpus": 96},
                "MemoryInfo": {"SizeInMiB": 1179648},
                "GpuInfo": {
                    "Gpus": [
                        {
                            "Name": "A100",
                            "Manufacturer": "NVIDIA",
                            "Count": 8,
                            "MemoryInfo": {"SizeInMiB": 40960},
                        }
                    ],
                    "TotalGpuMemoryInMiB": 327680,
                },
            },
        ]
    }


def _run(wh_factory, pages, start=ANY, lookback=None, with_scores=True):
    ec2, pricing = _ec2(), _pricing()
    settings = parse_prices(
        {
            "aws": {
                "regions": ["us-east-1"],
                "instance_families": ["p5"],
                "placement_scores": with_scores,
                "placement_instance_types": ["p5.48xlarge"],
            }
        }
    )
    (job,) = jobs.plan_jobs(settings, provider="aws", lookback_days=lookback)
    with Stubber(ec2) as es, Stubber(pricing) as ps:
        _stub_history(es, pages, start=start)
        es.add_response(
            "describe_instance_types",
            _describe_types_response(),
            {"Filters": [{"Name": "instance-type", "Values": ["p5.*"]}]},
        )
        es.add_response(
            "describe_instance_type_offerings",
            {
                "InstanceTypeOfferings": [
                    {"InstanceType": "p5.48xlarge", "LocationType": "availability-zone", "Location": z}
                    for z in ("us-east-1a", "us-east-1c")
                ]
            },
            {
                "LocationType": "availability-zone",
                "Filters": [{"Name": "instance-type", "Values": ["p4d.24xlarge", "p5.48xlarge"]}],
            },
        )
        if with_scores:
            es.add_response(
                "get_spot_placement_scores",
                {
                    "SpotPlacementScores": [
                        {"Region": "us-east-1", "AvailabilityZoneId": "use1-az1", "Score": 3},
                        {"Region": "us-east-1", "AvailabilityZoneId": "use1-az2", "Score": 7},
                    ],
                    "NextToken": "s2",
                },
                None,
            )
            es.add_response(
                "get_spot_placement_scores",
                {
                    "SpotPlacementScores": [
                        {"Region": "us-east-1", "AvailabilityZoneId": "use1-az4", "Score": 1}
                    ]
                },
                None,
            )
        for itype, usd in (("p4d.24xlarge", "21.9576"), ("p5.48xlarge", "55.04")):
            ps.add_response(
                "get_products",
                {"FormatVersion": "aws_v1", "PriceList": [prices_price_list(itype, "us-east-1", usd)]},
                None,
            )
        out = jobs.run_aws(job, settings, wh_factory, ec2=ec2, pricing=pricing)
        es.assert_no_pending_responses()
        ps.assert_no_pending_responses()
    return out


def test_incremental_runs_from_watermark(duckdb_wh, wh_factory):
    pages = prices_spot_pages(hours=24)
    first = _run(wh_factory, pages)
    assert first["spot_prices"] == 24 and first["ondemand_prices"] == 2
    assert first["instance_catalog"] == 2 and first["placement_scores"] == 3
    wm = store.get_watermark(duckdb_wh, "aws", "us-east-1", jobs.SPOT_STREAM, "p5")
    assert wm == datetime(2026, 11, 1, 18, 14)

    # re-run: AWS answers from the watermark (its last point again): nothing new is stored
    again = _run(
        wh_factory, [{"SpotPriceHistory": pages[0]["SpotPriceHistory"][:3]}], start=wm, with_scores=False
    )
    assert again["spot_prices"] == 0 and again["ondemand_prices"] == 0

    # next run: 12 more hours of points, overlapping the old window; only the new ones land
    newer = prices_spot_pages(start=PRICES_T0 + timedelta(hours=12), hours=24)
    third = _run(wh_factory, newer, start=wm, with_scores=False)
    new_points = sum(
        1
        for p in newer
        for i in p["SpotPriceHistory"]
        if i["Timestamp"].replace(tzinfo=None) > datetime(2026, 11, 1, 18, 14)
    )
    assert third["spot_prices"] == new_points == 12
    assert duckdb_wh.query("SELECT count(*) FROM spot_prices") == [(36,)]
    assert store.get_watermark(duckdb_wh, "aws", "us-east-1", jobs.SPOT_STREAM, "p5") == datetime(
        2026, 11, 2, 6, 14
    )
    assert duckdb_wh.query("SELECT count(*) FROM spot_placement_scores") == [(3,)]


def test_backfill_with_lookback_ignores_watermark_but_never_rewinds_it(duckdb_wh, wh_factory):
    _run(wh_factory, prices_spot_pages(start=PRICES_T0 + timedelta(days=1)), with_scores=False)
    wm = store.get_watermark(duckdb_wh, "aws", "us-east-1", jobs.SPOT_STREAM, "p5")
    older = prices_spot_pages(start=PRICES_T0 - timedelta(days=5))
    before = datetime.now(UTC).replace(tzinfo=None)
    out = _run(wh_factory, older, start=ANY, lookback=10, with_scores=False)
    assert out["spot_prices"] == 24
    assert store.get_watermark(duckdb_wh, "aws", "us-east-1", jobs.SPOT_STREAM, "p5") == wm
    assert before  # the stubbed StartTime is checked loosely; lookback days drive it


def _run_families(wh_factory, families, history, types, usd):
    """run_aws over `families`: spot history pages per family, the types describe_instance_types
    lists, the on-demand USD price per type the Pricing API knows."""
    ec2, pricing = _ec2(), _pricing()
    settings = parse_prices({"aws": {"regions": ["us-east-1"], "placement_scores": False}})
    (job,) = jobs.plan_jobs(settings, provider="aws", families=families)
    with Stubber(ec2) as es, Stubber(pricing) as ps:
        for fam in families:
            _stub_history(es, [{"SpotPriceHistory": history.get(fam, [])}], pattern=f"{fam}.*")
        es.add_response(
            "describe_instance_types",
            {"InstanceTypes": [{"InstanceType": t} for t in types]},
            {"Filters": [{"Name": "instance-type", "Values": [f"{f}.*" for f in families]}]},
        )
        if types:
            es.add_response(
                "describe_instance_type_offerings",
                {"InstanceTypeOfferings": []},
                {
                    "LocationType": "availability-zone",
                    "Filters": [{"Name": "instance-type", "Values": sorted(types)}],
                },
            )
        spot_types = {i["InstanceType"] for fam in families for i in history.get(fam, [])}
        for itype in sorted(set(types) | spot_types):
            listed = [prices_price_list(itype, "us-east-1", usd[itype])] if itype in usd else []
            ps.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": listed}, None)
        jobs.run_aws(job, settings, wh_factory, ec2=ec2, pricing=pricing)
        es.assert_no_pending_responses()
        ps.assert_no_pending_responses()


def test_a_type_that_leaves_the_region_leaves_latest_prices(duckdb_wh, wh_factory):
    def latest():
        rows = duckdb_wh.query("SELECT instance_type, pricing_model, zone FROM latest_zone_prices")
        return {tuple(r) for r in rows}

    t = datetime.now(UTC) - timedelta(hours=3)
    history = {
        "p5": [prices_spot_item(az, "p5.48xlarge", "31.2", t) for az in ("us-east-1a", "us-east-1b")],
        "p4d": [prices_spot_item("us-east-1a", "p4d.24xlarge", "9.8", t)],
        "g5": [prices_spot_item("us-east-1a", "g5.xlarge", "0.4", t)],
    }
    usd = {"p5.48xlarge": "55.04", "p4d.24xlarge": "21.9576", "g5.xlarge": "1.006"}
    _run_families(wh_factory, ["p5", "p4d", "g5"], history, ["p5.48xlarge", "p4d.24xlarge", "g5.xlarge"], usd)
    full = latest()
    assert len(full) == 7
    # next window: no spot change anywhere (absent from a history window is not gone), and AWS
    # no longer offers p4d in the region; a g5 backfill first judges g5 only
    _run_families(wh_factory, ["g5"], {}, ["g5.xlarge"], usd)
    assert latest() == full
    _run_families(wh_factory, ["p5", "p4d"], {}, ["p5.48xlarge"], usd)
    assert latest() == {r for r in full if r[0] != "p4d.24xlarge"}
    # a Pricing API that answers nothing at all is no evidence; one that stops pricing p5 while
    # still pricing g5 is: the on-demand p5 is withdrawn, its spot markets stay
    _run_families(wh_factory, ["p5", "p4d"], {}, ["p5.48xlarge"], {})
    assert latest() == {r for r in full if r[0] != "p4d.24xlarge"}
    _run_families(wh_factory, ["p5", "g5"], {}, ["p5.48xlarge", "g5.xlarge"], {"g5.xlarge": "1.006"})
    assert latest() == {r for r in full if r[0] == "g5.xlarge" or r[:2] == ("p5.48xlarge", "spot")}


def test_aws_specs_and_offerings_on_moto(aws_conn):
    ec2, _ = aws.clients(aws_conn, "us-east-1")
    cat = {c.instance_type: c for c in aws.fetch_instance_types(ec2, ["p6-b200", "p5"])}
    b200 = cat["p6-b200.48xlarge"]  # not in the static table
    assert known_instance("aws", "p6-b200.48xlarge") is None
    assert (b200.gpu_model, b200.gpu_count, b200.vcpus) == ("B200", 8, 192)
    assert 175 < b200.gpu_memory_gib < 185 and b200.source == "api"
    assert cat["p5.48xlarge"].source == "api+static"  # the interconnect is the table's
    offers = aws.fetch_offerings(ec2, "us-east-1", cat)
    assert ("us-east-1c", "p6-b200.48xlarge") in {(o.zone, o.instance_type) for o in offers}
    assert all(o.region == "us-east-1" and o.zone.startswith("us-east-1") for o in offers)


def test_aws_partitioned_gpus_are_fractions(aws_conn):
    ec2, _ = aws.clients(aws_conn, "us-east-1")
    cat = {c.instance_type: c for c in aws.fetch_instance_types(ec2, ["g6f"])}
    large, four = cat["g6f.large"], cat["g6f.4xlarge"]  # EC2 says Count 0, GpuPartitionSize 0.125 / 0.5
    assert (large.gpu_model, large.gpu_count, large.gpu_divisor) == ("L4", 1, 8)
    assert (four.gpu_count, four.gpu_divisor) == (1, 2)
    assert 21 < large.gpu_memory_gib < 24  # the whole L4's memory; the VM's slice is an eighth of it
