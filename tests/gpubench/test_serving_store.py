"""Serving figures in the warehouse (migration 302): stored with the run, replaced with it,
the newest full-profile sweep wins, and the cost matrix joins them with the latest prices."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal

import pytest

from finops.gpubench import serving_store, store
from finops.gpubench.fleet import Traffic

TARGET = {
    "provider": "lambda",
    "region": "us-west-1",
    "instance_type": "gpu_1x_h100_sxm5",
    "pricing_model": "ondemand",
    "gpu_count": 1,
}


def _row(model, dtype, batch, rps, p99, tokens_out=None):
    return {
        "model": model,
        "dtype": dtype,
        "batch": batch,
        "requests_per_s": rps,
        "output_tokens_per_s": rps * tokens_out if tokens_out else None,
        "tokens_in": 512 if tokens_out else None,
        "tokens_out": tokens_out,
        "p50_ms": p99 / 2,
        "p95_ms": p99 * 0.9,
        "p99_ms": p99,
        "mean_ms": p99 / 2,
        "min_ms": 1.0,
        "max_ms": p99,
        "samples": 100,
        "warmup": 3,
        "truncated": False,
        "peak_memory_bytes": 2**30,
        "meets_p99": True,
    }


@pytest.fixture
def serving_doc(bench_doc):
    doc = json.loads(json.dumps(bench_doc))
    doc["device"]["count"] = 1
    doc["serving"] = {
        "method": {"percentiles": "nearest-rank"},
        "p99_target_ms": {"resnet50": 100.0, "decoder": 2000.0},
        "models": {"resnet50": {"params": 25_557_032}, "decoder": {"params": 170_000_000}},
        "rows": [
            _row("resnet50", "bf16", 1, 400.0, 3.0),
            _row("resnet50", "bf16", 32, 3000.0, 12.0),
            _row("resnet50", "bf16", 128, 3600.0, 120.0),  # over 100 ms: not the pick
            _row("decoder", "bf16", 8, 40.0, 250.0, tokens_out=128),
        ],
        "best": [],
        "skipped": [{"model": "decoder", "dtype": "fp8", "batch": None, "reason": "needs 8.9"}],
    }
    return doc


def _price(wh, table, it, price, region="us-west-1"):
    wh.execute(
        f"INSERT INTO {table} (provider, region, zone, instance_type, os, price_per_hour, currency, "
        "observed_at, source, fetched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            "lambda",
            region,
            "",
            it,
            "linux",
            price,
            "USD",
            datetime(2026, 11, 20),
            "test",
            datetime(2026, 11, 20),
        ],
    )


def test_serving_rows_stored_replaced_and_priced(any_wh, serving_doc):
    assert store.store_result(any_wh, bench_run_id="s1", dag_run_id="r1", target=TARGET, doc=serving_doc) == 6
    assert any_wh.query("SELECT count(*) FROM gpu_serving_benchmarks") == [(4,)]
    store.store_result(any_wh, bench_run_id="s1", dag_run_id="r1", target=TARGET, doc=serving_doc)  # replaces
    assert any_wh.query("SELECT count(*) FROM gpu_serving_benchmarks") == [(4,)]
    rows = serving_store.latest_rows(any_wh)
    assert [(r["model"], r["batch"]) for r in rows] == [
        ("decoder", 8),
        ("resnet50", 1),
        ("resnet50", 32),
        ("resnet50", 128),
    ]
    assert rows[0]["p99_target_ms"] == 2000.0 and rows[0]["tokens_out"] == 128

    _price(any_wh, "ondemand_prices", "gpu_1x_h100_sxm5", "3.60")
    _price(any_wh, "ondemand_prices", "gpu_1x_h100_sxm5", "4.50", region="us-east-1")
    _price(any_wh, "ondemand_prices", "gpu_1x_a10", "0.75")
    m = serving_store.matrix(any_wh)
    assert m["unmeasured"][0]["instance_type"] == "gpu_1x_a10" and m["unpriced"] == []
    cnn = [r for r in m["rows"] if r["model"] == "resnet50"]
    # best under 100 ms: batch 32 at 3000 req/s; $3.60 / (3600 x 3000) x 1000 = $0.000333..
    assert (cnn[0]["region"], cnn[0]["batch"], cnn[0]["usd_per_1k_requests"]) == (
        "us-west-1",
        32,
        Decimal("0.000333"),
    )
    assert cnn[1]["region"] == "us-east-1" and cnn[1]["usd_per_1k_requests"] == Decimal("0.000417")
    dec = next(r for r in m["rows"] if r["model"] == "decoder" and r["region"] == "us-west-1")
    # 40 req/s x 128 tokens = 5120 tokens/s: $3.60 / 18,432,000 x 1M = $0.195313 per 1M tokens
    assert dec["usd_per_1m_output_tokens"] == Decimal("0.195313")
    # a looser SLA picks the bigger batch; a tighter one none
    loose = serving_store.matrix(any_wh, {"resnet50": 150.0})
    assert next(r for r in loose["rows"] if r["model"] == "resnet50")["batch"] == 128
    tight = serving_store.matrix(any_wh, {"resnet50": 1.0})
    assert all(r["usd_per_1k_requests"] is None for r in tight["rows"] if r["model"] == "resnet50")
    # fleet over the stored matrix: 1,000 req/s peak 10 h, 200 off-peak 14 h, base carries 200
    plan = serving_store.advise(
        m["rows"], "resnet50", Traffic.of(1000, 10, 200, 14, days_per_month=30, max_utilisation=1)
    )
    assert (plan.base.region, plan.base_count, plan.burst) == ("us-west-1", 1, None)
    assert plan.monthly_cost == Decimal("2592.00")  # 1 x $3.60 x 720 h; 3000 req/s carries the peak alone


def test_newest_full_sweep_wins_and_small_profiles_never_do(any_wh, serving_doc):
    store.store_result(any_wh, bench_run_id="old", dag_run_id="r1", target=TARGET, doc=serving_doc)
    newer = json.loads(json.dumps(serving_doc))
    newer["finished_at"] = "2026-11-23T06:00:00+00:00"
    newer["serving"]["rows"] = [_row("resnet50", "bf16", 8, 2000.0, 8.0)]  # a shorter sweep
    store.store_result(any_wh, bench_run_id="new", dag_run_id="r2", target=TARGET, doc=newer)
    quick = json.loads(json.dumps(serving_doc))
    quick.update(profile="cuda-quick", quick=True, finished_at="2026-11-24T06:00:00+00:00")
    quick["serving"]["rows"] = [_row("resnet50", "bf16", 1, 99999.0, 1.0)]
    store.store_result(any_wh, bench_run_id="quick", dag_run_id="r3", target=TARGET, doc=quick)
    latest = {(r["model"], r["batch"]): r["requests_per_s"] for r in serving_store.latest_rows(any_wh)}
    # resnet50 bf16: only the newest full run's batch (no mix with the old sweep); decoder: the old run
    assert latest == {("resnet50", 8): 2000.0, ("decoder", 8): 40.0}


def test_migration_names_the_small_profiles():
    from finops.gpubench.profiles import CPU, CUDA_QUICK
    from finops.warehouse.migrations import m0302_gpu_serving_benchmarks as m0302

    assert set(m0302.SMALL_PROFILES) == {CUDA_QUICK.name, CPU.name}


def test_a_document_without_serving_clears_nothing_else(any_wh, serving_doc, bench_doc):
    store.store_result(any_wh, bench_run_id="s1", dag_run_id="r1", target=TARGET, doc=serving_doc)
    store.store_result(
        any_wh, bench_run_id="t1", dag_run_id="r2", target=TARGET, doc=bench_doc
    )  # training only
    assert any_wh.query("SELECT count(*) FROM gpu_serving_benchmarks") == [(4,)]
    store.store_result(
        any_wh, bench_run_id="s1", dag_run_id="r1", target=TARGET, doc=bench_doc
    )  # re-stored bare
    assert any_wh.query("SELECT count(*) FROM gpu_serving_benchmarks") == [(0,)]
