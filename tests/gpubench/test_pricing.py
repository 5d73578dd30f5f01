"""Cost per unit of work, on hand-checked numbers."""

from __future__ import annotations

import pytest

from finops.gpubench.pricing import (
    Job,
    Offer,
    Price,
    amp_saving,
    cheapest_place_to_run,
    expected_run,
    measured_from_rows,
    offers_for,
    price_performance,
    spot_saving,
    usd_per_1k_steps,
    usd_per_tflop_hour,
)


def test_unit_costs_by_hand():
    # p5.48xlarge-ish: $98.32/h, 8 GPUs at 760 bf16 TFLOPS each -> 98.32 / 6080 = 0.016171 $/TFLOP-h
    assert usd_per_tflop_hour(98.32, 760.0, 8) == pytest.approx(0.0161710526)
    # $8/h, 8 GPUs -> $1/GPU-h; 1000 steps x 0.1 s = 100 s = 1/36 h -> $0.027778
    assert usd_per_1k_steps(8.0, 100.0, 8) == pytest.approx(1 / 36)
    assert amp_saving(400.0, 100.0) == pytest.approx(0.75)
    assert spot_saving(1.5, 4.0) == pytest.approx(0.625)
    assert usd_per_tflop_hour(1.0, 0.0) is None and usd_per_1k_steps(1.0, 0.0) is None
    assert spot_saving(1.0, 0.0) is None


def test_expected_run_ondemand_and_spot_by_hand():
    job = Job(steps=36_000, precision="amp_bf16", checkpoint_interval_h=0.5, restart_overhead_h=0.1)
    ondemand = Offer("aws", "us-east-1", "g6e.xlarge", "ondemand", 4.0, 1, {"amp_bf16": 100.0})
    spot = Offer(
        "aws", "us-east-1", "g6e.xlarge", "spot", 1.5, 1, {"amp_bf16": 100.0}, interruption_rate_per_h=0.2
    )
    od = expected_run(job, ondemand)
    assert od.compute_hours == pytest.approx(1.0) and od.expected_cost == pytest.approx(4.0)
    assert od.expected_interruptions == 0
    # spot: each interruption loses 0.25 + 0.1 = 0.35 h; 0.2/h x 0.35 = 7 % of every wall hour
    sp = expected_run(job, spot)
    assert sp.expected_hours == pytest.approx(1 / 0.93)
    assert sp.expected_cost == pytest.approx(1.5 / 0.93)
    assert sp.expected_interruptions == pytest.approx(0.2 / 0.93)
    assert sp.overhead_fraction == pytest.approx(1 / 0.93 - 1)


def test_multi_gpu_efficiency_and_checkpoint_cost():
    job = Job(
        steps=36_000,
        precision="fp32",
        scaling_efficiency=0.9,
        checkpoint_interval_h=0.5,
        checkpoint_cost_h=0.05,
    )
    r = expected_run(job, Offer("gcp", "us-central1", "a2-highgpu-4g", "ondemand", 14.0, 4, {"fp32": 400.0}))
    # 36000 x 0.4 s = 4 GPU-h; / (4 x 0.9) = 1.1111 h; x (1 + 0.05/0.5) = 1.2222 h; x $14 = $17.111
    assert r.expected_hours == pytest.approx(4 / 3.6 * 1.1)
    assert r.expected_cost == pytest.approx(14 * 4 / 3.6 * 1.1)


def test_cheapest_place_ranks_and_explains():
    job = Job(
        steps=72_000,
        precision="amp_bf16",
        checkpoint_interval_h=1.0,
        restart_overhead_h=0.25,
        spot_interruption_rate_per_h=0.1,
    )
    offers = [
        Offer("aws", "us-east-1", "p5.48xlarge", "ondemand", 98.32, 8, {"amp_bf16": 30.0, "fp32": 120.0}),
        Offer(
            "aws", "us-east-1", "p5.48xlarge", "spot", 40.0, 8, {"amp_bf16": 30.0}
        ),  # job default rate 0.1/h
        Offer("lambda", "us-west-1", "gpu_1x_h100_sxm5", "ondemand", 3.29, 1, {"amp_bf16": 30.0}),
        Offer(
            "azure",
            "eastus",
            "Standard_NC24ads_A100_v4",
            "spot",
            1.0,
            1,
            {"amp_bf16": 75.0},
            interruption_rate_per_h=2.0,
        ),  # 2/h x 0.75 h lost each -> never finishes
        Offer("gcp", "us-central1", "g2-standard-4", "ondemand", 0.7, 1, {"fp32": 900.0}),  # no AMP figure
    ]
    ranked = cheapest_place_to_run(job, offers)
    # lambda: 72000 x 0.03 s = 0.6 h x 3.29 = 1.974; p5 spot: 0.075 h / (1 - 0.1 x 0.75) x 40 = 3.2432;
    # p5 on-demand: 0.075 h x 98.32 = 7.374
    assert [(r.offer.provider, r.offer.pricing_model) for r in ranked[:3]] == [
        ("lambda", "ondemand"),
        ("aws", "spot"),
        ("aws", "ondemand"),
    ]
    assert [round(r.expected_cost, 4) for r in ranked[:3]] == [1.974, round(0.075 / 0.925 * 40, 4), 7.374]
    assert not ranked[3].feasible and not ranked[4].feasible
    notes = {r.offer.provider: r.note for r in ranked[3:]}
    assert "never finishes" in notes["azure"] and "no measured step time for amp_bf16" in notes["gcp"]


