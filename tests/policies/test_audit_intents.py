"""No action without its audit row, and one cap per policy across runs (real engines only).

- every mutating cloud call (EC2 on moto, GCP / Azure / Lambda on local HTTP servers), dry-run
  probes included, is made while its `policy_actions` row is committed as `pending`: watched
  from the cloud's side through a second warehouse connection;
- a warehouse that refuses the audit writes (a PostgreSQL role without the privilege, a
  read-only DuckDB file) means no call at all; one that refuses the outcome write, or a task
  killed between the call and the write, leaves a `pending` row that the report and the UI show
  as outcome unknown and the next run reconciles;
- two runs at once (threads, two connections, DuckDB file and PostgreSQL) share one cap.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from finops.policies import audit
from finops.policies.actions.aws import AwsActions
from finops.policies.decide import format_mark
from finops.policies.engine import AuditUnavailable, CapExceeded, Cloud, PolicyRunError, run_policy
from finops.policies.inventory.aws import AwsInventory
from finops.policies.report import violations_report
from tests.fixtures.policies import pol_points, pol_put_gpu

OWNER = {"owner": "alice@example.com", "team": "ml"}
EC2_WRITES = ("CreateTags", "DeleteTags", "StopInstances")


def _old_mark() -> str:
    return format_mark(datetime.now(UTC) - timedelta(hours=30))


def _cloud(conn: str, region: str = "us-east-1") -> Cloud:
    inv = AwsInventory(conn, region)
    return Cloud(inv, AwsActions(conn, region, ec2=inv.ec2))


def _second_connection(wh):  # type: ignore[no-untyped-def]
    """Another connection to the same warehouse: it sees only what the engine committed."""
    if wh.dialect == "duckdb":
        from finops.warehouse.duckdb_wh import DuckDBWarehouse

        return DuckDBWarehouse(wh.path)
    import psycopg

    from finops.warehouse.postgres_wh import PostgresWarehouse

    return PostgresWarehouse(psycopg.connect(wh.conn.info.dsn), schema=wh.schema)


def _watch_ec2(cloud: Cloud, reader) -> list[tuple[str, bool, list[str], list[tuple]]]:  # type: ignore[no-untyped-def]
    """Every EC2 write the actions make (DryRun probes too), with the pending rows at that moment."""
    calls: list[tuple[str, bool, list[str], list[tuple]]] = []

    def before(params, model, **_):  # type: ignore[no-untyped-def]
        ids = params.get("Resources") or params.get("InstanceIds") or []
        pending = reader.query("SELECT resource_id, action FROM policy_actions WHERE status = 'pending'")
        calls.append((model.name, bool(params.get("DryRun")), list(ids), pending))

    for op in EC2_WRITES:
        cloud.actions.ec2.meta.events.register(f"before-parameter-build.ec2.{op}", before)
    return calls


def _rows(wh, run_id: str) -> dict[str, tuple]:  # type: ignore[no-untyped-def]
    rows = wh.query(
        "SELECT resource_id, action, status, result FROM policy_actions WHERE run_id = ?", [run_id]
    )
    return {r[0]: r[1:] for r in rows}


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry", "live"])
def test_every_ec2_call_is_made_with_its_row_committed_pending(
    aws_conn, pol_boto, pol_launch, pol_policy, any_wh, pol_alerts, dry_run
):
    ids = {
        "idle": pol_launch("idle", OWNER),
        "marked": pol_launch("marked", {**OWNER, "finops-idle-marked": _old_mark()}),
        "busy_again": pol_launch("busy-again", {**OWNER, "finops-idle-marked": _old_mark()}),
        "busy": pol_launch("busy", OWNER),
    }
    for k in ("idle", "marked"):
        pol_put_gpu(pol_boto["cw"], ids[k], 0.5, 8.5)
    pol_put_gpu(pol_boto["cw"], ids["busy_again"], lambda i: 70 if i < 6 else 1, 8.5)
    pol_put_gpu(pol_boto["cw"], ids["busy"], 90, 8.5)
    want = {ids["idle"]: "mark", ids["marked"]: "stop", ids["busy_again"]: "unmark"}
    reader = _second_connection(any_wh)
    try:
        cloud = _cloud(aws_conn)
        calls = _watch_ec2(cloud, reader)
        run_policy(pol_policy(), cloud, any_wh, dry_run=dry_run, run_id="r-intent")
    finally:
        reader.close()
    probes = {("CreateTags", True), ("StopInstances", True), ("DeleteTags", True)}
    real = set() if dry_run else {(op, False) for op, _ in probes}
    assert {(op, probe) for op, probe, _, _ in calls} == probes | real
    for op, _probe, called_for, pending in calls:  # exactly the row of the resource being called, committed
        assert pending == [(called_for[0], want[called_for[0]])], (op, called_for, pending)
    rows = _rows(any_wh, "r-intent")
    assert {rid: r[:2] for rid, r in rows.items()} == {
        **{rid: (a, "done") for rid, a in want.items()},
        ids["busy"]: ("none", "recorded"),
    }
    if dry_run:  # a dry run's rows say what it would have done
        assert {rows[rid][2].split(" (probe permitted)")[0] for rid in want} == {
            "dry_run: would mark",
            "dry_run: would stop",
            "dry_run: would unmark",
        }
    else:
        assert (
            rows[ids["marked"]][2].startswith("stopped")
            and rows[ids["idle"]][2] == "marked; owner notice sent"
        )


def test_cleanup_calls_are_made_under_their_action_row(aws_conn, pol_boto, pol_launch, pol_policy, duckdb_wh):
    """The calls an action may make after its own (lifting a mark whose owner notice failed; the
    unmark of a stop the re-check prevents) happen while that action's row is pending."""
    from finops.alerts.events import register_sink, unregister_sink

    idle = pol_launch("idle", OWNER)
    late = pol_launch("late-job", {**OWNER, "finops-idle-marked": _old_mark()})
    for iid in (idle, late):
        pol_put_gpu(pol_boto["cw"], iid, 0.5, 8.5)

    def action_time() -> datetime:  # a training job starts between the plan and the stop
        pol_put_gpu(pol_boto["cw"], late, 97, 0.25, end=datetime.now(UTC) + timedelta(seconds=30))
        return datetime.now(UTC) + timedelta(seconds=40)

    def down(ev) -> None:  # type: ignore[no-untyped-def]
        if ev.kind == "policy_notice":
            raise RuntimeError("smtp: connection refused")

    reader = _second_connection(duckdb_wh)
    register_sink(down)
    try:
        cloud = _cloud(aws_conn)
        calls = _watch_ec2(cloud, reader)
        with pytest.raises(PolicyRunError, match="NoticeFailed"):
            run_policy(pol_policy(), cloud, duckdb_wh, dry_run=False, run_id="r-cleanup", clock=action_time)
    finally:
        unregister_sink(down)
        reader.close()
    assert sorted(
        (op, probe, ids[0], pending[0][1]) for op, probe, ids, pending in calls if len(pending) == 1
    ) == sorted(
        [
            ("CreateTags", True, idle, "mark"),
            ("CreateTags", False, idle, "mark"),
            ("DeleteTags", True, idle, "mark"),
            ("DeleteTags", False, idle, "mark"),  # the lift
            ("DeleteTags", True, late, "stop"),
            ("DeleteTags", False, late, "stop"),
        ]
    )  # the re-check's unmark
    assert all(pending == [(ids[0], pending[0][1])] for _, _, ids, pending in calls)
    rows = _rows(duckdb_wh, "r-cleanup")
    assert rows[idle][:2] == ("mark", "failed") and rows[idle][2].endswith("mark lifted: unmarked")
    assert rows[late] == ("stop", "done", "prevented by re-check: busy")


