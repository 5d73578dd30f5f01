"""$ per 1,000 requests / per 1M output tokens (serving_cost.py) and fleet advice (fleet.py),
on hand-checked figures."""

from __future__ import annotations

from decimal import Decimal

import pytest

from finops.gpubench.fleet import (
    CapacityOffer,
    FleetError,
    SlaUnattainable,
    Traffic,
    capacity_offers,
    plan_fleet,
)
from finops.gpubench.serving_cost import (
    CostInputError,
    PriceOffer,
    ServingFigure,
    cost_matrix,
    figures_from_doc,
    offers_from_rows,
    unit_costs,
)

D = Decimal


def test_unit_costs_hand_checked():
    # $3.60/h, 10 req/s: 3.60 / 36,000 requests = $0.0001 each -> $0.10 per 1,000
    c = unit_costs(D("3.60"), 10.0, 1000.0)
    assert c.per_1k_requests == D("0.100000")
    assert c.per_1m_output_tokens == D("1.000000")  # 3.60 / 3.6M tokens per hour x 1M
    # 8 GPUs at $28.80/h, 10 req/s each: the same $0.10 per 1,000
    assert unit_costs(D("28.80"), 10.0, None, gpu_count=8) == unit_costs(D("3.60"), 10.0)
    # $1/h at 3 req/s: 1000 / 10,800 = 0.0925925... -> rounded half up to a millionth
    assert unit_costs(1, 3).per_1k_requests == D("0.092593")
    assert unit_costs("2.5", 0.1).per_1k_requests == D(
        "6.944444"
    )  # floats enter through their repr: 0.1 exact


@pytest.mark.parametrize(
    "args, match",
    [
        ((None, 10.0), "price per hour is missing"),
        ((D("-1"), 10.0), "price per hour must be >= 0"),
        ((D("1"), 0.0), "requests/s must be > 0"),
        ((D("1"), -5.0), "requests/s must be > 0"),
        ((D("1"), float("nan")), "finite"),
        ((D("1"), 5.0, 0.0), "output tokens/s must be > 0"),
        ((D("1"), None), "requests/s is missing"),
        (("abc", 1.0), "not a number"),
    ],
)
def test_unit_costs_refuse_bad_inputs(args, match):
    with pytest.raises(CostInputError, match=match):
        unit_costs(*args)
    with pytest.raises(CostInputError, match="gpu_count"):
        unit_costs(D("1"), 1.0, gpu_count=0)


def _fig(
    it="gpu_1x_h100", model="resnet50", dtype="fp16", rps=1000.0, tps=None, batch=32, gpus=1, prov="lambda"
):
    return ServingFigure(
        prov, it, "H100", gpus, model, dtype, 100.0, batch, rps, tps, 80.0 if batch else None
    )


def test_cost_matrix_every_priced_offer_and_what_is_missing():
    figs = [
        _fig(rps=1000.0),
        _fig(dtype="bf16", rps=800.0),
        _fig(model="decoder", dtype="bf16", rps=20.0, tps=2560.0, batch=32),
        _fig(model="decoder", dtype="fp8", rps=None, batch=None),  # nothing met the target
        _fig(it="gpu_8x_a100", gpus=8, rps=500.0),
    ]  # measured, never priced
    prices = offers_from_rows(
        [
            ("lambda", "us-west-1", "gpu_1x_h100", "ondemand", "2.49", "USD"),
            ("lambda", "us-east-1", "gpu_1x_h100", "ondemand", D("2.99"), "USD"),
            ("lambda", "us-west-1", "gpu_1x_a10", "ondemand", "0.75", "USD"),  # priced, never measured
        ]
    )
    m = cost_matrix(figs, prices)
    assert m["unpriced"] == [["lambda", "gpu_8x_a100"]]
    assert m["unmeasured"] == [
        {
            "provider": "lambda",
            "region": "us-west-1",
            "instance_type": "gpu_1x_a10",
            "pricing_model": "ondemand",
        }
    ]
    rows = m["rows"]
    assert len(rows) == 2 * 4  # two priced regions x four measured (model, dtype)
    cnn = [r for r in rows if r["model"] == "resnet50"]
    # cheapest first: $2.49 / (3600 x 1000) x 1000 = 0.000691666.. -> 0.000692
    assert (cnn[0]["region"], cnn[0]["dtype"], cnn[0]["usd_per_1k_requests"]) == (
        "us-west-1",
        "fp16",
        D("0.000692"),
    )
    dec = [r for r in rows if r["model"] == "decoder" and r["region"] == "us-west-1"]
    bf16 = next(r for r in dec if r["dtype"] == "bf16")
    # $2.49/h over 2560 tokens/s: 2.49 / 9,216,000 x 1M = 0.270182..
    assert bf16["usd_per_1m_output_tokens"] == D("0.270182") and bf16["usd_per_1k_requests"] == D("0.034583")
    fp8 = next(r for r in dec if r["dtype"] == "fp8")
    assert fp8["usd_per_1k_requests"] is None and "no batch size meets P99 <= 100 ms" in fp8["note"]
    assert rows.index(fp8) > rows.index(bf16)  # unmet SLAs sort last within the model


