"""Store de-duplication, the latest-price views and the one-call queries, on DuckDB and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from finops.prices import queries, store
from finops.prices.records import CatalogEntry, PriceRecord, utcnow


def _p(provider, model, region, itype, price, age_h, zone="", currency="USD"):
    return PriceRecord(
        provider=provider,
        pricing_model=model,
        region=region,
        instance_type=itype,
        price_per_hour=Decimal(price),
        observed_at=utcnow() - timedelta(hours=age_h),
        source="test",
        zone=zone,
        currency=currency,
    )


def _seed(wh):
    now_points = [
        # AWS spot history for p5 in two AZs over 40 days (points mode)
        *[
            _p("aws", "spot", "us-east-1", "p5.48xlarge", f"{30 + d / 10:.2f}", 24 * d, zone="us-east-1a")
            for d in range(40, -1, -5)
        ],
        _p("aws", "spot", "us-east-1", "p5.48xlarge", "29.00", 2, zone="us-east-1b"),
        _p("aws", "spot", "us-west-2", "p5.48xlarge", "25.50", 3, zone="us-west-2c"),
    ]
    assert store.append_prices(wh, now_points, "points")["spot_prices"] == len(now_points)
    snapshot = [
        _p("aws", "ondemand", "us-east-1", "p5.48xlarge", "55.04", 1),
        _p("aws", "ondemand", "us-west-2", "p5.48xlarge", "55.04", 1),
        _p("azure", "ondemand", "eastus", "Standard_ND96isr_H100_v5", "98.32", 1),
        _p("azure", "spot", "eastus", "Standard_ND96isr_H100_v5", "39.33", 1),
        _p("lambda", "ondemand", "global", "gpu_8x_h100_sxm5", "23.92", 1),
        _p("lambda", "ondemand", "global", "gpu_1x_h100_pcie", "2.49", 1),
        _p("gcp", "ondemand", "us-central1", "a3-highgpu-8g", "88.25", 1),
        _p("gcp", "spot", "us-central1", "a3-highgpu-8g", "29.10", 1),
        _p("azure", "ondemand", "westeurope", "Standard_ND96isr_H100_v5", "91.00", 1, currency="EUR"),
    ]
    store.append_prices(wh, snapshot, "changes")
    for provider, regions in {
        "aws": ["us-east-1", "us-west-2"],
        "azure": ["eastus", "westeurope"],
        "lambda": ["global"],
        "gcp": ["us-central1"],
    }.items():
        store.log_fetch(wh, provider, regions, "test", 1, 1)
    store.upsert_catalog(
        wh,
        [
            CatalogEntry("aws", "p5.48xlarge", "H100-80GB", 8, 80, 192, 2048, "NVLink"),
            CatalogEntry("azure", "Standard_ND96isr_H100_v5", "H100-80GB", 8, 80, 96, 1900, "NVLink"),
            CatalogEntry("lambda", "gpu_8x_h100_sxm5", "H100-80GB", 8, 80, 208, 1800, "NVLink (SXM)"),
            CatalogEntry("lambda", "gpu_1x_h100_pcie", "H100-80GB", 1, 80, 26, 200, "PCIe"),
            CatalogEntry("gcp", "a3-highgpu-8g", "H100-80GB", 8, 80, 208, 1872, None),
        ],
    )


def test_changes_mode_dedups_and_appends_only_changes(any_wh):
    wh = any_wh
    a = [_p("lambda", "ondemand", "global", "gpu_1x_a10", "0.75", 0)]
    assert store.append_prices(wh, a, "changes") == {"spot_prices": 0, "ondemand_prices": 1}
    assert store.append_prices(wh, a, "changes")["ondemand_prices"] == 0
    assert (
        store.append_prices(wh, [_p("lambda", "ondemand", "global", "gpu_1x_a10", "0.750000", 0)], "changes")[
            "ondemand_prices"
        ]
        == 0
    )  # same value, other spelling
    assert (
        store.append_prices(wh, [_p("lambda", "ondemand", "global", "gpu_1x_a10", "0.86", 0)], "changes")[
            "ondemand_prices"
        ]
        == 1
    )
    # back to the old price is a change too (a time series, not a set of values)
    assert (
        store.append_prices(wh, [_p("lambda", "ondemand", "global", "gpu_1x_a10", "0.75", 0)], "changes")[
            "ondemand_prices"
        ]
        == 1
    )
    assert wh.query("SELECT count(*) FROM ondemand_prices") == [(3,)]


def test_points_mode_is_idempotent(any_wh):
    pts = [_p("aws", "spot", "us-east-1", "g5.xlarge", "0.41", h, zone="us-east-1a") for h in range(5)]
    assert store.append_prices(any_wh, pts, "points")["spot_prices"] == 5
    assert store.append_prices(any_wh, pts + pts, "points")["spot_prices"] == 0


def test_catalog_upsert_replaces(any_wh):
    store.upsert_catalog(any_wh, [CatalogEntry("aws", "g5.xlarge", "A10G", 1, 24, 4, 16)])
    store.upsert_catalog(any_wh, [CatalogEntry("aws", "g5.xlarge", "A10G", 1, 22.4, 4, 16, "PCIe")])
    assert any_wh.query("SELECT gpu_memory_gib, interconnect FROM instance_catalog") == [(22.4, "PCIe")]


def test_watermark_moves_forward_only(any_wh):
    t = utcnow().replace(microsecond=0)
    assert store.get_watermark(any_wh, "aws", "us-east-1", "spot_history", "p5") is None
    store.set_watermark(any_wh, "aws", "us-east-1", "spot_history", "p5", t)
    store.set_watermark(any_wh, "aws", "us-east-1", "spot_history", "p5", t - timedelta(days=3))
    assert store.get_watermark(any_wh, "aws", "us-east-1", "spot_history", "p5") == t
    store.set_watermark(any_wh, "aws", "us-east-1", "spot_history", "p5", t + timedelta(hours=1))
    assert store.get_watermark(any_wh, "aws", "us-east-1", "spot_history", "p5") == t + timedelta(hours=1)
    assert any_wh.query("SELECT count(*) FROM price_watermarks") == [(1,)]


def test_latest_prices_view_takes_cheapest_zone(any_wh):
    _seed(any_wh)
    rows = any_wh.query(
        "SELECT zone, price_per_hour FROM latest_prices WHERE provider = 'aws' AND region = 'us-east-1' "
        "AND pricing_model = 'spot'"
    )
    assert rows == [("us-east-1b", Decimal("29.0000000000"))]
    zones = any_wh.query(
        "SELECT zone, price_per_hour FROM latest_zone_prices WHERE region = 'us-east-1' "
        "AND pricing_model = 'spot' ORDER BY zone"
    )
    assert zones == [("us-east-1a", Decimal("30.0000000000")), ("us-east-1b", Decimal("29.0000000000"))]


def test_spot_price_history(any_wh):
    _seed(any_wh)
    pts = queries.spot_price_history(any_wh, "aws", "p5.48xlarge", region="us-east-1", days=30)
    a = [p for p in pts if p.zone == "us-east-1a"]
    # points 0..25 days old are inside; the one seeded exactly 30 days ago (a moment before the window
    # opens) is the price in effect at the start; 35 and 40 days are left out
    assert [p.price_per_hour for p in a] == [
        Decimal(f"{30 + d / 10:.2f}") for d in (30, 25, 20, 15, 10, 5, 0)
    ]
    assert [p.observed_at for p in pts] == sorted(p.observed_at for p in pts)
    everywhere = queries.spot_price_history(any_wh, "aws", "p5.48xlarge", days=1)
    assert {p.region for p in everywhere} == {"us-east-1", "us-west-2"}
    assert queries.spot_price_history(any_wh, "aws", "p5.48xlarge'; --", days=30) == []


def test_cheapest_offers_across_clouds(any_wh):
    _seed(any_wh)
    offers = queries.cheapest_offers(any_wh, "nvidia-h100-80gb", gpu_count=8)
    got = [(o.provider, o.region, o.pricing_model, o.price_per_hour) for o in offers]
    assert got == [
        ("lambda", "global", "ondemand", Decimal("23.92")),
        ("aws", "us-west-2", "spot", Decimal("25.5")),
        ("aws", "us-east-1", "spot", Decimal("29")),
        ("gcp", "us-central1", "spot", Decimal("29.1")),
        ("azure", "eastus", "spot", Decimal("39.33")),
        ("aws", "us-east-1", "ondemand", Decimal("55.04")),
        ("aws", "us-west-2", "ondemand", Decimal("55.04")),
        ("gcp", "us-central1", "ondemand", Decimal("88.25")),
        ("azure", "eastus", "ondemand", Decimal("98.32")),
    ]  # the EUR row is not compared with USD ones
    assert offers[0].price_per_gpu_hour == Decimal("2.99")
    assert [o.provider for o in queries.cheapest_offers(any_wh, "H100", gpu_count=8, pricing=("ondemand",))][
        :1
    ] == ["lambda"]
    assert [o.instance_type for o in queries.cheapest_offers(any_wh, "H100", gpu_count=1)] == [
        "gpu_1x_h100_pcie"
    ]
    assert queries.cheapest_offers(any_wh, "H100", gpu_count=8, currency="EUR")[0].price_per_hour == Decimal(
        "91"
    )
    assert queries.cheapest_offers(any_wh, "Quantum Flux", gpu_count=8) == []


def test_cheapest_offers_drops_sources_not_fetched_recently(any_wh):
    _seed(any_wh)
    any_wh.execute(
        "UPDATE price_fetch_log SET fetched_at = ? WHERE provider = 'lambda'", [utcnow() - timedelta(days=30)]
    )
    offers = queries.cheapest_offers(any_wh, "H100", gpu_count=8)
    assert "lambda" not in {o.provider for o in offers}
    assert "lambda" in {
        o.provider for o in queries.cheapest_offers(any_wh, "H100", gpu_count=8, max_age_days=None)
    }


def test_spot_discount_by_region(any_wh):
    _seed(any_wh)
    rows = queries.spot_discount_by_region(any_wh)
    got = [(r.provider, r.region, r.discount.quantize(Decimal("0.0001"))) for r in rows]
    assert got == [
        ("gcp", "us-central1", Decimal("0.6703")),
        ("azure", "eastus", Decimal("0.6000")),
        ("aws", "us-west-2", Decimal("0.5367")),
        ("aws", "us-east-1", Decimal("0.4731")),
    ]  # biggest discount first
    assert [r.region for r in queries.spot_discount_by_region(any_wh, provider="aws")] == [
        "us-west-2",
        "us-east-1",
    ]
    assert (
        queries.spot_discount_by_region(any_wh, instance_type="gpu_8x_h100_sxm5") == []
    )  # Lambda: no spot tier


def test_spot_placement_risk_latest_per_zone(any_wh):
    from finops.prices.records import PlacementScore

    t = utcnow().replace(minute=0, second=0, microsecond=0)
    scores = [
        PlacementScore("aws", "us-east-1", "p5.48xlarge", s, t - timedelta(hours=h), zone_id=z)
        for z, s, h in (("use1-az1", 9, 6), ("use1-az1", 2, 0), ("use1-az2", 5, 0))
    ]
    scores.append(PlacementScore("aws", "us-west-2", "p5.48xlarge", 7, t, zone_id="usw2-az1"))
    assert store.append_placement_scores(any_wh, scores) == 4
    assert store.append_placement_scores(any_wh, scores) == 0
    risk = queries.spot_placement_risk(any_wh, "p5.48xlarge")
    assert [(r.zone_id, r.score) for r in risk] == [("use1-az1", 2), ("use1-az2", 5), ("usw2-az1", 7)]
    assert [r.zone_id for r in queries.spot_placement_risk(any_wh, "p5.48xlarge", region="us-west-2")] == [
        "usw2-az1"
    ]


# -- withdrawn prices (migration 101): presence per item, coverage per scope -----------------------


def _latest(wh, view="latest_prices"):
    rows = wh.query(f"SELECT provider, region, zone, instance_type, pricing_model FROM {view}")
    return {tuple(r) for r in rows}


def _listing(wh, provider, regions, models, scope, seen, at):
    """What a fetch of `provider` started at `at` listed (`seen`: PriceRecords) and covered."""
    cov = [
        store.Coverage(provider, r, m, type_match=k, type_pattern=v)
        for r in regions
        for m in models
        for k, v in scope
    ]
    store.record_listing(wh, provider, map(store.presence_key, seen), cov, at)


def test_a_price_the_covering_fetch_no_longer_lists_is_withdrawn(any_wh):
    wh = any_wh
    nd = _p("azure", "ondemand", "eastus", "Standard_ND96isr_H100_v5", "98.32", 48)
    nd_spot = _p("azure", "spot", "eastus", "Standard_ND96isr_H100_v5", "39.33", 48)
    nc = _p("azure", "ondemand", "eastus", "Standard_NC24ads_A100_v4", "3.673", 48)
    west = _p("azure", "ondemand", "westus2", "Standard_ND96isr_H100_v5", "99.00", 48)
    store.append_prices(wh, [nd, nd_spot, nc, west], "changes")
    everything = _latest(wh)
    assert len(everything) == 4
    _listing(
        wh, "azure", ["eastus"], ["spot", "ondemand"], [("prefix", "standard_n")], [nd, nd_spot, nc], utcnow()
    )
    assert _latest(wh) == everything  # listed again: an old observed_at is not stale
    # next fetch of eastus, ND prefix only (a Param-narrowed backfill): the on-demand ND row is gone
    _listing(wh, "azure", ["eastus"], ["spot", "ondemand"], [("prefix", "Standard_ND")], [nd_spot], utcnow())
    gone = ("azure", "eastus", "", "Standard_ND96isr_H100_v5", "ondemand")
    assert _latest(wh) == everything - {gone}
    assert _latest(wh, "latest_zone_prices") == everything - {gone}
    # NC (outside that fetch's scope), westus2 (another region) and the listed spot row stay; the
    # spot discount no longer compares with the withdrawn on-demand price
    assert queries.spot_discount_by_region(wh, max_age_days=None) == []
    # listed again later at the same price (changes mode stores nothing new): back, with its old row
    assert store.append_prices(wh, [nd], "changes")["ondemand_prices"] == 0
    _listing(wh, "azure", ["eastus"], ["ondemand"], [("prefix", "Standard_ND")], [nd], utcnow())
    assert _latest(wh) == everything


def test_withdrawn_zone_never_wins_the_cheapest_zone_and_scopes_match_exactly(any_wh):
    wh = any_wh
    a = _p("aws", "spot", "us-east-1", "p5.48xlarge", "30.00", 5, zone="us-east-1a")
    b = _p("aws", "spot", "us-east-1", "p5.48xlarge", "20.00", 5, zone="us-east-1b")
    p5e = _p("aws", "spot", "us-east-1", "p5e.48xlarge", "40.00", 5, zone="us-east-1a")
    g5 = _p("aws", "spot", "us-east-1", "g5.xlarge", "0.40", 5, zone="us-east-1a")
    store.append_prices(wh, [a, b, p5e, g5], "points")
    # 1b's market is gone; the p5 scope ("p5.") never covers p5e, the exact g5.xlarge scope covers g5
    _listing(wh, "aws", ["us-east-1"], ["spot"], [("prefix", "p5."), ("exact", "g5.xlarge")], [a], utcnow())
    rows = wh.query("SELECT instance_type, zone, price_per_hour FROM latest_prices ORDER BY instance_type")
    assert rows == [
        ("p5.48xlarge", "us-east-1a", Decimal("30.0000000000")),
        ("p5e.48xlarge", "us-east-1a", Decimal("40.0000000000")),
    ]


def test_listing_stamps_move_forward_only(any_wh):
    wh = any_wh
    x = _p("lambda", "ondemand", "global", "gpu_1x_a10", "0.75", 1)
    store.append_prices(wh, [x], "changes")
    t0 = utcnow()
    # the newer fetch (started t0 + 1 min, listing nothing) stores first; the older one (t0,
    # listing x) stores after it: x is still withdrawn, the older answer rewinds nothing
    _listing(wh, "lambda", ["global"], ["ondemand"], [("prefix", "")], [], t0 + timedelta(minutes=1))
    _listing(wh, "lambda", ["global"], ["ondemand"], [("prefix", "")], [x], t0)
    assert _latest(wh) == set()
    assert wh.query("SELECT covered_at FROM price_coverage") == [(t0 + timedelta(minutes=1),)]
    _listing(wh, "lambda", ["global"], ["ondemand"], [("prefix", "")], [x], t0 + timedelta(minutes=2))
    assert _latest(wh) == {("lambda", "global", "", "gpu_1x_a10", "ondemand")}
    assert wh.query("SELECT count(*) FROM price_presence") == [(1,)]


def test_withdrawn_offers_leave_cheapest_offers_and_spot_discounts(any_wh):
    _seed(any_wh)
    # GCP's next fetch of us-central1 lists the on-demand a3 but no longer the spot one
    seen = [_p("gcp", "ondemand", "us-central1", "a3-highgpu-8g", "88.25", 0)]
    _listing(any_wh, "gcp", ["us-central1"], ["spot", "ondemand"], [("prefix", "a3-")], seen, utcnow())
    offers = {(o.provider, o.pricing_model) for o in queries.cheapest_offers(any_wh, "H100", gpu_count=8)}
    assert ("gcp", "ondemand") in offers and ("gcp", "spot") not in offers
    assert "gcp" not in {d.provider for d in queries.spot_discount_by_region(any_wh)}


def test_spot_discount_by_region_drops_regions_not_fetched_recently(any_wh):
    _seed(any_wh)
    any_wh.execute(
        "UPDATE price_fetch_log SET fetched_at = ? WHERE provider = 'azure'", [utcnow() - timedelta(days=30)]
    )
    assert "azure" not in {d.provider for d in queries.spot_discount_by_region(any_wh)}
    assert "azure" in {d.provider for d in queries.spot_discount_by_region(any_wh, max_age_days=None)}


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def wh_before_101(request, tmp_path, monkeypatch):
    """A warehouse of each backend with every migration applied but 101 (a warehouse before this upgrade)."""
    import finops.warehouse.duckdb_wh as dmod
    import finops.warehouse.postgres_wh as pmod
    from finops.warehouse.migrations import all_migrations

    if request.param == "duckdb":
        wh = dmod.DuckDBWarehouse(tmp_path / "wh.duckdb")
    else:
        dsn, schema = request.getfixturevalue("pg_dsn"), request.getfixturevalue("pg_schema")
        wh = pmod.PostgresWarehouse.from_dsn(dsn, schema=schema)
    with monkeypatch.context() as m:
        for mod in (dmod, pmod):
            m.setattr(mod, "all_migrations", lambda: [x for x in all_migrations() if x.version != 101])
        wh.migrate()
    yield wh
    wh.close()


def test_upgrade_keeps_prices_stored_before_presence_existed(wh_before_101):
    from finops.warehouse.migrations import m0101_price_presence

    wh = wh_before_101
    old = [
        _p("lambda", "ondemand", "global", "gpu_1x_a10", "0.75", 24 * 60),  # stable for 60 days
        _p("lambda", "ondemand", "global", "gpu_8x_h100_sxm5", "23.92", 24 * 60),
    ]
    store.append_prices(wh, old, "changes")
    before = _latest(wh)
    assert wh.migrate() == [101]
    assert _latest(wh) == before  # no presence row yet: nothing disappears on upgrade
    for stmt in m0101_price_presence.statements(wh.dialect):  # re-running the migration is harmless
        wh.execute(stmt)
    assert _latest(wh) == before
    # the first covering fetch after the upgrade lists the H100 only: the A10 is withdrawn
    _listing(wh, "lambda", ["global"], ["ondemand"], [("prefix", "")], old[1:], utcnow())
    assert _latest(wh) == {("lambda", "global", "", "gpu_8x_h100_sxm5", "ondemand")}
