"""The monthly showback report's inference section: the cheapest offers per model at the P99
target, from stored serving figures and the latest prices; absent while there are none."""

from __future__ import annotations

from datetime import datetime

from finops.allocation.report import build_reports, save_reports
from finops.allocation.rules import parse_rules
from finops.allocation.store import run_showback
from finops.gpubench import serving_store, store
from tests.fixtures.focus_data import focus_row, insert_focus

TARGET = {
    "provider": "lambda",
    "region": "us-west-1",
    "instance_type": "gpu_1x_h100_sxm5",
    "pricing_model": "ondemand",
    "gpu_count": 1,
}


def _serving(bench_doc):
    row = {
        "model": "resnet50",
        "dtype": "fp16",
        "batch": 64,
        "requests_per_s": 4000.0,
        "output_tokens_per_s": None,
        "p50_ms": 10.0,
        "p95_ms": 14.0,
        "p99_ms": 16.0,
        "samples": 100,
        "warmup": 3,
        "meets_p99": True,
    }
    doc = dict(bench_doc, device=dict(bench_doc["device"], count=1))
    doc["serving"] = {
        "method": {},
        "p99_target_ms": {"resnet50": 100.0},
        "models": {},
        "rows": [row],
        "best": [],
        "skipped": [],
    }
    return doc


def test_report_has_the_inference_section_once_figures_and_prices_exist(duckdb_wh, finops_home, bench_doc):
    wh = duckdb_wh
    insert_focus(wh, [focus_row("2026-10-01", "10", tags={"team": "ml"})])
    run_showback(wh, "2026-10", parse_rules({}))
    [plain] = build_reports(wh, "2026-10", "billed")
    assert plain.inference == [] and "Inference cost" not in plain.html(None)

    store.store_result(wh, bench_run_id="s1", dag_run_id="r1", target=TARGET, doc=_serving(bench_doc))
    wh.execute(
        "INSERT INTO ondemand_prices (provider, region, zone, instance_type, os, price_per_hour, currency, "
        "observed_at, source, fetched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            "lambda",
            "us-west-1",
            "",
            "gpu_1x_h100_sxm5",
            "linux",
            "2.88",
            "USD",
            datetime(2026, 11, 1),
            "t",
            datetime(2026, 11, 1),
        ],
    )
    [ml] = build_reports(wh, "2026-10", "billed")
    # $2.88/h over 4000 req/s: 2.88 / 14.4M x 1000 = $0.0002 per 1,000 requests
    assert ml.inference == [
        {
            "model": "resnet50",
            "dtype": "fp16",
            "batch": 64,
            "p99_target_ms": 100.0,
            "offer": "lambda us-west-1 gpu_1x_h100_sxm5 ondemand",
            "currency": "USD",
            "per_1k_requests": "0.000200",
            "per_1m_output_tokens": "",
        }
    ]
    save_reports([ml])
    html = ml.files["html"].read_text()
    assert "Inference cost at the P99 target" in html and "0.000200" in html
    # the section is informational: it never changes whether a month's report is re-sent
    assert ml.dedup_key() == plain.dedup_key()
    assert serving_store.report_rows(wh, per_model=0) == []