def _observing(handler, reader, seen: list):  # type: ignore[no-untyped-def]
    """A cloud server that notes, at every write it receives, which audit rows are pending."""

    def observe(request):  # type: ignore[no-untyped-def]
        if request.method in ("POST", "PATCH"):
            pending = reader.query(
                "SELECT resource_id, resource_name, action FROM policy_actions WHERE status = 'pending'"
            )
            seen.append((request.path, request.get_data(as_text=True), pending))
        return handler(request)

    return observe


def test_rest_cloud_writes_are_made_with_their_row_committed_pending(
    httpserver, pol_policy, duckdb_wh, pol_alerts
):
    """GCP setLabels / stop, Azure tags PATCH / deallocate, Lambda terminate."""
    import re

    from finops.policies.actions.azure import AzureActions
    from finops.policies.actions.gcp import GcpActions
    from finops.policies.actions.lambda_cloud import LambdaActions
    from finops.policies.inventory.azure import AzureInventory
    from finops.policies.inventory.gcp import GcpInventory
    from finops.policies.inventory.lambda_cloud import LambdaInventory
    from finops.policies.model import Policy
    from tests.fixtures.policies import PolFakeAzure, PolFakeGcp, PolFakeLambda

    url = httpserver.url_for("/").rstrip("/")
    gcp, az, lam = PolFakeGcp(), PolFakeAzure(url), PolFakeLambda()
    gcp.fail_next = []
    gcp_ids = [
        gcp.add("g-idle", "us-central1-a", OWNER),
        gcp.add("g-marked", "us-central1-a", {**OWNER, "finops-idle-marked": _old_mark()}),
    ]
    for iid in gcp_ids:
        gcp.gpu[iid] = [pol_points(1.0, 8.5), pol_points(2.0, 8.5)]
    az_ids = [az.add("vm-idle", OWNER), az.add("vm-marked", {**OWNER, "finops-idle-marked": _old_mark()})]
    for vid in az_ids:
        az.gpu[vid.lower()] = pol_points(0.5, 8.5)
    lam_id = lam.add("untagged", {"owner": "carol"})
    seen: list = []
    reader = _second_connection(duckdb_wh)

    def route(request):  # type: ignore[no-untyped-def]
        fake = (
            az
            if request.path.startswith("/subscriptions/")
            else lam
            if request.path.startswith("/api/")
            else gcp
        )
        return fake.handler(request)

    httpserver.expect_request(re.compile(".*")).respond_with_handler(_observing(route, reader, seen))
    try:
        ginv = GcpInventory(gcp.project, None, url, url)
        run_policy(
            pol_policy(scope={"providers": ["gcp"]}),
            Cloud(ginv, GcpActions(ginv)),
            duckdb_wh,
            dry_run=False,
            run_id="gcp",
        )
        ainv = AzureInventory(az.sub, None, url)
        run_policy(
            pol_policy(scope={"providers": ["azure"]}),
            Cloud(ainv, AzureActions(ainv)),
            duckdb_wh,
            dry_run=False,
            run_id="azure",
        )
        lpol = Policy.model_validate(
            {
                "name": "lambda-tags",
                "kind": "tags",
                "action": "terminate",
                "allow_terminate": True,
                "scope": {"providers": ["lambda"]},
                "grace_hours": 24,
                "required_tags": [{"key": "team"}],
            }
        )
        linv = LambdaInventory("lambda-main", None, url)
        lcloud, t0 = Cloud(linv, LambdaActions(linv, allow_terminate=True)), datetime.now(UTC)
        run_policy(
            lpol, lcloud, duckdb_wh, dry_run=False, now=t0, run_id="lambda-mark"
        )  # kept in policy_marks
        later = t0 + timedelta(hours=25)
        run_policy(
            lpol, lcloud, duckdb_wh, dry_run=False, now=later, clock=lambda: later, run_id="lambda-terminate"
        )
    finally:
        reader.close()
    writes = ["tags" if path.endswith("/tags/default") else path.rsplit("/", 1)[-1] for path, _, _ in seen]
    assert sorted(writes) == ["deallocate", "setLabels", "stop", "tags", "terminate"]
    for path, body, pending in seen:
        assert len(pending) == 1, (path, pending)
        rid, name, action = pending[0]
        assert name in path or rid.lower() in (path + body).lower(), (path, pending)
        assert action in ("mark", "stop", "terminate")
    assert (
        gcp.instances["g-marked"]["status"] == "TERMINATED"
        and lam.instances[lam_id]["status"] == "terminating"
    )
    assert not duckdb_wh.query("SELECT action_id FROM policy_actions WHERE status IN ('reserved', 'pending')")


