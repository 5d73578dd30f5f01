"""The policy DAGs parse, carry their Params, and run end to end with dag.test() on moto."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from finops.policies.decide import format_mark
from tests.fixtures.policies import pol_put_gpu

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def pol_config(tmp_path, monkeypatch, finops_home):
    pdir = tmp_path / "policies"
    pdir.mkdir()
    (pdir / "targets.yaml").write_text(
        "targets:\n  - {name: aws-test, provider: aws, conn_id: aws_default, regions: [us-east-1]}\n"
    )
    (pdir / "p.yaml").write_text(
        "policies:\n"
        "  - {name: idle-gpu, kind: idle, action: stop, min_age_hours: 0, idle: {hours: 8, gpu_util_below: 5}}\n"
        "  - {name: tags, kind: tags, action: report, required_tags: [{key: team}]}\n"
    )
    cfg = tmp_path / "finops.yaml"
    cfg.write_text(f"version: 1\npolicies_dir: {pdir}\n")
    monkeypatch.setenv("FINOPS_CONFIG", str(cfg))
    return pdir


def _load(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "dags" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.dag


def test_dags_parse_with_params():
    tags, idle, audit = _load("finops_policy_tags"), _load("finops_policy_idle"), _load("finops_audit")
    assert (tags.dag_id, idle.dag_id, audit.dag_id) == (
        "finops_policy_tags",
        "finops_policy_idle",
        "finops_audit",
    )
    assert set(audit.params.keys()) >= {"provider", "account", "policy", "dry_run"}
    assert audit.params["dry_run"] is True and idle.params["dry_run"] is True
    assert all(t.retries >= 1 for d in (tags, idle, audit) for t in d.tasks)


def test_audit_dag_runs_dry_on_moto(airflow_db, aws_conn, pol_config, pol_boto, pol_launch, pol_instances):
    marked = pol_launch(
        "old",
        {
            "owner": "a",
            "team": "ml",
            "finops-idle-marked": format_mark(datetime.now(UTC) - timedelta(hours=30)),
        },
    )
    idle = pol_launch("idle", {"owner": "b"})
    for iid in (marked, idle):
        pol_put_gpu(pol_boto["cw"], iid, 0.5, 8.5, gpus=1)
    before = pol_instances()
    dr = _load("finops_audit").test(run_conf={"provider": "aws", "dry_run": True})
    assert str(dr.state).endswith("success"), dr.state
    assert pol_instances() == before
    from finops.warehouse import connect

    wh = connect()
    try:
        rows = dict(
            wh.query("SELECT resource_id, action FROM policy_actions WHERE policy = 'idle-gpu' AND dry_run")
        )
        assert rows == {marked: "stop", idle: "mark"}
        snap = wh.query("SELECT resource_id, compliant FROM tag_compliance WHERE policy = 'tags'")
        assert dict(snap) == {marked: True, idle: False}
    finally:
        wh.close()
    reports = list((Path(pol_config).parent / "finops_home" / "reports").glob("violations-*.txt"))
    assert reports and "(no team)" in reports[0].read_text()


def test_scheduled_runs_stay_dry_unless_enforced(monkeypatch):
    from finops.policies.tasks import effective_dry_run

    monkeypatch.delenv("AIRFLOW_VAR_FINOPS_POLICY_ENFORCE", raising=False)
    assert effective_dry_run(False, "scheduled") is True  # the Param alone cannot make a schedule live
    assert effective_dry_run(False, "manual") is False and effective_dry_run(True, "manual") is True
    monkeypatch.setenv("AIRFLOW_VAR_FINOPS_POLICY_ENFORCE", "true")
    assert effective_dry_run(True, "scheduled") is False


def _tries(dr) -> dict[str, tuple[str, int]]:
    return {ti.task_id: (str(ti.state), ti.try_number) for ti in dr.get_task_instances()}


def test_audit_of_a_filter_matching_no_target_fails(airflow_db, aws_conn, pol_config, pol_boto, pol_launch):
    """A typo in the form's account (or a provider with no target) evaluated nothing and the run
    was green, its report saying '(none)': it read as 'no violations'. Now it fails at once."""
    pol_launch("idle", {"owner": "b"})
    dr = _load("finops_audit").test(run_conf={"account": "aws-tset", "dry_run": True})
    assert str(dr.state) == "failed"
    assert _tries(dr) == {"evaluate_policies": ("failed", 1), "violations_report": ("upstream_failed", 0)}
    dr = _load("finops_audit").test(run_conf={"account": "aws-test", "dry_run": True})  # the right name
    assert str(dr.state) == "success"


def test_audit_of_an_unknown_policy_fails_without_retries(airflow_db, aws_conn, pol_config, pol_boto):
    """An unknown policy name cannot be fixed by a retry: before, the task retried twice with
    exponential backoff (6+ minutes) before failing."""
    dr = _load("finops_audit").test(run_conf={"policy": "idle-gpus", "dry_run": True})
    assert str(dr.state) == "failed"
    assert _tries(dr)["evaluate_policies"] == ("failed", 1)


def test_a_failed_task_reaches_the_alert_sinks(airflow_db, aws_conn, pol_config, pol_boto, pol_alerts):
    """on_failure_callback (finops.alerts.task_failure): before, a failed run alerted nobody."""
    dr = _load("finops_audit").test(run_conf={"policy": "idle-gpus", "dry_run": True})
    assert str(dr.state) == "failed"
    got = [e for e in pol_alerts if e.kind == "task_failed"]
    assert [(e.title, e.severity) for e in got] == [
        ("Airflow task failed: finops_audit.evaluate_policies", "critical")
    ]
    assert got[0].facts["run_id"] == dr.run_id and "idle-gpus" in got[0].summary


def test_audit_report_of_a_target_named_in_the_form(airflow_db, aws_conn, pol_config, pol_boto, pol_launch):
    """The form's account takes a target name (its description says so, and the evaluation
    honours it), but the report filtered the audit rows by `account = 'aws-test'`, while they
    carry the account id: the run was green and every section of its report read '(none)'."""
    iid = pol_launch("idle", {"owner": "b"})  # no team tag: non-compliant; idle: a mark is planned
    pol_put_gpu(pol_boto["cw"], iid, 0.5, 8.5, gpus=1)
    dr = _load("finops_audit").test(run_conf={"account": "aws-test", "dry_run": True})
    assert str(dr.state) == "success"
    [report] = (Path(pol_config).parent / "finops_home" / "reports").glob("violations-*.txt")
    text = report.read_text()
    assert "(no team)" in text  # the non-compliant instance, with its team and cost line
    assert "idle-gpu: idle -> mark" in text
