"""Which DAG starts after which, with real asset events and the scheduler's own evaluation of
the asset conditions (DagModel.dags_needing_dagruns), each due DAG then run with dag.test():

billing announces finops://focus_costs -> finops_showback and finops_anomalies are due (the
team monitors are not: they read the showback tables, which that same event is about to
rewrite); finops_showback announces finops://showback -> finops_anomalies_teams is due and
scores teams on the showback of this load. A failed showback announces nothing: the provider
alerts went out anyway, and no team is scored on a stale showback."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal as D
from pathlib import Path

import pytest

from tests.fixtures.anomaly_costs import DAYS, START, seed_costs
from tests.fixtures.focus_data import focus_row, insert_focus

REPO = Path(__file__).resolve().parents[2]
CHAIN = ("finops_showback", "finops_anomalies", "finops_anomalies_teams")
SPIKE_DAY = START + timedelta(days=DAYS - 1)


def _dag(dag_id: str):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / f"{dag_id}.py"))
    assert bag.import_errors == {}
    return bag.dags[dag_id]


@pytest.fixture
def scheduled_chain(airflow_db):
    """The dags folder serialized into the metadata DB (as the DAG processor does), the chain's
    DAGs unpaused (a paused DAG is never queued) and no asset events queued yet."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db
    from airflow.models.asset import AssetDagRunQueue
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session
    from sqlalchemy import delete, update

    manager = DagBundlesManager()
    manager.sync_bundles_to_db()
    for bundle in manager.get_all_dag_bundles():
        if not bundle.is_initialized:
            bundle.initialize()
        bag = BundleDagBag(dag_folder=bundle.path, bundle_path=bundle.path, bundle_name=bundle.name)
        sync_bag_to_db(bag, bundle.name, bundle.version)

    def pause(paused: bool) -> None:
        with create_session() as s:
            s.execute(update(DagModel).where(DagModel.dag_id.in_(CHAIN)).values(is_paused=paused))
            s.execute(delete(AssetDagRunQueue))

    pause(False)
    yield
    pause(True)


def _due() -> set[str]:
    """The asset-triggered DAGs the scheduler would start now."""
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    with create_session() as s:
        _, due = DagModel.dags_needing_dagruns(s)
        s.rollback()
    return set(due) & set(CHAIN)


def _start(dag_id: str, **task_args):
    """Start a due DAG as the scheduler does (its queued events are consumed), through dag.test();
    `task_args` override task attributes. Retries are off: dag.test() would sit out the retry
    delays (2 min and up) of a failing task until pytest's timeout instead of failing."""
    task_args.setdefault("retries", 0)
    from airflow.models.asset import AssetDagRunQueue
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    with create_session() as s:
        s.execute(delete(AssetDagRunQueue).where(AssetDagRunQueue.target_dag_id == dag_id))
    dag = _dag(dag_id)
    for task in dag.tasks:
        for k, v in task_args.items():
            setattr(task, k, v)
    return dag.test()


def _announce_billing_load() -> None:
    """What a billing DAG's publish_summary outlet records: an event on finops://focus_costs."""
    from airflow.assets.manager import AssetManager
    from airflow.models.asset import AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as s:
        asset = s.scalar(select(AssetModel).where(AssetModel.name == "finops://focus_costs"))
        AssetManager.register_asset_change(asset=asset, session=s)


def _events(dr) -> list[str]:
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session

    with create_session() as s:
        return [e.asset.uri for e in s.query(AssetEvent).filter(AssetEvent.source_run_id == dr.run_id)]


