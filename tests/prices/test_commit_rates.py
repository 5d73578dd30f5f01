"""Commitment rates from the providers' price data (finops.prices.commit_rates) and the price
jobs that store them in commitment_rates.

AWS: neither the Pricing API nor the Savings Plans API is in moto, and moto's EC2 has no
DescribeCapacityBlockOfferings, so the demo's fake (finops.demo.aws_price_apis) speaks them and
hands every other EC2 action to the shared moto server. Prices are synthetic round numbers so
each discount is checked by hand: p5.48xlarge at 50.00 $/h on demand, p4d.24xlarge at 32.77.
Azure and GCP: the demo's Retail Prices / Billing Catalog fakes (finops.demo.price_apis)."""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from finops.demo.aws_price_apis import AwsPriceApis, block
from finops.demo.price_apis import (
    GcpCatalogEmulator,
    prices_gcp_catalog,
    prices_gcp_commit_skus,
)
from finops.prices import aws, commit_rates, jobs
from finops.prices.settings import parse_prices


@pytest.fixture
def aws_apis(httpserver, moto_reset) -> AwsPriceApis:
    return AwsPriceApis(httpserver, moto_reset)


# --------------------------------------------------------------------------- AWS tests


def _by_key(rates):
    return {(r.product, r.instance_type, r.term_years, r.payment): r for r in rates}


def test_reserved_terms_effective_hourly_and_discount(aws_apis):
    docs: list = []
    od = aws.fetch_ondemand(
        aws_apis.client("pricing"), "us-east-1", ["p5.48xlarge", "p4d.24xlarge", "g5.xlarge"], docs
    )
    assert [r.instance_type for r in od] == ["p4d.24xlarge", "p5.48xlarge"] and len(docs) == 2
    rates = _by_key(r for rec, doc in zip(od, docs, strict=True) for r in commit_rates.aws_reserved(doc, rec))
    got = {k: (r.commitment_hourly, r.discount) for k, r in rates.items() if k[1] == "p5.48xlarge"}
    assert got == {
        ("reserved_instance", "p5.48xlarge", 1, "no_upfront"): (D("35.00"), D("0.3")),
        ("reserved_instance", "p5.48xlarge", 1, "partial_upfront"): (D("33.00"), D("0.34")),
        ("reserved_instance", "p5.48xlarge", 1, "all_upfront"): (D("32"), D("0.36")),
        ("reserved_instance", "p5.48xlarge", 3, "no_upfront"): (D("28.00"), D("0.44")),
        ("reserved_instance", "p5.48xlarge", 3, "partial_upfront"): (D("26.00"), D("0.48")),
        ("reserved_instance", "p5.48xlarge", 3, "all_upfront"): (D("25"), D("0.5")),
    }  # the convertible offer is not among them
    p4d = rates[("reserved_instance", "p4d.24xlarge", 1, "no_upfront")]
    assert p4d.discount == D("0.35") and p4d.family == "p4d" and p4d.on_demand_hourly == D("32.77")


def test_compute_savings_plan_rates_paged_and_filtered(aws_apis):
    od = aws.fetch_ondemand(aws_apis.client("pricing"), "us-east-1", ["p5.48xlarge", "p4d.24xlarge"])
    rates = commit_rates.fetch_savings_plan_rates(aws_apis.client("savingsplans"), "us-east-1", od)
    got = {(k[1], k[2], k[3]): r.discount for k, r in _by_key(rates).items()}
    assert got == {
        ("p5.48xlarge", 1, "no_upfront"): D("0.25"),
        ("p5.48xlarge", 1, "partial_upfront"): D("0.28"),
        ("p5.48xlarge", 1, "all_upfront"): D("0.3"),
        ("p5.48xlarge", 3, "no_upfront"): D("0.4"),
        ("p5.48xlarge", 3, "partial_upfront"): D("0.43"),
        ("p5.48xlarge", 3, "all_upfront"): D("0.45"),
        ("p4d.24xlarge", 1, "no_upfront"): D("0.25"),
    }  # the EC2 Instance plan and the dedicated-tenancy rate are left out
    asked = [b for name, b in aws_apis.calls if name == "DescribeSavingsPlansOfferingRates"]
    assert len(asked) == 2  # 7 Compute, shared-tenancy results, 4 a page: followed nextToken once
    assert asked[0]["savingsPlanTypes"] == ["Compute"] and asked[0]["products"] == ["EC2"]
    assert {"name": "region", "values": ["us-east-1"]} in asked[0]["filters"]