def test_a_run_in_flight_is_not_reconciled_by_another(
    httpserver, aws_conn, pol_policy, duckdb_wh, pol_alerts
):
    """Run A is inside its GCP stop call (the server holds the answer). Run B of the same policy,
    over another target, waits for A's lock instead of settling A's pending row as abandoned,
    then counts A's stop against the cap."""
    import re

    from finops.policies.actions.gcp import GcpActions
    from finops.policies.inventory.gcp import GcpInventory
    from tests.fixtures.policies import PolFakeGcp

    gcp = PolFakeGcp()
    gcp.fail_next = []
    gid = gcp.add("g-marked", "us-central1-a", {**OWNER, "finops-idle-marked": _old_mark()})
    gcp.gpu[gid] = [pol_points(1.0, 8.5), pol_points(2.0, 8.5)]
    entered, release, b_listed = threading.Event(), threading.Event(), threading.Event()

    def holding(request):  # type: ignore[no-untyped-def]
        if request.method == "POST" and request.path.endswith("/stop"):
            entered.set()
            release.wait(60)
        return gcp.handler(request)

    httpserver.expect_request(re.compile(".*")).respond_with_handler(holding)
    url = httpserver.url_for("/").rstrip("/")
    ginv = GcpInventory(gcp.project, None, url, url)
    aws = _cloud(aws_conn)
    aws.actions.ec2.meta.events.register("after-call.ec2.DescribeInstances", lambda **_: b_listed.set())
    policy = pol_policy(scope={"providers": ["gcp", "aws"]})
    out: dict[str, object] = {}

    def run(name: str, cloud: Cloud) -> None:
        wh = _second_connection(duckdb_wh)
        try:
            out[name] = run_policy(policy, cloud, wh, dry_run=False, run_id=name)
        except Exception as e:  # noqa: BLE001 - inspected below
            out[name] = e
        finally:
            wh.close()

    a = threading.Thread(target=run, args=("a", Cloud(ginv, GcpActions(ginv))))
    a.start()
    b = threading.Thread(target=run, args=("b", aws))
    try:
        assert entered.wait(60)
        b.start()
        assert b_listed.wait(60)
        time.sleep(1.0)  # B has listed its (empty) region: it is at the lock now
        assert b.is_alive()
        assert duckdb_wh.query(
            "SELECT status FROM policy_actions WHERE run_id = 'a' AND action = 'stop'"
        ) == [("pending",)]
    finally:
        release.set()
        a.join(60)
        if b.is_alive() or b.ident is not None:
            b.join(60)
    res_a, res_b = out["a"], out["b"]
    assert not isinstance(res_a, Exception) and not isinstance(res_b, Exception), out
    assert (
        _rows(duckdb_wh, "a")[gid][:2] == ("stop", "done")
        and gcp.instances["g-marked"]["status"] == "TERMINATED"
    )
    assert res_b.reconciled == [] and res_b.others == {"a": 1}


