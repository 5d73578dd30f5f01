"""finops_billing_aws end to end through Airflow's own dag.test(): CUR 2.0 deliveries in moto
server S3 -> FOCUS -> validated -> DuckDB or PostgreSQL. Totals reconcile to the cent with the
generator; a re-run changes nothing; a restated delivery replaces the period."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from tests.fixtures.aws_billing import AWSB_PREFIX, billing_aws_dag
from tests.fixtures.log_lines import log_lines


def _snapshot(wh) -> tuple:
    """Every row of focus_costs (sorted), plus per-partition totals: what 'changes nothing' means."""
    totals = wh.query(
        "SELECT x_billing_period, count(*), sum(billed_cost), sum(effective_cost) FROM focus_costs "
        "GROUP BY x_billing_period ORDER BY 1"
    )
    rows = wh.query_arrow("SELECT * FROM focus_costs").to_pylist()
    rows.sort(key=lambda r: tuple(str(v) for v in r.values()))
    return totals, rows


def _run(conf: dict) -> str:
    dr = billing_aws_dag().test(run_conf=conf)
    return str(dr.state)


def _check_loaded(wh, deliveries) -> None:
    got = {
        p: (n, b)
        for p, n, b, _e in wh.query(
            "SELECT x_billing_period, count(*), sum(billed_cost), sum(effective_cost) FROM focus_costs GROUP BY 1"
        )
    }
    for d in deliveries:
        n, billed = got[d.period]
        assert Decimal(billed).quantize(Decimal("0.01")) == d.totals.billed_total.quantize(Decimal("0.01"))
        assert n == d.totals.focus_rows  # raw lines + one Unused usage row per commitment fee line
    _check_rollups(wh)


def _check_rollups(wh) -> None:
    """The UI rollups are in step with every loaded partition, to the row and to the cent."""
    from finops.ui.rollup import stale_partitions

    assert stale_partitions(wh) == []
    sums = "count(*), sum(billed_cost), sum(effective_cost)"
    raw = wh.query(f"SELECT x_source, x_billing_period, {sums} FROM focus_costs GROUP BY 1, 2 ORDER BY 1, 2")
    rolled = wh.query(
        "SELECT x_source, x_billing_period, sum(row_count), sum(billed_cost), sum(effective_cost) "
        "FROM ui_cost_daily GROUP BY 1, 2 ORDER BY 1, 2"
    )
    assert [tuple(r) for r in rolled] == [tuple(r) for r in raw]


def _e2e(wh_factory, awsb_deliver):
    from finops.demo.cur_generator import GenSpec

    d9 = awsb_deliver(GenSpec(period="2026-09", rows=1500, seed=1), prefix=AWSB_PREFIX)
    d10 = awsb_deliver(GenSpec(period="2026-10", rows=1500, seed=2), prefix=AWSB_PREFIX)
    assert _run({"billing_period": "2026-09,2026-10", "source": "all"}) == "success"
    wh = wh_factory()
    _check_loaded(wh, [d9, d10])
    first = _snapshot(wh)
    wh.close()

    # Idempotent: the same deliveries again change nothing, row for row.
    assert _run({"billing_period": "2026-09,2026-10"}) == "success"
    wh = wh_factory()
    assert _snapshot(wh) == first
    wh.close()

    # Restatement: a newer delivery for 2026-10 replaces it; 2026-09 stays as it was.
    r10 = awsb_deliver(GenSpec(period="2026-10", rows=1200, seed=2, restatement=1), prefix=AWSB_PREFIX)
    assert _run({"billing_period": "2026-10", "source": "main-payer"}) == "success"
    wh = wh_factory()
    _check_loaded(wh, [d9, r10])
    assert wh.query(
        "SELECT count(DISTINCT x_load_id) FROM focus_costs WHERE x_billing_period = '2026-10'"
    ) == [(1,)]
    statuses = [
        s
        for (s,) in wh.query(
            "SELECT status FROM load_log WHERE billing_period = '2026-10' ORDER BY finished_at"
        )
    ]
    assert statuses[0] == "loaded" and statuses[-1] == "loaded" and len(statuses) >= 3
    wh.close()


def test_billing_aws_into_duckdb(airflow_db, finops_home, billing_config, awsb_deliver):
    billing_config()

    def open_wh():
        from finops.paths import warehouse_path
        from finops.warehouse.duckdb_wh import DuckDBWarehouse

        return DuckDBWarehouse(warehouse_path())

    _e2e(open_wh, awsb_deliver)


@pytest.mark.postgres
def test_billing_aws_into_postgres(airflow_db, finops_home, billing_config, awsb_deliver, pg_conn_id):
    billing_config({"conn_id": pg_conn_id.conn_id, "schema": pg_conn_id.schema})

    def open_wh():
        from finops.warehouse.postgres_wh import PostgresWarehouse

        return PostgresWarehouse.from_dsn(pg_conn_id.dsn, schema=pg_conn_id.schema)

    _e2e(open_wh, awsb_deliver)
    # The embedded DuckDB was never used when a warehouse connection is configured.
    from finops.paths import warehouse_path

    assert not warehouse_path().exists()


def test_unknown_source_fails_the_plan(airflow_db, finops_home, billing_config, awsb_bucket):
    billing_config()
    assert _run({"billing_period": "2026-10", "source": "nope"}) == "failed"


def test_dry_run_writes_nothing(airflow_db, finops_home, billing_config, awsb_deliver):
    from finops.demo.cur_generator import GenSpec

    billing_config()
    awsb_deliver(GenSpec(period="2026-10", rows=500, seed=3), prefix=AWSB_PREFIX)
    assert _run({"billing_period": "2026-10", "dry_run": True}) == "success"
    from finops.paths import warehouse_path
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    wh = DuckDBWarehouse(warehouse_path())
    wh.migrate()
    assert wh.query("SELECT count(*) FROM focus_costs") == [(0,)]
    wh.close()


def test_load_partition_rebuilds_its_own_rollups(finops_home, billing_config, awsb_deliver):
    """The mapped load refreshes its partition's UI rollups itself (in parallel with the other
    loads, not later in publish_summary); a refresh that fails never fails the load."""
    from finops.demo.cur_generator import GenSpec
    from finops.orchestration.billing import load_partition
    from finops.paths import warehouse_path
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    billing_config()
    awsb_deliver(GenSpec(period="2026-09", rows=600, seed=4), prefix=AWSB_PREFIX)
    item = {"provider": "aws", "source": "main-payer", "billing_period": "2026-09"}
    assert load_partition(item)["status"] == "loaded"
    with DuckDBWarehouse(warehouse_path()) as wh:
        _check_rollups(wh)
        wh.execute("DROP TABLE ui_cost_daily")  # the next refresh cannot run

    awsb_deliver(GenSpec(period="2026-09", rows=500, seed=4, restatement=1), prefix=AWSB_PREFIX)
    with log_lines("finops.orchestration.billing", logging.ERROR) as errors:
        assert load_partition(item)["status"] == "loaded"
    assert errors == ["main-payer 2026-09: UI rollup refresh failed; publish_summary will retry it"]
    with DuckDBWarehouse(warehouse_path()) as wh:
        assert wh.query("SELECT count(*) FROM focus_costs") == [
            (
                wh.query(
                    "SELECT row_count FROM load_log WHERE status = 'loaded' ORDER BY finished_at DESC LIMIT 1"
                )[0][0],
            )
        ]


@pytest.mark.postgres
def test_load_partition_on_postgres_sums_rollups_from_its_staging_file(
    finops_home, billing_config, awsb_deliver, pg_conn_id
):
    """On PostgreSQL the load's own staging parquet feeds the rollups (DuckDB sums it) instead
    of a second read of the partition from the warehouse; the result equals focus_costs."""
    from finops.demo.cur_generator import GenSpec
    from finops.orchestration.billing import load_partition
    from finops.warehouse.postgres_wh import PostgresWarehouse

    billing_config({"conn_id": pg_conn_id.conn_id, "schema": pg_conn_id.schema})
    awsb_deliver(GenSpec(period="2026-09", rows=600, seed=5), prefix=AWSB_PREFIX)
    with log_lines("finops.orchestration.billing") as lines:
        result = load_partition({"provider": "aws", "source": "main-payer", "billing_period": "2026-09"})
    assert result["status"] == "loaded"
    assert any(
        line.startswith("main-payer 2026-09: UI rollups rebuilt from the staging files") for line in lines
    ), lines
    wh = PostgresWarehouse.from_dsn(pg_conn_id.dsn, schema=pg_conn_id.schema)
    try:
        _check_rollups(wh)
        assert not list((finops_home / "staging").rglob("*.parquet"))  # removed after the rollups
    finally:
        wh.close()


def _focus_costs_events(dr) -> list[str]:
    """The asset events this run emitted (what triggers finops_showback / finops_anomalies)."""
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session

    with create_session() as s:
        return [e.asset.uri for e in s.query(AssetEvent).filter(AssetEvent.source_run_id == dr.run_id)]


def _truncate_first_file(awsb_bucket, delivery, n: int) -> None:
    """Replace the delivery's first data file in S3 by its first half (an unreadable parquet)."""
    data = (awsb_bucket.workdir / f"d{n}" / delivery.data_keys[0]).read_bytes()
    awsb_bucket.put(f"{AWSB_PREFIX}/{delivery.data_keys[0]}", data[: len(data) // 2])


def test_refused_delivery_is_recorded_and_alerted_and_the_month_kept(
    finops_home, billing_config, awsb_deliver, awsb_bucket, alert_sinks
):
    """A restatement whose manifest lists a file that is not in S3 is refused before conversion:
    before, the task failed with no load_log row and no alert, so the month's history did not
    show why it had not changed. The month already loaded stays."""
    from finops.alerts.events import register_sink
    from finops.demo.cur_generator import GenSpec
    from finops.orchestration.billing import load_partition
    from finops.paths import warehouse_path
    from finops.sources.aws_cur import ManifestError
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    billing_config()
    item = {"provider": "aws", "source": "main-payer", "billing_period": "2026-09"}
    first = awsb_deliver(GenSpec(period="2026-09", rows=300, seed=1), prefix=AWSB_PREFIX)
    assert load_partition(item)["status"] == "loaded"
    broken = awsb_deliver(GenSpec(period="2026-09", rows=280, seed=1, restatement=1), prefix=AWSB_PREFIX)
    awsb_bucket.client.delete_object(Bucket=awsb_bucket.name, Key=f"{AWSB_PREFIX}/{broken.data_keys[0]}")
    alerts: list = []
    register_sink(alerts.append)
    with pytest.raises(ManifestError, match="missing"):
        load_partition(item, run_id="manual__refused")
    with DuckDBWarehouse(warehouse_path()) as wh:
        [(status, message, run_id)] = wh.query(
            "SELECT status, message, run_id FROM load_log WHERE status <> 'loaded'"
        )
        total = wh.query("SELECT sum(billed_cost) FROM focus_costs")[0][0]
    assert status == "failed" and message.startswith(
        "delivery refused: manifest lists 1 data file(s) missing"
    )
    assert run_id == "manual__refused"
    assert Decimal(total).quantize(Decimal("0.01")) == first.totals.billed_total.quantize(Decimal("0.01"))
    assert [a.kind for a in alerts] == ["delivery_refused"] and alerts[0].facts["billing_period"] == "2026-09"
    with pytest.raises(ManifestError):  # a dry run records nothing
        load_partition(item, dry_run=True)
    with DuckDBWarehouse(warehouse_path()) as wh:
        assert wh.query("SELECT count(*) FROM load_log WHERE status = 'failed'") == [(1,)]


def test_dry_run_announces_nothing(airflow_db, finops_home, billing_config, awsb_deliver):
    """A dry run wrote nothing: it must not emit finops://focus_costs (that starts showback and
    an alerting finops_anomalies run). Before, publish_summary emitted it on every success."""
    from finops.demo.cur_generator import GenSpec

    billing_config()
    awsb_deliver(GenSpec(period="2026-10", rows=300, seed=3), prefix=AWSB_PREFIX)
    dr = billing_aws_dag().test(run_conf={"billing_period": "2026-10", "dry_run": True})
    assert str(dr.state) == "success"
    assert _focus_costs_events(dr) == []
    dr = billing_aws_dag().test(run_conf={"billing_period": "2026-10"})  # the real load still announces
    assert str(dr.state) == "success" and _focus_costs_events(dr) == ["finops://focus_costs/"]


def test_dry_run_of_a_bad_delivery_fails(airflow_db, finops_home, billing_config, awsb_deliver, awsb_bucket):
    """The ad-hoc audit of a delivery that a real run would quarantine fails, naming why; before,
    it was a green run whose only trace was `valid: False` in one mapped task's XCom."""
    from finops.demo.cur_generator import GenSpec

    billing_config()
    bad = awsb_deliver(GenSpec(period="2026-10", rows=300, seed=3), prefix=AWSB_PREFIX)
    _truncate_first_file(awsb_bucket, bad, 1)
    dr = billing_aws_dag().test(run_conf={"billing_period": "2026-10", "dry_run": True})
    assert str(dr.state) == "failed"
    states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}
    assert states["load_partition"] == "failed" and states["check_loads"] == "failed"
    assert _focus_costs_events(dr) == []


def test_partitions_that_loaded_are_announced_when_another_fails(
    airflow_db, finops_home, billing_config, awsb_deliver, awsb_bucket
):
    """One quarantined month fails the run but must not hide the month that did load from
    showback / anomalies: before, publish_summary was upstream_failed and no asset event came,
    on every run for as long as the bad month stayed bad."""
    from finops.demo.cur_generator import GenSpec

    billing_config()
    good = awsb_deliver(GenSpec(period="2026-09", rows=300, seed=1), prefix=AWSB_PREFIX)
    bad = awsb_deliver(GenSpec(period="2026-10", rows=300, seed=3), prefix=AWSB_PREFIX)
    _truncate_first_file(awsb_bucket, bad, 2)
    dr = billing_aws_dag().test(run_conf={"billing_period": "2026-09,2026-10"})
    assert str(dr.state) == "failed"
    assert _focus_costs_events(dr) == ["finops://focus_costs/"]
    states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances() if ti.task_id != "load_partition"}
    assert states == {"plan_loads": "success", "publish_summary": "success", "check_loads": "failed"}

    from finops.paths import warehouse_path
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    with DuckDBWarehouse(warehouse_path()) as wh:
        got = wh.query("SELECT x_billing_period, sum(billed_cost) FROM focus_costs GROUP BY 1")
        assert [(p, Decimal(b).quantize(Decimal("0.01"))) for p, b in got] == [
            ("2026-09", good.totals.billed_total.quantize(Decimal("0.01")))
        ]
