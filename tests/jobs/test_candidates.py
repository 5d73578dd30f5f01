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
