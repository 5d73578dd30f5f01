"""gpu_benchmarks storage and the price join, on DuckDB and on PostgreSQL."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from finops.gpubench import report, store
from finops.gpubench.settings import BenchSettingsError, parse_settings

TARGET = {
    "provider": "aws",
    "region": "us-east-1",
    "instance_type": "p5.48xlarge",
    "pricing_model": "spot",
    "gpu_count": 8,
}


def _price(wh, table, price, observed):
    wh.execute(
        f"INSERT INTO {table} (provider, region, zone, instance_type, os, price_per_hour, currency, "
        "observed_at, source, fetched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ["aws", "us-east-1", "us-east-1a", "p5.48xlarge", "linux", price, "USD", observed, "test", observed],
    )


def test_store_replace_and_price_join(any_wh, bench_doc):
    n = store.store_result(any_wh, bench_run_id="b1", dag_run_id="run-1", target=TARGET, doc=bench_doc)
    assert n == len(bench_doc["results"])
    bench_doc["results"][0]["value"] = 700.0
    store.store_result(
        any_wh, bench_run_id="b1", dag_run_id="run-1", target=TARGET, doc=bench_doc
    )  # replaces
    assert any_wh.query("SELECT count(*) FROM gpu_benchmarks") == [(n,)]
    assert any_wh.query("SELECT count(*) FROM gpu_benchmark_runs") == [(1,)]
    # a newer run of the same instance type wins in the latest view
    newer = json.loads(json.dumps(bench_doc))
    newer["finished_at"] = "2026-11-23T06:04:10+00:00"
    newer["results"][0]["value"] = 750.0
    store.store_result(any_wh, bench_run_id="b2", dag_run_id="run-2", target=TARGET, doc=newer)
    latest = {(r["metric"], r["dtype"]): r["value"] for r in store.latest_rows(any_wh)}
    assert latest[("matmul_tflops", "bf16")] == 750.0 and len(latest) == n

    # no prices yet, no fallback -> nothing to join
    assert report.price_performance(any_wh) == []
    _price(any_wh, "ondemand_prices", "98.32", datetime(2026, 11, 20))
    _price(any_wh, "spot_prices", "40.00", datetime(2026, 11, 20))
    _price(any_wh, "spot_prices", "30.00", datetime(2026, 11, 21))  # newest spot price wins
    rows = {r["pricing_model"]: r for r in report.price_performance(any_wh)}
    assert rows["spot"]["price_per_hour"] == 30.0
    assert rows["spot"]["usd_per_tflop_hour"]["bf16"] == pytest.approx(30.0 / (750.0 * 8))
    assert rows["spot"]["usd_per_1k_steps"]["amp_bf16"] == pytest.approx(30.0 / 8 * 100 / 3600)
    assert rows["spot"]["spot_saving"] == pytest.approx(1 - 30 / 98.32)
    assert rows["ondemand"]["amp_saving"]["amp_bf16"] == pytest.approx(0.75)


def test_failed_runs_and_config_fallback_price(any_wh, bench_doc):
    store.store_result(any_wh, bench_run_id="ok1", dag_run_id="run-1", target=TARGET, doc=bench_doc)
    store.record_run(
        any_wh,
        bench_run_id="bad1",
        dag_run_id="run-1",
        target=TARGET,
        status="timeout",
        errors=["results never arrived"],
    )
    store.record_run(
        any_wh, bench_run_id="bad2", dag_run_id="run-0", target=TARGET, status="failed", errors=["x"]
    )
    failed = report.failed_runs(any_wh, "run-1")
    assert [(b, s) for b, s, _ in failed] == [("bad1", "timeout")]
    assert "never arrived" in failed[0][2]
    settings = parse_settings({"targets": [TARGET | {"image_id": "ami-1", "price_per_hour": 45.0}]})
    [row] = report.price_performance(any_wh, settings)
    assert (row["pricing_model"], row["price_per_hour"]) == ("spot", 45.0)


def test_settings_validation_names_the_key():
    with pytest.raises(BenchSettingsError, match=r"benchmarks\.targets\.0.*aws target needs image_id"):
        parse_settings(
            {"targets": [{"provider": "aws", "region": "us-east-1", "instance_type": "p5.48xlarge"}]}
        )
    with pytest.raises(BenchSettingsError, match="instance_type"):
        parse_settings(
            {
                "targets": [
                    {
                        "provider": "lambda",
                        "region": "us-west-1",
                        "ssh_key_name": "k",
                        "instance_type": "gpu; rm -rf /",
                    }
                ]
            }
        )
    with pytest.raises(BenchSettingsError, match="listed twice"):
        t = {
            "provider": "lambda",
            "region": "us-west-1",
            "instance_type": "gpu_1x_h100_sxm5",
            "ssh_key_name": "k",
        }
        parse_settings({"targets": [t, t]})
    assert parse_settings({}).dry_run is True


def test_quick_smoke_run_never_replaces_full_figures(any_wh, bench_doc):
    """A later quick run (one 4096^3 matmul, a 4-layer d512 model) replaced the full figures in the
    price join: $/1k steps then priced a 5x smaller model's step as the benchmark step."""
    store.store_result(any_wh, bench_run_id="full", dag_run_id="run-1", target=TARGET, doc=bench_doc)
    quick = json.loads(json.dumps(bench_doc))
    quick.update(profile="cuda-quick", quick=True, finished_at="2026-11-17T06:00:00+00:00")
    quick["results"] = [
        {"metric": "matmul_tflops", "dtype": "bf16", "value": 500.0, "unit": "TFLOPS", "section": "matmul"},
        {
            "metric": "train_step_time",
            "dtype": "amp_bf16",
            "value": 20.0,
            "unit": "ms",
            "section": "training",
        },
    ]
    assert store.store_result(any_wh, bench_run_id="quick", dag_run_id="run-2", target=TARGET, doc=quick) == 2
    assert any_wh.query("SELECT count(*) FROM gpu_benchmarks WHERE bench_run_id = 'quick'") == [(2,)]  # kept
    latest = {(r["metric"], r["dtype"]): r["value"] for r in store.latest_rows(any_wh)}
    assert latest[("matmul_tflops", "bf16")] == 760.0 and latest[("train_step_time", "amp_bf16")] == 100.0
    settings = parse_settings({"targets": [TARGET | {"image_id": "ami-1", "price_per_hour": 36.0}]})
    [row] = report.price_performance(any_wh, settings)
    assert row["usd_per_1k_steps"]["amp_bf16"] == pytest.approx(36.0 / 8 * 100 / 3600)
    # a newer full run still wins over the older full one
    newer = json.loads(json.dumps(bench_doc))
    newer["finished_at"] = "2026-11-23T06:04:10+00:00"
    newer["results"][0]["value"] = 750.0
    store.store_result(any_wh, bench_run_id="full2", dag_run_id="run-3", target=TARGET, doc=newer)
    latest = {(r["metric"], r["dtype"]): r["value"] for r in store.latest_rows(any_wh)}
    assert latest[("matmul_tflops", "bf16")] == 750.0