class _Role:
    """A PostgreSQL login role that can read the test schema and write only what it is granted."""

    def __init__(self, dsn: str, schema: str):
        import psycopg

        self.dsn, self.schema, self.name = dsn, schema, f"finops_audit_{uuid.uuid4().hex[:10]}"
        self.admin = psycopg.connect(dsn, autocommit=True)
        self.admin.execute(f'CREATE ROLE "{self.name}" LOGIN')
        self.admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{self.name}"')
        self.admin.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{self.name}"')
        self.opened: list = []

    def grant(self, privileges: str) -> None:
        self.admin.execute(f'GRANT {privileges} ON "{self.schema}".policy_actions TO "{self.name}"')

    def warehouse(self):  # type: ignore[no-untyped-def]
        from psycopg.conninfo import make_conninfo

        from finops.warehouse.postgres_wh import PostgresWarehouse

        wh = PostgresWarehouse.from_dsn(make_conninfo(self.dsn, user=self.name), schema=self.schema)
        self.opened.append(wh)
        return wh

    def drop(self) -> None:
        for wh in self.opened:
            wh.close()
        self.admin.execute(f'DROP OWNED BY "{self.name}"')
        self.admin.execute(f'DROP ROLE "{self.name}"')
        self.admin.close()


@pytest.fixture
def pg_role(pg_dsn, pg_wh):
    role = _Role(pg_dsn, pg_wh.schema)
    yield role
    role.drop()


@pytest.fixture
def pol_pair(pol_boto, pol_launch):
    """An idle unmarked instance (a mark is planned) and an idle one marked 30 h ago (a stop)."""
    ids = {
        "idle": pol_launch("idle", OWNER),
        "marked": pol_launch("marked", {**OWNER, "finops-idle-marked": _old_mark()}),
    }
    for iid in ids.values():
        pol_put_gpu(pol_boto["cw"], iid, 0.5, 8.5)
    return ids