def test_cost_matrix_refuses_a_missing_price():
    with pytest.raises(CostInputError, match="price of lambda us-west-1 gpu_1x_h100 is missing"):
        cost_matrix([_fig()], [PriceOffer("lambda", "us-west-1", "gpu_1x_h100", "ondemand", None)])  # type: ignore[arg-type]


def test_figures_from_a_result_document():
    doc = {
        "finished_at": "2026-11-26T02:00:00+00:00",
        "device": {"name": "NVIDIA H100", "count": 8},
        "serving": {
            "best": [
                {
                    "model": "decoder",
                    "dtype": "bf16",
                    "p99_target_ms": 2000,
                    "batch": 64,
                    "requests_per_s": 50.0,
                    "output_tokens_per_s": 6400.0,
                    "p99_ms": 1500.0,
                }
            ]
        },
    }
    [f] = figures_from_doc(doc, "aws", "p5.48xlarge")
    assert (f.gpu_count, f.batch, f.requests_per_s, f.instance_type) == (8, 64, 50.0, "p5.48xlarge")
    assert figures_from_doc({"device": {}}, "aws", "x") == []  # a training-only document


# -- fleet -------------------------------------------------------------------------------------

OD = CapacityOffer("aws", "us-east-1", "g6.xlarge", "ondemand", D("4"), D("100"))
SPOT = CapacityOffer("aws", "us-east-1", "g6.xlarge", "spot", D("1.5"), D("100"))


def _traffic(**kw):
    base = {
        "peak_rps": 250,
        "peak_hours": 8,
        "offpeak_rps": 50,
        "offpeak_hours": 16,
        "days_per_month": 30,
        "max_utilisation": 1,
    }
    return Traffic.of(**(base | kw))


def test_fleet_base_for_offpeak_spot_for_the_peak_hand_checked():
    # guaranteed = off-peak 50 req/s -> 1 on-demand instance (100 req/s) always on: 1 x $4 x 720 h = $2,880
    # peak 250: 150 beyond the base -> 2 spot for 8 h x 30 d = 240 h: 2 x $1.50 x 240 = $720; total $3,600
    p = plan_fleet(_traffic(), [OD, SPOT])
    assert (p.base, p.base_count, p.burst, p.burst_peak_count, p.burst_offpeak_count) == (OD, 1, SPOT, 2, 0)
    assert (p.base_cost, p.burst_cost, p.monthly_cost) == (D("2880.00"), D("720.00"), D("3600.00"))
    # all on-demand: 3 instances always on = 3 x 4 x 720 = $8,640
    assert p.ondemand_only_cost == D("8640.00")
    assert p.as_dict()["monthly_cost"] == "3600.00"


