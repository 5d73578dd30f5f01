"""Lambda source against a local API server: retries, lifetimes in the warehouse, spine load."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from finops.config import LambdaSource
from finops.demo import lambda_generator as gen
from finops.ingest import load_batch
from finops.sources import lambda_cloud as lam

SRC = LambdaSource(name="lambda-main", conn_id="lambda_cloud_default", account_name="acme-lambda")


def _api(**kw):
    return lam.LambdaApi("lambda_cloud_default", sleep=kw.pop("sleep", lambda s: None), **kw)


def test_retries_429_and_5xx_then_succeeds(lam_api):
    sleeps: list[float] = []
    lam_api.fail_next(429, retry_after="7")
    lam_api.fail_next(503)
    lam_api.fail_next(500)
    data = _api(sleep=sleeps.append).instance_types()
    assert (
        "gpu_1x_a100_sxm4" in data
        and data["gpu_1x_a100_sxm4"]["instance_type"]["price_cents_per_hour"] == 129
    )
    assert sleeps == [7.0, 2.0, 4.0]  # Retry-After honoured, then exponential backoff
    assert len(lam_api.calls) == 4


def test_gives_up_after_max_attempts(lam_api):
    for _ in range(3):
        lam_api.fail_next(502)
    with pytest.raises(lam.LambdaApiError, match="HTTP 502 after 3"):
        _api(max_attempts=3).instances()


def test_bad_key_is_not_retried(lam_api, monkeypatch):
    import json

    conn = json.loads(__import__("os").environ["AIRFLOW_CONN_LAMBDA_CLOUD_DEFAULT"])
    conn["password"] = "wrong"
    monkeypatch.setenv("AIRFLOW_CONN_LAMBDA_CLOUD_DEFAULT", json.dumps(conn))
    with pytest.raises(lam.LambdaApiError, match="HTTP 401 after 1"):
        _api().instances()


def test_polls_into_lifetimes_then_loads_focus(lam_api, duckdb_wh):
    sample = gen.generate()
    api = _api()
    for t, resp in zip(sample.polls, sample.responses, strict=True):
        lam_api.instances = resp["data"]
        lam.poll_once(duckdb_wh, SRC, api, polled_at=t)
    assert duckdb_wh.query("SELECT count(*) FROM lambda_polls WHERE source = 'lambda-main'")[0][0] == len(
        sample.polls
    )
    rows = dict(
        duckdb_wh.query("SELECT name, ended_at FROM lambda_instance_lifetimes WHERE source = 'lambda-main'")
    )
    t0 = datetime(2026, 10, 1)
    assert rows == {
        "train-llm": t0 + timedelta(hours=10),
        "eval": t0 + timedelta(hours=13, minutes=30),
        "notebook": None,
    }

    intervals = lam.period_intervals(duckdb_wh, SRC, "2026-10")
    path, fp = lam.write_intervals(SRC, "2026-10", intervals)
    from finops.ingest import RawBatch

    batch = RawBatch(
        source="lambda-main",
        provider="lambda",
        billing_period="2026-10",
        files=[path],
        fingerprint=f"lifetimes:{fp}",
    )
    entry = load_batch(duckdb_wh, batch, lam.converter_for(SRC))
    assert entry.status == "loaded", entry.message
    expected = gen.expected_total(
        [(r["bill_start"], r["bill_end"], r["price_cents_per_hour"]) for r in intervals]
    )
    total = duckdb_wh.query("SELECT sum(billed_cost) FROM focus_costs WHERE x_source = 'lambda-main'")[0][0]
    assert total == expected == entry.raw_billed_total
    # H100: 02:30 -> 10:00 = 7.5 h x $23.92 ; A10: 01:30 -> 16:00 = 14.5 h x $0.75 ; A100: 11:30 -> 13:30 = 2 h x $1.29
    assert total == Decimal("179.40") + Decimal("10.875") + Decimal("2.58")
    assert load_batch(duckdb_wh, batch, lam.converter_for(SRC)).status == "unchanged"


def test_instance_reappearing_after_a_missed_listing_keeps_its_billed_hours(lam_api, any_wh, finops_home):
    # regression: the closed lifetime was not loaded, so the reappearance started a new one and the
    # upsert on (source, instance_id) replaced it: 6 billed H100 hours dropped to 0
    api, t0 = _api(), datetime(2026, 10, 1, tzinfo=UTC)
    h100 = gen.instance_json("i-h100", "train", "gpu_8x_h100_sxm5", "us-west-1", "active")
    for h in range(6):
        lam_api.instances = [h100]
        lam.poll_once(any_wh, SRC, api, polled_at=t0 + timedelta(hours=h))
    lam_api.instances = []  # one listing misses it
    lam.poll_once(any_wh, SRC, api, polled_at=t0 + timedelta(hours=6))
    [closed] = lam.period_intervals(any_wh, SRC, "2026-10")
    assert closed["bill_end"] - closed["bill_start"] == timedelta(hours=6)
    lam_api.instances = [h100]
    lam.poll_once(any_wh, SRC, api, polled_at=t0 + timedelta(hours=7))
    [again] = lam.period_intervals(any_wh, SRC, "2026-10")
    assert (again["bill_start"], again["bill_end"]) == (datetime(2026, 10, 1), datetime(2026, 10, 1, 7))


def test_terminated_instance_listed_again_stays_closed_in_the_warehouse(lam_api, duckdb_wh):
    api, t0 = _api(), datetime(2026, 10, 1, tzinfo=UTC)
    inst = gen.instance_json("i-a10", "nb", "gpu_1x_a10", "us-west-1", "active")
    lam_api.instances = [inst]
    lam.poll_once(duckdb_wh, SRC, api, polled_at=t0)
    lam_api.instances = [{**inst, "status": "terminated"}]
    lam.poll_once(duckdb_wh, SRC, api, polled_at=t0 + timedelta(minutes=30))
    lam_api.instances = [inst]  # a stale listing
    lam.poll_once(duckdb_wh, SRC, api, polled_at=t0 + timedelta(hours=2))
    [row] = lam.period_intervals(duckdb_wh, SRC, "2026-10")
    assert (row["bill_start"], row["bill_end"]) == (datetime(2026, 10, 1), datetime(2026, 10, 1, 0, 30))


def test_plan_batches_polls_and_extends(lam_api, duckdb_wh):
    now = datetime.now(UTC)
    lam_api.instances = [gen.instance_json("i-live", "nb", "gpu_1x_a10", "us-west-1", "active")]
    assert (
        lam.plan_batches(SRC, f"{now:%Y-%m}", api=_api(), wh=duckdb_wh) == []
    )  # first sighting: 0 minutes yet
    duckdb_wh.execute("UPDATE lambda_instance_lifetimes SET first_seen = first_seen - INTERVAL 90 MINUTE")
    [batch] = lam.plan_batches(SRC, f"{now:%Y-%m}", api=_api(), wh=duckdb_wh)
    assert batch.provider == "lambda" and batch.files[0].exists()


def test_dry_run_plan_polls_but_writes_nothing(lam_api, duckdb_wh):
    """The billing DAG's dry run promises 'write nothing to the warehouse': Lambda's planning poll
    must then only overlay the stored lifetimes, yet still show what the poll saw."""
    now = datetime.now(UTC)
    a10 = gen.instance_json("i-a10", "nb", "gpu_1x_a10", "us-west-1", "active")
    lam_api.instances = [a10]
    lam.poll_once(duckdb_wh, SRC, _api(), polled_at=now - timedelta(minutes=90))
    lam_api.instances = [a10, gen.instance_json("i-new", "x", "gpu_8x_h100_sxm5", "us-east-1", "active")]

    def state():
        return (
            duckdb_wh.query("SELECT * FROM lambda_instance_lifetimes ORDER BY instance_id"),
            duckdb_wh.query("SELECT count(*) FROM lambda_polls"),
        )

    before = state()
    [batch] = lam.plan_batches(SRC, f"{now:%Y-%m}", api=_api(), wh=duckdb_wh, record=False)
    assert state() == before
    import pyarrow.parquet as pq

    [dry] = pq.read_table(batch.files[0]).to_pylist()  # i-new: first sighting, nothing billable yet
    assert dry["instance_id"] == "i-a10"
    assert dry["bill_end"] > (now - timedelta(minutes=90)).replace(tzinfo=None)  # the poll's sighting counts
    [live] = lam.plan_batches(SRC, f"{now:%Y-%m}", api=_api(), wh=duckdb_wh)
    assert state() != before
    [rec] = pq.read_table(live.files[0]).to_pylist()
    assert (rec["instance_id"], rec["bill_start"]) == (dry["instance_id"], dry["bill_start"])
    assert rec["bill_end"] >= dry["bill_end"]


def test_a_poll_replayed_at_the_same_instant_is_recorded_once(lam_api, any_wh):
    """Re-running a replay (make demo twice in one FINOPS_HOME) polled at instants already
    recorded and died on lambda_polls' primary key; the lifetimes must come out the same."""
    t0 = datetime(2026, 10, 1, tzinfo=UTC)
    lam_api.instances = [gen.instance_json("i-a10", "nb", "gpu_1x_a10", "us-west-1", "active")]
    for _ in range(2):
        for h in range(3):
            lam.poll_once(any_wh, SRC, _api(), polled_at=t0 + timedelta(hours=h))
    assert any_wh.query("SELECT count(*) FROM lambda_polls") == [(3,)]
    [row] = lam.period_intervals(any_wh, SRC, "2026-10")
    assert (row["bill_start"], row["bill_end"]) == (datetime(2026, 10, 1), datetime(2026, 10, 1, 2))