@pytest.mark.postgres
def test_no_cloud_call_when_the_audit_rows_cannot_be_written(
    aws_conn, pol_pair, pol_instances, pol_policy, pg_wh, pg_role, pol_alerts
):
    before = pol_instances()
    cloud = _cloud(aws_conn)
    calls = _watch_ec2(cloud, pg_wh)
    wh = pg_role.warehouse()  # may read, may not write policy_actions
    with pytest.raises(AuditUnavailable, match="InsufficientPrivilege.*nothing was attempted"):
        run_policy(pol_policy(), cloud, wh, dry_run=False, run_id="no-insert")
    assert calls == [] and pol_instances() == before  # not even a DryRun probe
    assert pg_wh.query("SELECT count(*) FROM policy_actions")[0][0] == 0
    assert not [e for e in pol_alerts if e.kind == "policy_notice"]

    pg_role.grant("INSERT")  # the plan is written, but no row can be moved to pending
    with pytest.raises(PolicyRunError, match="not attempted: its audit row could not be written"):
        run_policy(pol_policy(), cloud, wh, dry_run=False, run_id="no-update")
    assert calls == [] and pol_instances() == before
    assert {rid: r[:2] for rid, r in _rows(pg_wh, "no-update").items()} == {
        pol_pair["idle"]: ("mark", "reserved"),
        pol_pair["marked"]: ("stop", "reserved"),
    }

    pg_role.grant("UPDATE")
    res = run_policy(pol_policy(), cloud, wh, dry_run=False, run_id="granted")
    assert sorted((r.run_id, r.action, r.status) for r in res.reconciled) == [
        ("no-update", "mark", "not_attempted"),
        ("no-update", "stop", "not_attempted"),
    ]
    assert (
        _rows(pg_wh, "no-update")[pol_pair["marked"]][2]
        == "not attempted: run no-update ended before this stop"
    )
    after = pol_instances()
    assert (
        after[pol_pair["marked"]]["state"] in ("stopping", "stopped")
        and "finops-idle-marked" in after[pol_pair["idle"]]["tags"]
    )
    assert {r[1] for r in _rows(pg_wh, "granted").values()} == {"done"}


def test_read_only_duckdb_warehouse_means_no_cloud_call(
    aws_conn, pol_pair, pol_instances, pol_policy, tmp_path
):
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    path = tmp_path / "audit.duckdb"
    rw = DuckDBWarehouse(path)
    rw.migrate()
    rw.close()
    before = pol_instances()
    cloud = _cloud(aws_conn)
    ro = DuckDBWarehouse(path, read_only=True)
    try:
        calls = _watch_ec2(cloud, ro)
        with pytest.raises(AuditUnavailable, match="nothing was attempted"):
            run_policy(pol_policy(), cloud, ro, dry_run=False, run_id="ro")
        assert calls == [] and pol_instances() == before
    finally:
        ro.close()


def _unknown_lines(text: str) -> list[str]:
    block = text.split("Actions with no recorded outcome", 1)[1].split("\n\n", 1)[0]
    return [ln.strip() for ln in block.splitlines()[1:]]