def test_cheaper_spot_can_lose_to_ondemand_with_rare_checkpoints():
    base = dict(
        provider="aws",
        region="us-east-1",
        instance_type="p4d.24xlarge",
        gpu_count=8,
        step_ms={"amp_bf16": 60.0},
    )
    od = Offer(pricing_model="ondemand", price_per_hour=32.77, **base)
    sp = Offer(pricing_model="spot", price_per_hour=20.0, interruption_rate_per_h=0.5, **base)
    frequent = cheapest_place_to_run(
        Job(steps=480_000, checkpoint_interval_h=0.25, restart_overhead_h=0.1), [od, sp]
    )
    rare = cheapest_place_to_run(
        Job(steps=480_000, checkpoint_interval_h=2.0, restart_overhead_h=0.25), [od, sp]
    )
    assert frequent[0].offer.pricing_model == "spot"  # lost 0.5 x 0.225 = 11 %: spot still wins
    assert rare[0].offer.pricing_model == "ondemand"  # lost 0.5 x 1.25 = 62.5 %: 20/0.375 = 53 > 32.77


def test_join_benchmark_rows_with_prices():
    rows = [
        {
            "provider": "aws",
            "region": "us-east-1",
            "instance_type": "p5.48xlarge",
            "gpu_model": "H100",
            "gpu_count": 8,
            "metric": "matmul_tflops",
            "dtype": "bf16",
            "value": 760.0,
            "measured_at": "2026-11-16",
        },
        {
            "provider": "aws",
            "region": "us-east-1",
            "instance_type": "p5.48xlarge",
            "gpu_model": "H100",
            "gpu_count": 8,
            "metric": "train_step_time",
            "dtype": "fp32",
            "value": 400.0,
            "measured_at": "2026-11-16",
        },
        {
            "provider": "aws",
            "region": "us-east-1",
            "instance_type": "p5.48xlarge",
            "gpu_model": "H100",
            "gpu_count": 8,
            "metric": "train_step_time",
            "dtype": "amp_bf16",
            "value": 100.0,
            "measured_at": "2026-11-16",
        },
        {
            "provider": "aws",
            "region": "us-east-1",
            "instance_type": "p5.48xlarge",
            "gpu_model": "H100",
            "gpu_count": 8,
            "metric": "device_copy_bandwidth",
            "dtype": None,
            "value": 3000.0,
            "measured_at": "2026-11-16",
        },
    ]
    [m] = measured_from_rows(rows)
    assert m.tflops == {"bf16": 760.0} and m.step_ms == {"fp32": 400.0, "amp_bf16": 100.0}
    prices = [
        Price("aws", "us-east-1", "p5.48xlarge", "ondemand", 80.0),
        Price("aws", "us-east-1", "p5.48xlarge", "spot", 30.0),
        Price("aws", "us-west-2", "p5.48xlarge", "spot", 1.0),
    ]  # other region: no match
    pp = {r["pricing_model"]: r for r in price_performance([m], prices)}
    assert set(pp) == {"ondemand", "spot"}
    assert pp["ondemand"]["usd_per_tflop_hour"]["bf16"] == pytest.approx(80 / 6080)
    assert pp["ondemand"]["usd_per_1k_steps"]["amp_bf16"] == pytest.approx(10 * 100 / 3600)
    assert pp["ondemand"]["amp_saving"]["amp_bf16"] == pytest.approx(0.75)
    assert pp["spot"]["spot_saving"] == pytest.approx(0.625) and pp["ondemand"]["spot_saving"] is None
    offers = offers_for([m], prices, {("aws", "us-east-1", "p5.48xlarge"): 0.3})
    assert sorted((o.pricing_model, o.interruption_rate_per_h) for o in offers) == [
        ("ondemand", 0.0),
        ("spot", 0.3),
    ]


def test_spot_saving_needs_one_currency():
    """An on-demand price in EUR (prices.azure.currency: EUR) against a spot price in USD (the
    config fallback) gave spot_saving = 1 - 10 USD / 30 EUR, a ratio of two currencies."""
    [m] = measured_from_rows(
        [
            {
                "provider": "azure",
                "region": "westeurope",
                "instance_type": "ND96",
                "gpu_count": 8,
                "metric": "matmul_tflops",
                "dtype": "bf16",
                "value": 300.0,
                "measured_at": "x",
            }
        ]
    )
    prices = [
        Price("azure", "westeurope", "ND96", "ondemand", 30.0, "EUR"),
        Price("azure", "westeurope", "ND96", "spot", 10.0, "USD"),
    ]
    pp = {r["pricing_model"]: r for r in price_performance([m], prices)}
    assert pp["spot"]["spot_saving"] is None and pp["spot"]["currency"] == "USD"
    same = [prices[0], Price("azure", "westeurope", "ND96", "spot", 12.0, "EUR")]
    pp = {r["pricing_model"]: r for r in price_performance([m], same)}
    assert pp["spot"]["spot_saving"] == pytest.approx(0.6)
