"""The inference-cost page's JSON endpoints (FastAPI TestClient, Airflow's real auth manager):
the serving cost matrix from stored benchmark runs x latest prices, the fleet advice, their
empty states and refusals."""

from __future__ import annotations

from datetime import datetime

import pytest

from finops.gpubench import store

TARGET = {
    "provider": "lambda",
    "region": "us-west-1",
    "instance_type": "gpu_1x_h100_sxm5",
    "pricing_model": "ondemand",
    "gpu_count": 1,
}


def _row(model, batch, rps, p99, tokens_out=None):
    return {
        "model": model,
        "dtype": "bf16",
        "batch": batch,
        "requests_per_s": rps,
        "output_tokens_per_s": rps * tokens_out if tokens_out else None,
        "tokens_in": 64 if tokens_out else None,
        "tokens_out": tokens_out,
        "p50_ms": p99 / 2,
        "p95_ms": p99,
        "p99_ms": p99,
        "samples": 50,
        "warmup": 3,
        "meets_p99": True,
    }


def _seed(wh, bench_doc):
    doc = dict(bench_doc, device=dict(bench_doc["device"], count=1))
    doc["serving"] = {
        "method": {},
        "p99_target_ms": {"resnet50": 100.0, "decoder": 2000.0},
        "models": {},
        "rows": [_row("resnet50", 32, 3000.0, 12.0), _row("decoder", 8, 40.0, 250.0, 100)],
        "best": [],
        "skipped": [],
    }
    store.store_result(wh, bench_run_id="s1", dag_run_id="r1", target=TARGET, doc=doc)
    for table, price in (("ondemand_prices", "3.60"), ("spot_prices", "1.80")):
        wh.execute(
            f"INSERT INTO {table} (provider, region, zone, instance_type, os, price_per_hour, currency, "
            "observed_at, source, fetched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                "lambda",
                "us-west-1",
                "",
                "gpu_1x_h100_sxm5",
                "linux",
                price,
                "USD",
                datetime(2026, 11, 20),
                "test",
                datetime(2026, 11, 20),
            ],
        )


def _get(client, path, headers, **params):
    r = client.get(path, headers=headers, params=params or None)
    assert r.status_code == 200, r.text
    return r.json()


def test_matrix_and_fleet(ui_client, ui_headers, duckdb_wh, bench_doc):
    assert ui_client.get("/api/inference/matrix").status_code == 401
    assert (
        _get(ui_client, "/api/inference/matrix", ui_headers)["empty"] is True
    )  # no serving rows: empty items
    _seed(duckdb_wh, bench_doc)
    body = _get(ui_client, "/api/inference/matrix", ui_headers)
    assert body["empty"] is False and body["currency"] == "USD"
    dec = [r for r in body["items"] if r["model"] == "decoder"]
    # spot $1.80/h, 4,000 tokens/s: 1.80 / 14.4M x 1M = $0.125 per 1M tokens; 40 req/s: $0.0125 per 1k
    assert [(r["pricing_model"], r["usd_per_1m_output_tokens"], r["usd_per_1k_requests"]) for r in dec] == [
        ("spot", "0.125000", "0.012500"),
        ("ondemand", "0.250000", "0.025000"),
    ]
    tight = _get(ui_client, "/api/inference/matrix", ui_headers, decoder_p99_ms=100)
    assert all(
        r["usd_per_1k_requests"] is None and "no batch size" in r["note"]
        for r in tight["items"]
        if r["model"] == "decoder"
    )
    assert _get(ui_client, "/api/inference/matrix", ui_headers, currency="EUR")["empty"] is True

    # 100 req/s peak 8 h, 20 off-peak 16 h, utilisation 0.8 -> 32 req/s per instance:
    # base ceil(20/32) = 1 on-demand all month (730 h x $3.60 = $2,628); peak 100 - 32 = 68 -> 3 spot
    # for 8 h x 365/12 days = 243.33 h x $1.80 x 3 = $1,314; total $3,942.00
    fleet = _get(
        ui_client,
        "/api/inference/fleet",
        ui_headers,
        model="decoder",
        peak_rps=100,
        peak_hours=8,
        offpeak_rps=20,
        offpeak_hours=16,
    )
    plan = fleet["plan"]
    assert (plan["base_count"], plan["burst_peak_count"], plan["burst_offpeak_count"]) == (1, 3, 0)
    assert (plan["base_cost"], plan["burst_cost"], plan["monthly_cost"]) == ("2628.00", "1314.00", "3942.00")
    assert fleet["traffic"]["hours_per_month"] == "730.00"
    no_spot = _get(
        ui_client,
        "/api/inference/fleet",
        ui_headers,
        model="decoder",
        peak_rps=100,
        peak_hours=8,
        offpeak_rps=20,
        offpeak_hours=16,
        allow_spot="false",
    )
    assert no_spot["plan"]["burst"] is None and no_spot["plan"]["base_count"] == 4
    missed = _get(
        ui_client,
        "/api/inference/fleet",
        ui_headers,
        model="decoder",
        peak_rps=100,
        peak_hours=8,
        offpeak_rps=20,
        offpeak_hours=16,
        p99_ms=10,
    )
    assert missed["empty"] is True and "no offer meets the P99 target" in missed["reason"]
    too_long = _get(
        ui_client,
        "/api/inference/fleet",
        ui_headers,
        peak_rps=1,
        peak_hours=20,
        offpeak_rps=1,
        offpeak_hours=10,
    )
    assert too_long["empty"] is True and "more than 24" in too_long["reason"]


@pytest.mark.parametrize(
    "params",
    [
        {"peak_rps": -1, "peak_hours": 8, "offpeak_rps": 1, "offpeak_hours": 8},
        {"peak_rps": 1, "peak_hours": 25, "offpeak_rps": 1, "offpeak_hours": 8},
        {"peak_rps": 1, "peak_hours": 8, "offpeak_rps": 1, "offpeak_hours": 8, "max_utilisation": 0},
        {"peak_rps": 1, "peak_hours": 8, "offpeak_rps": 1, "offpeak_hours": 8, "p99_ms": 0},
        {"peak_rps": 1, "peak_hours": 8, "offpeak_rps": 1, "offpeak_hours": 8, "model": "bert"},
        {"peak_rps": 1, "peak_hours": 8, "offpeak_rps": 1, "offpeak_hours": 8, "currency": "usd'"},
        {"peak_hours": 8, "offpeak_rps": 1, "offpeak_hours": 8},
    ],
)
def test_fleet_refuses_bad_parameters(ui_client, ui_headers, params):
    assert ui_client.get("/api/inference/fleet", headers=ui_headers, params=params).status_code == 422


def test_page_has_the_section(ui_client, ui_headers):
    html = ui_client.get("/", headers=ui_headers).text
    assert 'id="inference"' in html and "static/inference.js" in html
    assert ui_client.get("/static/inference.js", headers=ui_headers).status_code == 200