def test_aws_job_stores_rates_and_a_refused_savings_plans_call_keeps_them(aws_apis, duckdb_wh, wh_factory):
    settings = parse_prices({"aws": {"placement_scores": False}})
    job = {"provider": "aws", "region": "us-east-1", "families": ["p5", "p4d"], "lookback_days": 1}
    out = jobs.run_aws(
        job, settings, wh_factory, ec2=aws_apis.client("ec2"), pricing=aws_apis.client("pricing"),
        savingsplans=aws_apis.client("savingsplans"),
    )  # fmt: skip
    assert (
        out["commitment_rates"] == 14 and out["capacity_blocks"] is None
    )  # 7 RI + 7 SP; blocks not configured
    rows = duckdb_wh.query(
        "SELECT product, family, term_years, payment, discount, source FROM commitment_rates "
        "WHERE instance_type = 'p5.48xlarge' AND term_years = 3 AND payment = 'all_upfront' ORDER BY product"
    )
    assert [(p, f, t, pay, D(d)) for p, f, t, pay, d, _ in rows] == [
        ("reserved_instance", "p5", 3, "all_upfront", D("0.5")),
        ("savings_plan", "p5", 3, "all_upfront", D("0.45")),
    ]
    assert {s for *_, s in rows} == {commit_rates.AWS_RI_SOURCE, commit_rates.AWS_SP_SOURCE}
    aws_apis.refuse_sp = True
    again = jobs.run_aws(
        job, settings, wh_factory, ec2=aws_apis.client("ec2"), pricing=aws_apis.client("pricing"),
        savingsplans=aws_apis.client("savingsplans"),
    )  # fmt: skip
    assert again["commitment_rates"] == 7  # RI rates rewritten
    n = duckdb_wh.query("SELECT product, COUNT(*) FROM commitment_rates GROUP BY 1 ORDER BY 1")
    assert n == [("reserved_instance", 7), ("savings_plan", 7)]  # the refused call kept the SP rates


# --------------------------------------------------------------------------- Azure


def test_azure_reservations_and_savings_plans(prices_azure, duckdb_wh, wh_factory):
    settings = parse_prices({"azure": {"base_url": prices_azure.base + "/api/retail/prices"}})
    out = jobs.run_azure(
        {"provider": "azure", "region": "westus2", "families": ["Standard_NC", "Standard_ND"]},
        settings,
        wh_factory,
    )
    # NC24ads A100 v4: reservations 1 / 3 years and savings plans 1 / 3 years; ND96isr H100 v5:
    # savings plans 1 / 3 years; each for no_upfront and all_upfront (Azure prices both alike)
    assert out["commitment_rates"] == 12
    got = duckdb_wh.query(
        "SELECT product, instance_type, term_years, on_demand_hourly, commitment_hourly, discount, family "
        "FROM commitment_rates WHERE payment = 'no_upfront' ORDER BY 1, 2, 3"
    )
    assert [(p, i, t, D(o), D(c), D(d), f) for p, i, t, o, c, d, f in got] == [
        # 21,235.8168 for 1 year = 2.42418 $/h vs 4.0403 on demand; 42,471.6336 for 3 years = 1.61612
        ("reservation", "Standard_NC24ads_A100_v4", 1, D("4.0403"), D("2.42418"), D("0.4"), "NCads_A100_v4"),
        ("reservation", "Standard_NC24ads_A100_v4", 3, D("4.0403"), D("1.61612"), D("0.6"), "NCads_A100_v4"),
        (
            "savings_plan",
            "Standard_NC24ads_A100_v4",
            1,
            D("4.0403"),
            D("3.030225"),
            D("0.25"),
            "NCads_A100_v4",
        ),
        (
            "savings_plan",
            "Standard_NC24ads_A100_v4",
            3,
            D("4.0403"),
            D("2.222165"),
            D("0.45"),
            "NCads_A100_v4",
        ),
        (
            "savings_plan",
            "Standard_ND96isr_H100_v5",
            1,
            D("108.152"),
            D("86.5216"),
            D("0.2"),
            "NDisr_H100_v5",
        ),
        (
            "savings_plan",
            "Standard_ND96isr_H100_v5",
            3,
            D("108.152"),
            D("64.8912"),
            D("0.4"),
            "NDisr_H100_v5",
        ),
    ]
    assert any(
        "priceType+eq+%27Reservation%27" in q or "priceType%20eq%20%27Reservation%27" in q
        for q in prices_azure.requests
    )


