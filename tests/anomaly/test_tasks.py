"""The finops_anomalies task body with a real finops.yaml (routes + anomaly section)."""

from __future__ import annotations

import json

from tests.fixtures.anomaly_costs import seed_costs


def _setup(duckdb_wh, alert_slack, monkeypatch, tmp_path) -> None:
    """A finops.yaml routing every alert to the Slack test endpoint, one seeded anomaly, the
    warehouse closed (the task opens it itself)."""
    cfg = tmp_path / "finops.yaml"
    cfg.write_text(
        "alerts:\n"
        "  routes:\n"
        f"    - {{team: '*', slack_conn_id: {alert_slack.conn_id}}}\n"
        "anomaly:\n"
        "  lookback_days: 90\n"
        "  monitors: [{type: service, abs_floor: 100, pct: 0.5}]\n"
    )
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    seed_costs(duckdb_wh)
    duckdb_wh.close()
    alert_slack.server.expect_request(alert_slack.path, method="POST").respond_with_data("ok")


def test_task_reads_config_routes_and_alerts_once(
    duckdb_wh, finops_home, alert_slack, alert_sinks, monkeypatch, tmp_path
):
    from finops.allocation.tasks import run_anomalies_task

    _setup(duckdb_wh, alert_slack, monkeypatch, tmp_path)
    first = run_anomalies_task()
    assert len(first["new"]) == 1 and first["alerted"] == first["new"]
    second = run_anomalies_task()
    assert second["new"] == [] and second["alerted"] == []
    assert len(alert_slack.payloads()) == 1
    assert "Amazon Elastic Compute Cloud" in json.dumps(alert_slack.payloads()[0])
    quiet = run_anomalies_task(send_alerts=False)
    assert quiet["alerted"] == []


def test_send_alerts_off_delivers_nothing_and_keeps_anomalies_pending(
    duckdb_wh, finops_home, alert_slack, alert_sinks, monkeypatch, tmp_path
):
    """A dry run (send_alerts=False) in a fresh worker process: emit() would register the
    configured routes on first use, so the task must not emit at all; the anomaly stays
    pending and is delivered once when alerts are on again."""
    from finops.alerts import routing
    from finops.allocation.tasks import run_anomalies_task

    monkeypatch.setattr(routing, "_REGISTERED", {})  # nothing registered yet, as in a new task process
    _setup(duckdb_wh, alert_slack, monkeypatch, tmp_path)
    quiet = run_anomalies_task(send_alerts=False)
    assert len(quiet["new"]) == 1 and quiet["alerted"] == []
    assert alert_slack.payloads() == []
    loud = run_anomalies_task()
    assert loud["alerted"] == quiet["new"] and len(alert_slack.payloads()) == 1


def test_a_failed_detect_still_alerts_its_task_failure(
    airflow_db, duckdb_wh, finops_home, alert_slack, alert_sinks, monkeypatch, tmp_path
):
    """detect registers the routes with its ledger, then its anomaly delivery fails (Slack
    refuses it once): the task fails, and on_failure_callback's task_failed alert must reach
    the route. Before, detect's cleanup emptied the sinks but left the routes marked as
    registered, so that alert (and every later one in the process) reached the log only."""
    from airflow.dag_processing.dagbag import DagBag

    from finops.paths import REPO_ROOT

    cfg = tmp_path / "finops.yaml"
    cfg.write_text(
        "alerts:\n  routes:\n"
        f"    - {{team: '*', slack_conn_id: {alert_slack.conn_id}}}\n"
        "anomaly:\n  lookback_days: 90\n  monitors: [{type: service, abs_floor: 100, pct: 0.5}]\n"
    )
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    seed_costs(duckdb_wh)
    duckdb_wh.close()
    srv = alert_slack.server
    srv.expect_ordered_request(alert_slack.path, method="POST").respond_with_data("invalid_token", status=403)
    srv.expect_ordered_request(alert_slack.path, method="POST").respond_with_data("ok")
    dag = DagBag(dag_folder=str(REPO_ROOT / "dags" / "finops_anomalies.py")).get_dag("finops_anomalies")
    for t in dag.tasks:
        t.retries = 0  # dag.test() would sit out the retry delays
    dr = dag.test()
    assert str(dr.state) == "failed"
    posts = [p["text"] for p in alert_slack.payloads()]
    assert len(posts) == 2 and "Amazon Elastic Compute Cloud" in posts[0], posts
    assert posts[1].startswith("[critical] Airflow task failed: finops_anomalies.detect"), posts
