"""Candidates from benchmark rows and prices, through finops.gpubench.pricing, into the planner."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from finops.gpubench.pricing import Price, measured_from_rows, offers_for
from finops.jobs.candidates import candidates_from_offers
from finops.jobs.planner import plan
from finops.jobs.spec import parse_job_spec
from tests.fixtures.jobs import job_spec_data

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def _bench_row(provider, region, instance_type, gpu_model, dtype, ms):
    """A `gpu_benchmarks` row as measured_from_rows reads it."""
    return {
        "provider": provider,
        "region": region,
        "instance_type": instance_type,
        "gpu_model": gpu_model,
        "gpu_count": 1,
        "metric": "train_step_time",
        "dtype": dtype,
        "value": ms,
        "measured_at": "2026-11-20",
    }


def test_benchmark_rows_and_prices_become_candidates_the_planner_ranks():
    rows = [
        _bench_row("aws", "us-east-1", "g5.xlarge", "A10G", dtype, ms)
        for dtype, ms in (("amp_bf16", 100.0), ("fp32", 250.0))
    ]
    prices = [
        Price("aws", "us-east-1", "g5.xlarge", "ondemand", 1.006),
        Price("aws", "us-east-1", "g5.xlarge", "spot", 0.3018),
    ]
    offers = offers_for(measured_from_rows(rows), prices, {("aws", "us-east-1", "g5.xlarge"): 0.1})
    cands = candidates_from_offers(offers, {"a10g": 24.0})
    by_model = {c.pricing_model: c for c in cands}
    assert by_model["ondemand"].price_per_hour == Decimal("1.006")
    assert by_model["spot"].price_per_hour == Decimal("0.3018")
    assert by_model["spot"].gpu_memory_gib == 24.0 and by_model["spot"].interruption_rate_per_h == 0.1
    assert by_model["ondemand"].interruption_rate_per_h == 0.0

    spec = parse_job_spec(job_spec_data(min_gpu_memory_gib=16))
    d = plan(spec, cands, NOW)
    # amp_bf16: 36,000 x 0.1 s = 1 h of compute; spot loses 0.1/h x (0.3 + 0.1) h = 4 % -> 1/0.96 h
    assert (d.candidate.pricing_model, d.precision) == ("spot", "amp_bf16")
    assert d.expected_cost == Decimal("0.3144")  # 0.3018 / 0.96 = 0.314375 -> 0.3144
    assert d.expected_finish == NOW + timedelta(hours=1 / 0.96)


def test_unknown_gpu_memory_stays_unknown():
    rows = [_bench_row("gcp", "us-central1", "g2-standard-4", "L4", "fp32", 80.0)]
    offers = offers_for(
        measured_from_rows(rows), [Price("gcp", "us-central1", "g2-standard-4", "ondemand", 0.7)]
    )
    (cand,) = candidates_from_offers(offers)
    assert cand.gpu_memory_gib is None and cand.step_ms == {"fp32": 80.0}


def test_candidates_from_the_warehouse_join_benchmarks_prices_and_memory(duckdb_wh, bench_doc):
    from finops.gpubench.store import store_result
    from finops.jobs.candidates import candidates_from_warehouse

    target = {"provider": "aws", "region": "us-east-1", "instance_type": "p5.48xlarge", "pricing_model": "ondemand",
              "gpu_count": 8}  # fmt: skip
    store_result(duckdb_wh, bench_run_id="b1", dag_run_id=None, target=target, doc=bench_doc)
    at = datetime(2026, 11, 20)
    cols = "provider, region, instance_type, price_per_hour, currency, observed_at, source, fetched_at"
    for table, itype, price, cur in (
        ("ondemand_prices", "p5.48xlarge", "98.32", "USD"),
        ("spot_prices", "p5.48xlarge", "41.0725", "USD"),
        ("ondemand_prices", "p5.48xlarge", "90.00", "EUR"),  # another currency: not a candidate
        ("ondemand_prices", "g5.xlarge", "1.006", "USD"),  # never benchmarked: not a candidate
    ):
        duckdb_wh.execute(
            f"INSERT INTO {table} ({cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            ["aws", "us-east-1" if cur == "USD" else "eu-west-1", itype, Decimal(price), cur, at, "t", at],
        )
    duckdb_wh.execute(
        "INSERT INTO instance_catalog (provider, instance_type, gpu_model, gpu_count, gpu_memory_gib, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        ["aws", "p5.48xlarge", "H100-80GB", 8, 80.0, at],
    )
    cands = sorted(candidates_from_warehouse(duckdb_wh), key=lambda c: c.pricing_model)
    assert [(c.pricing_model, c.price_per_hour) for c in cands] == [
        ("ondemand", Decimal("98.32")),
        ("spot", Decimal("41.0725")),
    ]
    assert all(c.gpu_count == 8 and c.gpu_memory_gib == 80.0 for c in cands)
    assert dict(cands[1].step_ms) == {"fp32": 400.0, "amp_bf16": 100.0}
    # a job whose 60 GiB model fits the H100 runs on the benchmarked place
    spec = parse_job_spec(job_spec_data(min_gpu_memory_gib=60))
    assert plan(spec, cands, NOW).candidate.instance_type == "p5.48xlarge"
