"""AWS Capacity Block offerings (stored by the price jobs, tests/prices/test_commit_rates.py)
priced against the latest on-demand price in the advice, the Commitments page and the report
rows. Hand-checked: p5.48xlarge at 50.00 $/h on demand; a 24-hour block of one instance for
733.44 is 30.56 per instance-hour and saves 24 x 50 - 733.44 = 466.56; one for 1,320.00 is
55.00 an hour and costs 120.00 more than on demand (the price of guaranteed capacity)."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal as D

import pytest

from finops.commitments.report import capacity_block_rows
from finops.commitments.settings import parse_settings
from finops.commitments.store import purchase_advice
from finops.prices import store as price_store
from finops.prices.capacity_blocks import CapacityBlockOffering
from finops.prices.commit_store import replace_capacity_blocks
from finops.prices.records import PriceRecord

SEEN = datetime(2026, 11, 20, 6)


def _offer(
    oid: str, fee: str, region: str = "us-east-1", itype: str = "p5.48xlarge"
) -> CapacityBlockOffering:
    return CapacityBlockOffering(
        region, oid, itype, region + "a", 1, datetime(2026, 12, 3, 11, 30), datetime(2026, 12, 4, 11, 30),
        24, D(fee), "USD", "default", SEEN,
    )  # fmt: skip


@pytest.fixture
def stored(duckdb_wh):
    price_store.append_prices(
        duckdb_wh,
        [
            PriceRecord(
                "aws", "ondemand", "us-east-1", "p5.48xlarge", D("50.00"), SEEN, "aws:pricing.get_products"
            )
        ],
        mode="changes",
    )
    replace_capacity_blocks(duckdb_wh, "us-east-1", [_offer("cbr-2", "1320.00"), _offer("cbr-1", "733.44")])
    replace_capacity_blocks(duckdb_wh, "us-west-2", [_offer("cbr-3", "600.00", region="us-west-2")])
    return duckdb_wh


def test_advice_prices_offerings_against_on_demand(stored):
    res = purchase_advice(stored, parse_settings({"providers": ["aws"]}), date(2026, 11, 21))
    got = [(r, b.offering_id, b.per_instance_hour, b.saving_vs_on_demand) for r, b in res.capacity_blocks]
    assert got == [
        ("us-east-1", "cbr-1", D("30.56"), D("466.56")),  # cheapest per instance-hour first
        ("us-east-1", "cbr-2", D("55"), D("-120.00")),
        ("us-west-2", "cbr-3", D("25"), None),  # no on-demand price stored for us-west-2
    ]
    assert not any("capacity blocks" in s for s in res.skipped)
    assert all("nothing is purchased" in b.disclaimer for _, b in res.capacity_blocks)


def test_report_rows_and_page(stored, ui_client, ui_headers):
    rows = capacity_block_rows(stored)
    assert [
        (r["offering_id"], r["upfront_fee"], r["on_demand_cost"], r["saving_vs_on_demand"]) for r in rows
    ] == [
        ("cbr-1", "733.44", "1200.00", "466.56"),
        ("cbr-2", "1320.00", "1200.00", "-120.00"),
        ("cbr-3", "600.00", None, None),
    ]
    page = ui_client.get("/api/commitments/capacity-blocks", headers=ui_headers).json()
    assert "nothing is purchased" in page["note"] and page["items"] == rows


def test_nothing_stored_says_how_to_turn_it_on(duckdb_wh, ui_client, ui_headers):
    res = purchase_advice(duckdb_wh, parse_settings({"providers": ["aws"]}), date(2026, 11, 21))
    assert res.capacity_blocks == [] and any("prices.aws.capacity_blocks" in s for s in res.skipped)
    assert capacity_block_rows(duckdb_wh) == []


def test_monthly_report_shows_the_offerings(stored):
    from finops.allocation.report import TeamReport

    r = TeamReport(
        "ml", "2026-11", "amortised", None, [], {}, [], [], [], capacity_blocks=capacity_block_rows(stored)
    )
    html = r.html(None)
    assert "AWS Capacity Blocks (described, never bought)" in html
    assert "<td>cbr-1</td>" not in html  # ids stay in the CSV / page; the report shows the offer
    assert "<td>30.5600</td>" in html and "<td>466.56</td>" in html and "<td>-120.00</td>" in html
    assert "Capacity Blocks" not in TeamReport("x", "2026-11", "amortised", None, [], {}, [], [], []).html(
        None
    )