@pytest.mark.postgres
def test_outcome_write_failure_leaves_a_pending_row_shown_and_reconciled(
    aws_conn, pol_pair, pol_instances, pol_policy, pg_wh, pg_role, pol_alerts, finops_home
):
    from finops.ui.db import Reader
    from finops.ui.queries import Page
    from finops.ui.queries import policy_actions as ui_policy_actions

    pg_role.grant("INSERT, UPDATE (status, result, updated_at)")  # the outcome also writes evidence: refused
    with pytest.raises(PolicyRunError, match="stays pending"):
        run_policy(pol_policy(), _cloud(aws_conn), pg_role.warehouse(), dry_run=False, run_id="lost-outcome")
    after = pol_instances()
    assert after[pol_pair["marked"]]["state"] in ("stopping", "stopped")  # the calls were made ...
    assert "finops-idle-marked" in after[pol_pair["idle"]]["tags"]
    rows = _rows(pg_wh, "lost-outcome")  # ... and their rows say nobody knows how they ended
    assert rows == {
        pol_pair["idle"]: ("mark", "pending", audit.outcome_unknown("mark")),
        pol_pair["marked"]: ("stop", "pending", audit.outcome_unknown("stop")),
    }

    lines = _unknown_lines(violations_report(pg_wh, now=datetime.now(UTC)).text)
    assert len(lines) == 2 and all(
        "[pending]: outcome unknown" in ln and "run lost-outcome" in ln for ln in lines
    )
    assert any(pol_pair["marked"] in ln and " stop (live" in ln for ln in lines)
    ui = ui_policy_actions(Reader(pg_wh), filters={}, page=Page())
    assert {i["resource_id"]: i["result"] for i in ui["items"]} == {
        rid: audit.outcome_unknown(a) for rid, (a, _, _) in rows.items()
    }

    res = run_policy(pol_policy(), _cloud(aws_conn), pg_wh, dry_run=False, run_id="next")
    assert {(r.resource_id, r.status) for r in res.reconciled} == {
        (pol_pair["idle"], "unknown"),
        (pol_pair["marked"], "unknown"),
    }
    [alert] = [e for e in pol_alerts if e.kind == "policy_outcome_unknown"]
    assert (
        alert.severity == "critical"
        and alert.facts["runs"] == "lost-outcome"
        and pol_pair["marked"] in alert.facts["resources"]
    )
    settled = _rows(pg_wh, "lost-outcome")
    assert (
        settled[pol_pair["marked"]][1] == "unknown"
        and "re-read by run next" in settled[pol_pair["marked"]][2]
    )
    assert "state stopp" in settled[pol_pair["marked"]][2]
    assert settled[pol_pair["idle"]][2].endswith("state running, mark present")
    ev = json.loads(
        pg_wh.query(
            "SELECT evidence FROM policy_actions WHERE resource_id = ? AND run_id = 'lost-outcome'",
            [pol_pair["idle"]],
        )[0][0]
    )
    assert ev["reconciled"]["found"] == "pending" and ev["reconciled"]["marked"] is True
    lines = _unknown_lines(violations_report(pg_wh, now=datetime.now(UTC)).text)
    assert len(lines) == 2 and all(
        "[unknown]: outcome unknown: run lost-outcome attempted the" in ln for ln in lines
    )
    assert run_policy(pol_policy(), _cloud(aws_conn), pg_wh, run_id="after").reconciled == []  # settled once


_DOOMED = textwrap.dedent("""
    import json, sys
    from finops.policies.actions.aws import AwsActions
    from finops.policies.engine import Cloud, run_policy
    from finops.policies.inventory.aws import AwsInventory
    from finops.policies.model import Policy
    from finops.warehouse.postgres_wh import PostgresWarehouse

    policy, dsn, schema = Policy.model_validate(json.loads(sys.argv[1])), sys.argv[2], sys.argv[3]
    inv = AwsInventory("aws_default", "us-east-1")
    wh = PostgresWarehouse.from_dsn(dsn, schema=schema, application_name="finops-doomed")
    run_policy(policy, Cloud(inv, AwsActions("aws_default", "us-east-1", ec2=inv.ec2)), wh, dry_run=False, run_id="doomed")
""")