def test_listing_without_prices_takes_them_from_instance_types(lam_api, duckdb_wh):
    """Lambda's API schema gives an instance's instance_type as name + description only: the price
    must come from /instance-types, not default to 0 (tests/data/lambda/SOURCES.md)."""
    import json
    from pathlib import Path

    body = json.loads(
        (
            Path(__file__).resolve().parents[1] / "data" / "lambda" / "instances_listing_without_prices.json"
        ).read_text()
    )
    assert all("price_cents_per_hour" not in i["instance_type"] for i in body["data"])
    catalog = _api().instance_types()
    api, t0 = _api(), datetime(2026, 10, 1, tzinfo=UTC)
    for h in range(3):
        lam_api.instances = body["data"]
        lam.poll_once(duckdb_wh, SRC, api, polled_at=t0 + timedelta(hours=h))
    [row] = lam.period_intervals(duckdb_wh, SRC, "2026-10")  # the booting one is not billed
    price = catalog["gpu_1x_a10"]["instance_type"]["price_cents_per_hour"]
    assert row["instance_id"] == "0920582c7ff041399e34823a0be62549"
    assert row["price_cents_per_hour"] == price > 0
    assert row["bill_end"] - row["bill_start"] == timedelta(hours=2)

    lam_api.instances = [{**body["data"][0], "id": "i-unknown", "instance_type": {"name": "gpu_9x_future"}}]
    with pytest.raises(lam.LambdaApiError, match="i-unknown: type 'gpu_9x_future'"):
        lam.poll_once(duckdb_wh, SRC, api, polled_at=t0 + timedelta(hours=3))