def test_azure_term_price_read_as_hourly_is_no_rate():
    from datetime import datetime

    from finops.prices.records import PriceRecord

    od = PriceRecord(
        "azure", "ondemand", "eastus", "Standard_NC24ads_A100_v4", D("3.673"), datetime(2026, 1, 1), "t"
    )
    item = {
        "armSkuName": "Standard_NC24ads_A100_v4", "armRegionName": "eastus", "serviceName": "Virtual Machines",
        "type": "Reservation", "reservationTerm": "1 Year", "unitPrice": 2.21, "currencyCode": "USD",
    }  # fmt: skip
    [rate, _] = commit_rates.azure_rates([item], [od])
    assert rate.discount > D("0.99") and not rate.usable  # 2.21 for a year: a unit mistake, not an offer


# --------------------------------------------------------------------------- GCP


def test_gcp_resource_cud_rates_per_machine_shape(httpserver, duckdb_wh, wh_factory):
    emu = GcpCatalogEmulator(server=httpserver, skus=prices_gcp_catalog() + prices_gcp_commit_skus())
    httpserver.expect_request(emu.path).respond_with_handler(emu.handle)
    settings = parse_prices({"gcp": {"base_url": emu.base}})
    job = {"provider": "gcp", "region": "us-central1", "regions": ["us-central1"], "families": ["g2", "a2"]}
    out = jobs.run_gcp(job, settings, wh_factory)
    assert out["commitment_rates"] > 0
    got = {
        (i, t): (D(o), D(c))
        for i, t, o, c in duckdb_wh.query(
            "SELECT instance_type, term_years, on_demand_hourly, commitment_hourly FROM commitment_rates "
            "WHERE instance_type IN ('g2-standard-4', 'a2-highgpu-1g')"
        )
    }
    # g2-standard-4 = 4 vCPU + 16 GiB + 1 L4. On demand 4 x 0.024988 + 16 x 0.002928 + 0.56 = 0.706800;
    # 1 year 4 x 0.015743 + 16 x 0.001845 + 0.3528 = 0.445292; 3 years 4 x 0.011245 + 16 x 0.001318 + 0.252 = 0.318068
    assert got[("g2-standard-4", 1)] == (D("0.7068"), D("0.445292"))
    assert got[("g2-standard-4", 3)] == (D("0.7068"), D("0.318068"))
    # a2-highgpu-1g = 12 vCPU + 85 GiB + 1 A100 40GB. On demand 12 x 0.031611 + 85 x 0.004237 + 2.933908
    # = 3.673385; 1 year 12 x 0.019915 + 85 x 0.002669 + 1.848362 = 2.314207
    assert got[("a2-highgpu-1g", 1)] == (D("3.673385"), D("2.314207"))
    fams = duckdb_wh.query("SELECT DISTINCT family, product, payment FROM commitment_rates ORDER BY 1")
    assert fams == [("a2", "resource_cud", "no_upfront"), ("g2", "resource_cud", "no_upfront")]