def test_the_latest_view_names_every_quick_profile():
    """Migration 301's view spells the smoke-test profiles as literals: they must be the bench's."""
    from finops.gpubench.profiles import CUDA_QUICK
    from finops.warehouse.migrations import m0301_gpu_benchmarks_latest_full as m0301

    assert m0301.QUICK_PROFILES == (CUDA_QUICK.name,)


def test_a_document_failing_half_way_stores_nothing(any_wh, bench_doc):
    """An error part-way through storing (here a later metric's value no float can hold) rolls
    the whole document back: the figures already stored stay, no partial run is left behind
    (latest_rows reads gpu_benchmarks whatever the run's status)."""
    store.store_result(any_wh, bench_run_id="b1", dag_run_id="run-1", target=TARGET, doc=bench_doc)
    before = (
        any_wh.query("SELECT * FROM gpu_benchmarks ORDER BY metric, dtype"),
        any_wh.query("SELECT * FROM gpu_benchmark_runs"),
        store.latest_rows(any_wh),
    )
    bad = json.loads(json.dumps(bench_doc))
    bad["finished_at"] = "2026-11-23T06:04:10+00:00"
    bad["results"][-1]["value"] = 10**400  # fails in Python, after the DELETE and the first metrics
    refused = json.loads(json.dumps(bad))
    refused["results"][-1]["value"] = 1.0
    refused["device"]["count"] = 2**40  # valid JSON Schema, refused by the INTEGER column
    for bid, doc, error in [
        ("b1", bad, OverflowError),
        ("b2", bad, OverflowError),
        ("b1", refused, Exception),
    ]:
        with pytest.raises(error):  # a retried collect of the same run, a newer run
            store.store_result(any_wh, bench_run_id=bid, dag_run_id="run-2", target=TARGET, doc=doc)
        assert (
            any_wh.query("SELECT * FROM gpu_benchmarks ORDER BY metric, dtype"),
            any_wh.query("SELECT * FROM gpu_benchmark_runs"),
            store.latest_rows(any_wh),
        ) == before
