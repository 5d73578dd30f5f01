"""Candidates from benchmark rows and prices, through finops.bench.pricing, into the planner."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from finops.bench.pricing import Price, measured_from_rows, offers_for
from finops.jobs.candidates import candidates_from_offers
from finops.jobs.planner import plan
from finops.jobs.spec import parse_job_spec

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def test_benchmark_rows_and_prices_become_candidates_the_planner_ranks():
    rows = [
        {
            "provider": "aws",
            "region": "us-east-1",
            "instance_type": "g5.xlarge",
            "gpu_model": "A10G",
            "gpu_count": 1,
            "metric": "train_step_time",
            "dtype": "amp_bf16",
            "value": 100.0,
            "measured_at": "2026-11-20",
        },
        {
            "provider": "aws",
            "region": "us-east-1",
            "instance_type": "g5.xlarge",
            "gpu_model": "A10G",
            "gpu_count": 1,
            "metric": "train_step_time",
            "dtype": "fp32",
            "value": 250.0,
            "measured_at": "2026-11-20",
        },
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

    spec = parse_job_spec(
        {
            "name": "j",
            "team": "t",
            "project": "p",
            "run": {"module": "train"},
            "steps": 36_000,
            "step_profile": {"benchmark": "cuda-full"},
            "precisions": ["fp32", "amp_bf16"],
            "min_gpu_memory_gib": 16,
            "checkpoint_uri": "/tmp/ck",
            "checkpoint_every_minutes": 36,
        }
    )
    d = plan(spec, cands, NOW)
    # amp_bf16: 36,000 x 0.1 s = 1 h of compute; spot loses 0.1/h x (0.3 + 0.1) h = 4 % -> 1/0.96 h
    assert (d.candidate.pricing_model, d.precision) == ("spot", "amp_bf16")
    assert d.expected_cost == Decimal("0.3144")  # 0.3018 / 0.96 = 0.314375 -> 0.3144
    assert d.expected_finish == NOW + timedelta(hours=1 / 0.96)


def test_unknown_gpu_memory_stays_unknown():
    offers = offers_for(
        measured_from_rows(
            [
                {
                    "provider": "gcp",
                    "region": "us-central1",
                    "instance_type": "g2-standard-4",
                    "gpu_model": "L4",
                    "gpu_count": 1,
                    "metric": "train_step_time",
                    "dtype": "fp32",
                    "value": 80.0,
                }
            ]
        ),
        [Price("gcp", "us-central1", "g2-standard-4", "ondemand", 0.7)],
    )
    (cand,) = candidates_from_offers(offers)
    assert cand.gpu_memory_gib is None and cand.step_ms == {"fp32": 80.0}