@pytest.mark.postgres
def test_task_killed_between_call_and_outcome(
    aws_conn,
    pol_boto,
    pol_launch,
    pol_instances,
    pol_policy,
    pg_wh,
    pg_dsn,
    finops_home,
    tmp_path,
    pol_alerts,
):
    """The process is SIGKILLed while its outcome write is held up (a trigger keeps it waiting):
    the instance is stopped, the row stays pending, the session's lock goes with it, and the
    next run is not blocked and records what it finds."""
    iid = pol_launch("doomed", {**OWNER, "finops-idle-marked": _old_mark()})
    pol_put_gpu(pol_boto["cw"], iid, 0.5, 8.5)
    pg_wh.execute(
        "CREATE FUNCTION hold_outcome() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_sleep(60); RAISE EXCEPTION 'outcome write held by the test'; END $$"
    )
    pg_wh.execute(
        "CREATE TRIGGER hold_outcome BEFORE UPDATE ON policy_actions FOR EACH ROW "
        "WHEN (OLD.status = 'pending') EXECUTE FUNCTION hold_outcome()"
    )
    policy = pol_policy()
    log = tmp_path / "doomed.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", _DOOMED, policy.model_dump_json(), pg_dsn, pg_wh.schema],
            env=dict(os.environ),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:

        def held() -> bool:  # stopped, and its outcome write blocked
            return pol_instances()[iid]["state"] != "running" and pg_wh.query(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'finops-doomed' "
                "AND state = 'active' AND query LIKE 'UPDATE policy_actions%'"
            ) == [(1,)]

        deadline = time.monotonic() + 120
        while not held() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.poll() is None and held(), log.read_text()[-3000:]
    finally:
        proc.kill()
        proc.wait(30)
    assert proc.returncode == -9
    # What PostgreSQL does once it notices the client is gone (client_connection_check_interval).
    pg_wh.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'finops-doomed'"
    )
    pg_wh.execute("DROP TRIGGER hold_outcome ON policy_actions")
    assert pol_instances()[iid]["state"] in ("stopping", "stopped")
    assert _rows(pg_wh, "doomed") == {iid: ("stop", "pending", audit.outcome_unknown("stop"))}
    [line] = _unknown_lines(violations_report(pg_wh, now=datetime.now(UTC)).text)
    assert iid in line and "run doomed) [pending]: outcome unknown" in line

    t0 = time.monotonic()
    res = run_policy(policy, _cloud(aws_conn), pg_wh, dry_run=False, run_id="after-kill")
    assert time.monotonic() - t0 < 30  # the dead session's lock is gone
    [rec] = res.reconciled
    assert (rec.run_id, rec.resource_id, rec.status) == (
        "doomed",
        iid,
        "unknown",
    ) and "state stopp" in rec.result
    assert _rows(pg_wh, "after-kill")[iid][:2] == (
        "unmark",
        "done",
    )  # not running: its mark is lifted, no 2nd stop


def _fleet(pol_boto, pol_launch, region: str, n: int) -> list[str]:
    import boto3

    cw = (
        pol_boto["cw"]
        if region == "us-east-1"
        else boto3.client("cloudwatch", endpoint_url=pol_boto["cw"].meta.endpoint_url, region_name=region)
    )
    ids = []
    for i in range(n):
        iid = pol_launch(f"idle-{region}-{i}", {**OWNER, "finops-idle-marked": _old_mark()}, region=region)
        pol_put_gpu(cw, iid, 0.5, 8.5, gpus=1)
        ids.append(iid)
    return ids


def _states(pol_boto, region: str) -> dict[str, str]:
    import boto3

    ec2 = boto3.client("ec2", endpoint_url=pol_boto["ec2"].meta.endpoint_url, region_name=region)
    return {
        i["InstanceId"]: i["State"]["Name"]
        for r in ec2.describe_instances()["Reservations"]
        for i in r["Instances"]
    }