@pytest.fixture
def spiked_load(duckdb_wh, finops_home, alert_slack, alert_sinks, monkeypatch, tmp_path):
    """Steady history already allocated (the previous showback), then a billing load adding a
    team's spend spike on its last day (focus_costs + its load_log row, as a load writes them)."""
    from finops.allocation.rules import parse_rules
    from finops.allocation.store import run_showback
    from finops.warehouse.base import LoadLogEntry

    cfg = tmp_path / "finops.yaml"
    cfg.write_text(
        "alerts:\n  routes:\n"
        f"    - {{team: '*', slack_conn_id: {alert_slack.conn_id}}}\n"
        "anomaly:\n  lookback_days: 90\n  monitors: [{type: service}, {type: team}]\n"
    )
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    alert_slack.server.expect_request(alert_slack.path, method="POST").respond_with_data("ok")
    seed_costs(duckdb_wh, spike_day=-1)
    for period in ("2026-07", "2026-08", "2026-09", "2026-10"):
        run_showback(duckdb_wh, period, parse_rules({}))
    insert_focus(
        duckdb_wh,
        [
            focus_row(
                SPIKE_DAY.isoformat(),
                "2400.00",
                tags={"team": "ml"},
                x_usage_type="SpotUsage:p5.48xlarge",
                resource_id="i-spike",
            )
        ],
    )
    duckdb_wh.append_log(
        LoadLogEntry(
            load_id="spike", source="main-payer", provider="aws", billing_period="2026-10", status="loaded"
        )
    )
    duckdb_wh.close()  # the DAGs' tasks open the warehouse themselves
    return alert_slack


def _anomalies() -> dict[str, tuple[date, D, bool]]:
    from finops.paths import warehouse_path
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    with DuckDBWarehouse(warehouse_path()) as wh:
        return {
            t: (d, a, sent is not None)
            for t, d, a, sent in wh.query("SELECT monitor_type, peak_day, actual, alerted_at FROM anomalies")
        }


@pytest.mark.slow
def test_team_monitor_runs_after_showback_on_this_load(scheduled_chain, spiked_load):
    _announce_billing_load()
    assert _due() == {"finops_showback", "finops_anomalies"}

    # the provider-level monitors need no showback: they alert even if it has not run yet
    assert _start("finops_anomalies").state == "success"
    assert set(_anomalies()) == {"service"}
    assert _due() == {"finops_showback"}

    dr = _start("finops_showback")
    assert dr.state == "success" and _events(dr) == ["finops://showback/"]
    assert _due() == {"finops_anomalies_teams"}
    assert _start("finops_anomalies_teams").state == "success"
    found = _anomalies()
    peak, actual, alerted = found["team"]
    assert peak == SPIKE_DAY and actual > D(3000) and alerted  # the spike of this load, not the old showback
    assert found["service"][2]
    payloads = spiked_load.payloads()
    assert len(payloads) == 2 and "team ml" in str(payloads[1])
    assert _due() == set()


@pytest.mark.slow
def test_failed_showback_starts_no_team_monitor(scheduled_chain, spiked_load, tmp_path, monkeypatch):
    """Showback fails (its allocation rules are unreadable): finops://showback is not announced,
    so no team is scored on the previous showback; the provider alert still went out."""
    cfg = tmp_path / "finops.yaml"  # spiked_load's
    cfg.write_text(cfg.read_text() + "allocation:\n  rules_file: include/config/missing-rules.yaml\n")
    _announce_billing_load()
    assert _due() == {"finops_showback", "finops_anomalies"}
    dr = _start("finops_showback")
    assert dr.state == "failed" and _events(dr) == []
    assert _start("finops_anomalies").state == "success"
    posts = [p["text"] for p in spiked_load.payloads()]
    failed = [t for t in posts if t.startswith("[critical] Airflow task failed: finops_showback.allocate")]
    assert (
        set(_anomalies()) == {"service"} and len(failed) == 2 and len(posts) == 3
    )  # one per mapped allocate
    assert _due() == set()


def test_anomaly_dags_are_scheduled_on_the_table_their_monitors_read():
    """finops_anomalies on the billing asset, with no monitor reading the showback tables;
    finops_anomalies_teams on showback's own asset, with only those."""
    from finops.anomaly.settings import AnomalySettings, source_of

    for dag_id, uri in (
        ("finops_anomalies", "finops://focus_costs"),
        ("finops_anomalies_teams", "finops://showback"),
    ):
        dag = _dag(dag_id)
        assert [a.uri.rstrip("/") for a in dag.timetable.asset_condition.objects] == [uri]
        assert dag.params.get_param("send_alerts").value is True
        assert [t.task_id for t in dag.tasks] == ["detect"]
    assert {m.type: m.source for m in AnomalySettings().monitors} == {
        "provider": "focus_costs",
        "service": "focus_costs",
        "account": "focus_costs",
        "team": "showback",
    }
    assert source_of("tag:project") == "focus_costs"
    assert [o.uri.rstrip("/") for o in _dag("finops_showback").get_task("summary").outlets] == [
        "finops://showback"
    ]