def test_gcp_commitment_descriptions():
    from finops.demo.price_apis import prices_gcp_sku

    def parse(desc: str, usage: str, group: str = "GPU"):
        got = commit_rates.gcp_commit_component(prices_gcp_sku(desc, group, usage, 1, 0))
        return None if got is None else (got[0], got[1].kind, got[1].name)

    assert parse("Commitment v1: A100 GPU in Americas for 1 Year", "Commit1Yr") == (1, "gpu", "A100-40GB")
    assert parse("Commitment v1: Nvidia L4 GPU in Americas for 3 Year", "Commit3Yr") == (3, "gpu", "L4")
    assert parse("Commitment v1: A3 Cpu in Americas for 3 Year", "Commit3Yr", "CPU") == (3, "core", "A3")
    assert parse("Commitment v1: A100 GPU in Americas for 1 Year", "Commit3Yr") is None  # term disagrees
    assert parse("Commitment v1: Quantum Flux GPU in Americas for 1 Year", "Commit1Yr") is None  # unknown GPU
    assert parse("A100 GPU running in Americas", "OnDemand") is None


# --------------------------------------------------------------------------- AWS Capacity Blocks


def test_capacity_block_offerings_described_paged_and_stored(aws_apis, duckdb_wh, wh_factory):
    aws_apis.blocks = [
        block("cbr-0a1b2c3d4e5f60001", "733.44", 3),  # 30.56 per instance-hour
        block("cbr-0a1b2c3d4e5f60002", "1320.00", 4, az="us-east-1b"),  # 55.00
        block("cbr-0a1b2c3d4e5f60003", "600.00", 5),  # 25.00, on the second page
        {**block("cbr-bad", "NaN", 6)},  # an unreadable fee: skipped
    ]
    settings = parse_prices(
        {"aws": {"placement_scores": False, "commitment_rates": False,
                 "capacity_blocks": {"instance_types": ["p5.48xlarge"], "instance_count": 1, "duration_hours": 24}}}
    )  # fmt: skip
    job = {"provider": "aws", "region": "us-east-1", "families": ["p5"], "lookback_days": 1}
    out = jobs.run_aws(
        job, settings, wh_factory, ec2=aws_apis.client("ec2"), pricing=aws_apis.client("pricing")
    )
    assert out["capacity_blocks"] == 3 and out["commitment_rates"] == 0
    asked = [b for name, b in aws_apis.calls if name == "DescribeCapacityBlockOfferings"]
    assert len(asked) == 2  # followed nextToken once
    assert (asked[0]["InstanceType"], asked[0]["InstanceCount"], asked[0]["CapacityDurationHours"]) == (
        "p5.48xlarge", "1", "24",
    )  # fmt: skip
    # describe only: the job never asked to purchase anything
    assert not any("Purchase" in name for name, _ in aws_apis.calls)
    rows = duckdb_wh.query(
        "SELECT offering_id, availability_zone, instance_count, duration_hours, upfront_fee, start_date "
        "FROM capacity_block_offerings ORDER BY offering_id"
    )
    assert [(o, az, n, h, D(f)) for o, az, n, h, f, _ in rows] == [
        ("cbr-0a1b2c3d4e5f60001", "us-east-1a", 1, 24, D("733.44")),
        ("cbr-0a1b2c3d4e5f60002", "us-east-1b", 1, 24, D("1320.00")),
        ("cbr-0a1b2c3d4e5f60003", "us-east-1a", 1, 24, D("600.00")),
    ]
    assert str(rows[0][5]).startswith("2026-12-03 11:30")
    aws_apis.blocks = aws_apis.blocks[:1]  # offerings come and go: the next run replaces them
    jobs.run_aws(job, settings, wh_factory, ec2=aws_apis.client("ec2"), pricing=aws_apis.client("pricing"))
    assert duckdb_wh.query("SELECT offering_id FROM capacity_block_offerings") == [("cbr-0a1b2c3d4e5f60001",)]


def test_capacity_block_settings_fail_naming_the_key():
    from finops.config import ConfigError

    with pytest.raises(ConfigError, match="prices.aws.capacity_blocks.duration_hours"):
        parse_prices({"aws": {"capacity_blocks": {"instance_types": ["p5.48xlarge"], "duration_hours": 5}}})
