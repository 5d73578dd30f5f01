"""TrainingJobOperator + TrainingJobTrigger driven the way Airflow drives them: execute() until
it defers, the trigger rebuilt from serialize() (through JSON) and run with asyncio until its
event, execute_complete(event), and so on. Real subprocesses on the local provider, the job
tables in a real DuckDB warehouse; nothing of ours is mocked."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowFailException, TaskDeferred
from airflow.sdk.module_loading import import_string

from finops.jobs.executor import candidate_from_dict, provider_from_config
from finops.jobs.operator import TrainingJobOperator
from finops.jobs.planner import PlanSettings
from finops.jobs.store import JobStore
from finops.warehouse import connect

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def _spec(tmp_path, **over):
    data = {
        "name": "job",
        "team": "ml",
        "project": "p",
        "steps": 40,
        "run": {"command": SLEEPER},
        "step_profile": {"measured": [{"gpu_model": "CPU", "precision": "fp32", "step_ms": 1}]},
        "checkpoint_uri": str(tmp_path / "ckpt"),
        "checkpoint_every_steps": 2,
    }
    data.update(over)
    return data


def _cand(itype, model, price, **kw):
    return {"provider": "local", "region": "here", "instance_type": itype, "pricing_model": model,
            "price_per_hour": price, "gpu_model": "CPU", "gpu_memory_gib": 8, **kw}  # fmt: skip


def _ctx(try_number=1, run_id="manual__1"):
    ti = SimpleNamespace(dag_id="dag", run_id=run_id, task_id="train", map_index=-1, try_number=try_number)
    return {"ti": ti}


def _op(tmp_path, spec, candidates, machines=None, retries=0, **kw):
    provider = {"kind": "local", "work_dir": str(tmp_path / "work"), "machines": machines}
    return TrainingJobOperator(
        task_id="train", spec=spec, candidates=candidates, provider=provider, dry_run=False, poll_s=0.05,
        preempt_grace_s=20, retries=retries, plan_settings=PlanSettings(restart_overhead_h=0.0), **kw,
    )  # fmt: skip


def _rebuild(trigger):
    """What the triggerer does: the trigger from its serialized form (kwargs through JSON)."""
    path, kwargs = trigger.serialize()
    return import_string(path)(**json.loads(json.dumps(kwargs)))


async def _first_event(trigger):
    async for ev in trigger.run():
        return ev.payload
    raise AssertionError("trigger ended without an event")


def _drive(op, ctx, deferred=None, limit=10):
    """Run the task to its end; returns (result, events)."""
    events = []
    if deferred is None:
        try:
            return op.execute(ctx), events
        except TaskDeferred as d:
            deferred = d
    for _ in range(limit):
        assert deferred.method_name == "execute_complete"
        events.append(asyncio.run(_first_event(_rebuild(deferred.trigger))))
        try:
            return op.execute_complete(ctx, event=events[-1]), events
        except TaskDeferred as d:
            deferred = d
    raise AssertionError(f"no end after {limit} events: {events}")


def _store_rows(job_id):
    wh = connect()
    try:
        store = JobStore(wh)
        return store.get_job(job_id), store.attempts(job_id)
    finally:
        wh.close()


def _live(tmp_path):
    return provider_from_config({"kind": "local", "work_dir": str(tmp_path / "work")}).find()


def test_dry_run_plans_stores_and_launches_nothing(finops_home, tmp_path):
    spec = _spec(tmp_path, steps=3600, step_profile={"measured": [{"gpu_model": "CPU", "precision": "fp32",
                                                                    "step_ms": 1000}]})  # fmt: skip
    op = _op(tmp_path, spec, [_cand("cpu-box", "spot", "1"), _cand("cpu-box", "ondemand", "4")])
    op.dry_run_flag = True
    out = op.execute(_ctx())
    assert out["state"] == "dry_run" and out["action"] == "launch"
    assert out["candidate"] == "local/here/cpu-box spot" and out["expected_cost_usd"] == "1.0000"
    assert "CHOSEN" in out["plan"] and "$3.00 more than the chosen" in out["plan"]
    job, attempts = _store_rows(out["job_id"])
    assert job.state == "dry_run" and job.plan_table == out["plan"] and attempts == []
    assert not (tmp_path / "work").exists() and _live(tmp_path) == []


def test_capacity_error_moves_on_then_the_budget_cap_stops_the_job(finops_home, tmp_path):
    """big-box (cheapest) has no capacity here: the attempt is recorded and the planner moves to
    small-box; at $36,000/h the $1 cap is reached in ~0.1 s, so the trigger fires `budget`,
    the operator ends the instance and the task fails for good."""
    cands = [_cand("big-box", "spot", "2"), _cand("small-box", "spot", "36000")]
    op = _op(tmp_path, _spec(tmp_path, budget_usd="1"), cands, machines=["small-box"])
    with pytest.raises(AirflowFailException, match="stopped: estimated .* reached the \\$1 budget cap"):
        _drive(op, _ctx())
    job_id = _job_id()
    job, (a1, a2) = _store_rows(job_id)
    assert (a1.instance_type, a1.outcome, a1.instance_id) == ("big-box", "capacity", None)
    assert "no local machine of type big-box" in a1.end_reason and a1.estimated_cost_usd == 0
    assert (a2.instance_type, a2.outcome) == ("small-box", "stopped") and a2.estimated_cost_usd >= Decimal(1)
    assert "no capacity: no local machine of type big-box" in a2.plan_table
    assert a2.tags["finops-attempt"] == "2" and a2.tags["finops-dag-id"] == "dag"
    assert a2.tags["finops-run-id"] == "manual__1" and a2.tags["finops-job-id"] == job_id
    assert job.state == "stopped" and job.estimated_cost_usd == a2.estimated_cost_usd
    assert _live(tmp_path) == []


def _job_id(run_id="manual__1"):
    from finops.jobs.executor import job_id_for

    return job_id_for("dag", run_id, "train")


def test_retry_adopts_the_running_instance_and_a_failure_tears_it_down(finops_home, tmp_path):
    spec = _spec(tmp_path)
    cands = [_cand("cpu-box", "ondemand", "3")]
    with pytest.raises(TaskDeferred) as first:
        _op(tmp_path, spec, cands).execute(_ctx())
    iid = first.value.trigger.watch["instance_id"]
    # the worker died while the task was deferred-then-resumed: Airflow retries the task
    retry = _op(tmp_path, spec, cands)
    with pytest.raises(TaskDeferred) as second:
        retry.execute(_ctx(try_number=2))
    assert second.value.trigger.watch["instance_id"] == iid  # adopted, not relaunched
    job, attempts = _store_rows(_job_id())
    assert (
        len(attempts) == 1 and attempts[0].outcome == "running" and [i for i, _ in _live(tmp_path)] == [iid]
    )
    assert attempts[0].tags["finops-job-id"] == job.job_id
    # a failure inside the operator's own step: the instance ends before the error propagates
    with pytest.raises(ValueError, match="unknown trigger event kind"):
        retry.execute_complete(_ctx(try_number=2), event={"kind": "nonsense"})
    job, (att,) = _store_rows(_job_id())
    assert att.outcome == "torn_down" and "ValueError" in att.end_reason
    assert job.state == "failed" and _live(tmp_path) == []


def test_a_retry_after_teardown_resumes_the_job_and_on_kill_ends_it(finops_home, tmp_path):
    spec = _spec(tmp_path)
    cands = [_cand("cpu-box", "ondemand", "3")]
    op = _op(tmp_path, spec, cands, retries=2)
    with pytest.raises(TaskDeferred):
        op.execute(_ctx())
    with pytest.raises(ValueError):
        op.execute_complete(_ctx(), event={"kind": "nonsense"})
    job, _ = _store_rows(_job_id())
    assert job.state == "interrupted" and _live(tmp_path) == []  # retries left: resumable
    with pytest.raises(TaskDeferred) as again:
        _op(tmp_path, spec, cands, retries=2).execute(_ctx(try_number=2))
    job, attempts = _store_rows(_job_id())
    assert [a.outcome for a in attempts] == ["torn_down", "running"] and job.state == "running"
    # a user marks the deferred task failed: the triggerer calls on_kill
    asyncio.run(_rebuild(again.value.trigger).on_kill())
    assert _live(tmp_path) == []


def test_a_crash_fails_the_job_without_relaunching(finops_home, tmp_path):
    spec = _spec(tmp_path, run={"command": [sys.executable, "-c", "import sys; sys.exit(3)"]})
    with pytest.raises(AirflowFailException, match="failed: the job crashed \\(exit 3\\)"):
        _drive(_op(tmp_path, spec, [_cand("cpu-box", "spot", "1")]), _ctx())
    job, attempts = _store_rows(_job_id())
    assert [a.outcome for a in attempts] == ["failed"] and job.state == "failed"


@pytest.mark.slow
def test_deadline_at_risk_moves_a_spot_job_to_on_demand_from_its_checkpoint(finops_home, tmp_path):
    """The user's 1 ms/step claim plans the job well inside a 25 s deadline on spot; the real
    pace (~50 ms/step plus start-up) projects past it, so the trigger fires `deadline`: the
    spot attempt gets SIGTERM, saves, and the re-plan moves the rest to on-demand."""
    spec = _spec(
        tmp_path,
        steps=40,
        run={"module": "finops.jobs.example_train", "args": ["--step-sleep", "0.05"]},
        deadline=(datetime.now(UTC) + timedelta(seconds=25)).isoformat(),
        max_spot_preemptions=5,
    )
    cands = [
        _cand("cpu-box", "spot", "100", interruption_rate_per_h=0.01),
        _cand("cpu-box", "ondemand", "300"),
    ]
    result, events = _drive(_op(tmp_path, spec, cands), _ctx())
    assert [e["kind"] for e in events] == ["deadline", "ended"]
    job, (a1, a2) = _store_rows(_job_id())
    assert (a1.pricing_model, a1.outcome) == ("spot", "moved") and "observed" in a1.end_reason
    assert a1.steps_at_end >= 2 and a2.steps_at_start == a1.steps_at_end
    assert (a2.pricing_model, a2.outcome, a2.steps_at_end) == ("ondemand", "finished", 40)
    assert "spot ruled out: a spot attempt's pace missed the deadline" in a2.plan_table
    assert result["state"] == "finished" and job.state == "finished" and _live(tmp_path) == []
    log2 = provider_from_config({"kind": "local", "work_dir": str(tmp_path / "work")}).log_text(
        a2.instance_id
    )
    assert log2.startswith(f"start step={a1.steps_at_end} resumed=True")


def test_trigger_serializes_and_judges_budget_and_deadline(tmp_path):
    from finops.jobs.trigger import TrainingJobTrigger

    now = time.time()
    spec = _spec(tmp_path, budget_usd="10", deadline=datetime.fromtimestamp(now + 3600, UTC).isoformat())
    watch = {"job_id": "j", "attempt": 1, "instance_id": "local-x", "provider": {"kind": "local", "work_dir": "/w"},
             "spec": spec, "started_at": now - 360, "price_per_hour": "50", "spent_before": "4",
             "steps_at_start": 0, "spot": True}  # fmt: skip
    trig = _rebuild(TrainingJobTrigger(watch, poll_s=1.5))
    assert trig.serialize() == ("finops.jobs.trigger.TrainingJobTrigger", {"watch": watch, "poll_s": 1.5})
    # 6 minutes at $50/h = $5, plus $4 before: $9, under the $10 cap; 2 more minutes: over
    assert trig.check(None, now) is None
    assert trig.check(None, now + 120)["kind"] == "budget"
    # 10 of 40 steps in 6 min: 30 left take 18 min, inside the hour; 1 step in 6 min: 3.9 h, past it
    assert trig.check(10, now) is None
    verdict = trig.check(1, now)
    assert verdict["kind"] == "deadline" and verdict["steps_done"] == 1
    watch["spot"] = False  # on-demand is where the job goes when late: no deadline event there
    assert TrainingJobTrigger(watch).check(1, now) is None


def test_reaper_ends_instances_no_running_job_owns(finops_home, tmp_path):
    from finops.jobs.executor import reap

    spec = _spec(tmp_path)
    provider = provider_from_config({"kind": "local", "work_dir": str(tmp_path / "work")})
    with pytest.raises(TaskDeferred) as d:
        _op(tmp_path, spec, [_cand("cpu-box", "ondemand", "3")]).execute(_ctx())
    owned = d.value.trigger.watch["instance_id"]
    from finops.jobs.spec import parse_job_spec

    box = candidate_from_dict(_cand("cpu-box", "ondemand", "3"))
    orphan = provider.start(parse_job_spec(spec), 1, "fp32", box, {"finops-job-id": "job-unknown"})
    untagged = provider.start(parse_job_spec(spec), 1, "fp32", box, {})
    wh = connect()
    try:
        assert reap(JobStore(wh), provider, dry_run=True, run_id="r1") == [
            (orphan, "its job is not in training_jobs", "dry_run")
        ]
        assert {i for i, _ in provider.find()} == {owned, orphan, untagged}  # a dry run ends nothing
        assert reap(JobStore(wh), provider, dry_run=False, cap=0, run_id="r2")[0][2] == "capped"
        assert reap(JobStore(wh), provider, dry_run=False, run_id="r3")[0][2] == "ok"
        audit = wh.query(
            "SELECT run_id, resource_id, action, result, dry_run FROM policy_actions "
            "WHERE policy = 'training-job' ORDER BY run_id"
        )
    finally:
        wh.close()
    assert audit == [
        ("r1", orphan, "reap", "dry_run", True),
        ("r2", orphan, "reap", "capped", False),
        ("r3", orphan, "reap", "ok", False),
    ]
    assert {i for i, _ in provider.find()} == {owned, untagged}
    for iid in (owned, untagged):
        provider.terminate(iid)
    assert provider.find() == []


def test_dry_run_reads_candidates_from_the_warehouse(finops_home, tmp_path):
    op = _op(tmp_path, _spec(tmp_path), "warehouse")
    op.dry_run_flag = "true"
    out = op.execute(_ctx())  # nothing benchmarked or priced yet: nowhere to run
    assert (out["action"], out["reason"], out["candidate"]) == ("stop", "no candidate can run this job", None)


def test_a_failed_or_timed_out_trigger_tears_the_job_down(finops_home, tmp_path):
    from airflow.sdk.exceptions import TaskDeferralTimeout

    op = _op(tmp_path, _spec(tmp_path), [_cand("cpu-box", "ondemand", "3")])
    with pytest.raises(TaskDeferred):
        op.execute(_ctx())
    assert len(_live(tmp_path)) == 1
    # what Airflow does when the deferral times out: resume the task only to fail it
    with pytest.raises(TaskDeferralTimeout):
        op.resume_execution("__fail__", {"error": "Trigger timeout"}, _ctx())
    job, (att,) = _store_rows(_job_id())
    assert _live(tmp_path) == [] and att.outcome == "torn_down" and job.state == "failed"