def test_fleet_utilisation_headroom_and_guaranteed_floor():
    # at 80% utilisation a 100 req/s instance carries 80: base ceil(50/80) = 1, peak 250 - 80 = 170 -> 3 spot
    p = plan_fleet(_traffic(max_utilisation="0.8"), [OD, SPOT])
    assert (p.base_count, p.burst_peak_count, p.monthly_cost) == (1, 3, D("2880") + D("1080"))
    # guarantee the whole peak: 3 on-demand instances, no spot
    p = plan_fleet(_traffic(guaranteed_rps=250), [OD, SPOT])
    assert (p.base_count, p.burst, p.monthly_cost) == (3, None, D("8640.00"))
    # nothing guaranteed, spot allowed: spot alone, peak 3 x 240 h + off-peak 1 x 480 h at $1.50 = $1,800
    p = plan_fleet(_traffic(guaranteed_rps=0), [OD, SPOT])
    assert (p.base_count, p.burst_peak_count, p.burst_offpeak_count, p.monthly_cost) == (
        0,
        3,
        1,
        D("1800.00"),
    )


def test_fleet_spot_unavailable_means_on_demand_only():
    p = plan_fleet(_traffic(), [OD])
    assert (p.base_count, p.burst, p.monthly_cost) == (3, None, D("8640.00"))
    assert p.notes == ["spot unavailable: on-demand only"]
    p = plan_fleet(_traffic(), [OD, SPOT], allow_spot=False)
    assert p.monthly_cost == D("8640.00") and p.notes == ["spot not allowed: on-demand only"]
    # spot in another region is not a burst layer for this base (same_region by default)
    far = CapacityOffer("aws", "eu-west-1", "g6.xlarge", "spot", D("0.5"), D("100"))
    assert plan_fleet(_traffic(), [OD, far]).burst is None
    assert plan_fleet(_traffic(), [OD, far], same_region=False).burst == far


def test_fleet_zero_traffic_costs_nothing():
    p = plan_fleet(_traffic(peak_rps=0, offpeak_rps=0), [OD, SPOT])
    assert (p.base_count, p.burst, p.monthly_cost) == (0, None, D("0.00"))
    assert p.notes == ["no traffic: no instance needed"]


def test_fleet_sla_unattainable_and_other_refusals():
    slow = [
        CapacityOffer("aws", "us-east-1", "g4dn.xlarge", "ondemand", D("0.5"), None),
        CapacityOffer("aws", "us-east-1", "g4dn.xlarge", "spot", D("0.2"), None),
    ]
    with pytest.raises(SlaUnattainable, match="no offer meets the P99 target.*g4dn.xlarge"):
        plan_fleet(_traffic(), slow)
    with pytest.raises(SlaUnattainable, match="no priced, benchmarked offer"):
        plan_fleet(_traffic(), [])
    with pytest.raises(FleetError, match="no on-demand offer.*guaranteed"):
        plan_fleet(_traffic(), [SPOT])
    with pytest.raises(FleetError, match="more than 24"):
        _traffic(peak_hours=20, offpeak_hours=5)
    with pytest.raises(FleetError, match="peak_rps must be >= 0"):
        _traffic(peak_rps=-1)
    with pytest.raises(FleetError, match="max_utilisation"):
        _traffic(max_utilisation=0)


def test_capacity_offers_pick_the_fastest_precision_per_offer():
    rows = [
        {
            "provider": "aws",
            "region": "us-east-1",
            "instance_type": "g6.xlarge",
            "pricing_model": "spot",
            "model": "decoder",
            "dtype": d,
            "requests_per_s": rps,
            "price_per_hour": D("1.5"),
            "currency": "USD",
            "batch": 8,
        }
        for d, rps in (("bf16", 10.0), ("fp8", 14.0), ("int8", None))
    ]
    [o] = capacity_offers(rows, "decoder")
    assert (o.dtype, o.requests_per_s) == ("fp8", D("14.0"))
    [o] = capacity_offers(rows, "decoder", dtypes=["bf16", "int8"])
    assert (o.dtype, o.requests_per_s) == ("bf16", D("10.0"))
    [o] = capacity_offers(rows, "decoder", dtypes=["int8"])
    assert o.requests_per_s is None
    assert capacity_offers(rows, "resnet50") == []