def test_two_runs_at_once_share_one_cap(aws_conn, pol_boto, pol_launch, pol_policy, any_wh, pol_alerts):
    """A manual run over one region beside a scheduled run over another: each plans 3 stops,
    within the cap of 4 alone, 6 together. One acts, the other aborts before acting."""
    regions = ("us-east-1", "us-west-2")
    fleets = {r: _fleet(pol_boto, pol_launch, r, 3) for r in regions}
    policy = pol_policy(max_actions_per_run=4)
    barrier = threading.Barrier(2)
    outcome: dict[str, object] = {}

    def run(region: str) -> None:
        wh = _second_connection(any_wh)  # each run its own connection, as two task processes would
        try:
            cloud = _cloud(aws_conn, region)
            barrier.wait(30)
            outcome[region] = run_policy(policy, cloud, wh, dry_run=False, run_id=f"run-{region}")
        except Exception as e:  # noqa: BLE001 - inspected below
            outcome[region] = e
        finally:
            wh.close()

    threads = [threading.Thread(target=run, args=(r,)) for r in regions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    aborted = [r for r in regions if isinstance(outcome.get(r), CapExceeded)]
    acted = [r for r in regions if r not in aborted]
    assert len(aborted) == 1 and not isinstance(outcome.get(acted[0]), Exception), outcome
    (won,), (lost,) = acted, aborted
    stopped = {
        iid for r in regions for iid, s in _states(pol_boto, r).items() if s in ("stopping", "stopped")
    }
    assert stopped == set(fleets[won])  # 3 actions in all: within the cap
    assert {r[2] for r in _rows(any_wh, f"run-{lost}").values()} == {
        f"aborted: 3 planned actions + 3 by overlapping runs of this policy (run-{won}: 3) > cap 4"
    }
    assert any(
        e.kind == "policy_cap_exceeded" and e.facts.get("overlapping_runs") == {f"run-{won}": 3}
        for e in pol_alerts
    )

    # A run that begins after the other ended has the whole cap, as before.
    res = run_policy(policy, _cloud(aws_conn, lost), any_wh, dry_run=False, run_id="later")
    assert res.others == {} and res.count("stop") == 3
    assert all(s in ("stopping", "stopped") for s in _states(pol_boto, lost).values())


def test_cap_window_counts_overlapping_runs_in_full_and_unfinished_rows(any_wh):
    """overlapping_actions, the cap's window, on hand-written rows around a run started at T."""
    t = datetime(2026, 11, 20, 20, 0)

    def row(
        run: str, action: str, status: str, at: datetime, dry: bool = False, policy: str = "idle-gpu"
    ) -> None:
        any_wh.execute(
            "INSERT INTO policy_actions (action_id, run_id, policy, policy_kind, provider, resource_id, decision, action, "
            "result, dry_run, created_at, status, updated_at) VALUES (?, ?, ?, 'idle', 'aws', ?, 'idle', ?, 'x', ?, ?, ?, ?)",
            [uuid.uuid4().hex, run, policy, f"i-{uuid.uuid4().hex[:8]}", action, dry, at, status, at],
        )

    row("before", "stop", "done", t - timedelta(hours=1))  # ended before T: a previous run
    row("straddle", "stop", "done", t - timedelta(minutes=10))  # still writing after T: counts in full
    row("straddle", "mark", "failed", t + timedelta(minutes=1))
    row("straddle", "unmark", "done", t + timedelta(minutes=1))  # unmarking is not capped
    row("dead", "terminate", "pending", t - timedelta(hours=3))  # left pending: counts until settled
    row("queued", "stop", "reserved", t + timedelta(minutes=2))
    row("dry", "stop", "done", t + timedelta(minutes=1), dry=True)  # dry runs never count
    row("aborted", "stop", "recorded", t + timedelta(minutes=1))  # an aborted plan did nothing
    row("settled", "stop", "not_attempted", t + timedelta(minutes=1))
    row("other", "stop", "done", t + timedelta(minutes=1), policy="required-tags")
    assert audit.overlapping_actions(any_wh, "idle-gpu", t, ("mark", "stop", "terminate")) == {
        "dead": 1,
        "queued": 1,
        "straddle": 2,
    }


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_migration_201_on_a_warehouse_with_audit_rows(engine, tmp_path, request, monkeypatch):
    """Rows written before the row life cycle existed are final (`done`, updated_at = created_at),
    on a warehouse that already has the later policy_actions index (DuckDB refused to build an
    index over the same transaction's updates)."""
    import finops.warehouse.duckdb_wh as dmod
    import finops.warehouse.postgres_wh as pmod
    from finops.warehouse.migrations import all_migrations

    if engine == "duckdb":
        wh = dmod.DuckDBWarehouse(tmp_path / "old.duckdb")
    else:
        wh = pmod.PostgresWarehouse.from_dsn(
            request.getfixturevalue("pg_dsn"), schema=request.getfixturevalue("pg_schema")
        )
    try:
        for mod in (dmod, pmod):
            monkeypatch.setattr(
                mod, "all_migrations", lambda: [m for m in all_migrations() if m.version != 201]
            )
        wh.migrate()
        at = datetime(2026, 1, 1, 12)
        for i in range(3):
            wh.execute(
                "INSERT INTO policy_actions (action_id, run_id, policy, policy_kind, provider, resource_id, decision, "
                "action, result, dry_run, created_at) VALUES (?, 'r', 'p', 'idle', 'aws', 'i-1', 'idle', 'stop', "
                "'stopped: stopping', FALSE, ?)",
                [f"a{i}", at],
            )
        monkeypatch.undo()
        assert wh.migrate() == [201]
        assert wh.query("SELECT DISTINCT status, updated_at FROM policy_actions") == [("done", at)]
    finally:
        wh.close()
