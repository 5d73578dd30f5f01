"""The whole loop on the local provider: plan -> run real torch training in a subprocess ->
preempt -> re-plan -> resume from the newest checkpoint in S3 (moto server) -> finish."""

from __future__ import annotations

from decimal import Decimal

import boto3
import pytest

from finops.jobs.local import LocalProvider, run_job
from finops.jobs.planner import Candidate
from finops.jobs.spec import parse_job_spec

SPOT = Candidate("local", "here", "cpu-box", "spot", Decimal("1"), 1, "CPU", 8, {"fp32": 20.0}, 0.5)
ONDEMAND = Candidate("local", "here", "cpu-box", "ondemand", Decimal("4"), 1, "CPU", 8, {"fp32": 20.0})


@pytest.mark.slow
def test_spot_preemption_then_on_demand_fallback_finishes_from_the_checkpoint(
    moto_reset, monkeypatch, tmp_path
):
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_reset)
    boto3.client("s3", endpoint_url=moto_reset, region_name="us-east-1").create_bucket(Bucket="ckpts")
    spec = parse_job_spec(
        {
            "name": "demo-job",
            "team": "ml",
            "project": "p",
            "steps": 30,
            "max_spot_preemptions": 1,
            "run": {
                "module": "finops.jobs.example_train",
                "args": ["--every-steps", "4", "--step-sleep", "0.02", "--out", str(tmp_path / "final.pt")],
            },
            "step_profile": {"measured": [{"gpu_model": "CPU", "precision": "fp32", "step_ms": 20}]},
            "checkpoint_uri": "s3://ckpts/jobs/demo-job",
            "budget_usd": "10",
        }
    )

    def preempter(attempt, inst):
        # the spot attempt is reclaimed once it reports step 9: SIGTERM, then the job saves and exits
        return 30.0 if attempt == 1 and "step 9 loss" in inst.log_text() else None

    run = run_job(spec, [SPOT, ONDEMAND], LocalProvider(tmp_path / "work"), preempter)
    first, second = run.attempts
    assert run.outcome == "finished" and len(run.decisions) == 2
    assert (first.pricing_model, first.outcome, first.exit_code) == ("spot", "preempted", 143)
    assert 9 <= first.steps_at_end < 30  # SIGTERM saved at the step boundary it reached
    assert (second.pricing_model, second.outcome, second.exit_code) == ("ondemand", "finished", 0)
    assert second.steps_at_start == first.steps_at_end and second.steps_at_end == 30
    log2 = (tmp_path / "work" / "demo-job-attempt-2.log").read_text()
    assert log2.startswith(f"start step={first.steps_at_end} resumed=True")
    spot_row = next(r for r in run.decisions[1].rows if r.candidate == SPOT.label)
    assert spot_row.why == "1 spot preemptions reached the limit (1)"
    assert run.estimated_cost == first.estimated_cost + second.estimated_cost > 0
    assert (tmp_path / "final.pt").exists()


@pytest.mark.slow
def test_a_crash_is_not_retried_and_leaves_no_process(tmp_path):
    spec = parse_job_spec(
        {
            "name": "crash",
            "team": "ml",
            "project": "p",
            "steps": 5,
            "run": {"command": ["python3", "-c", "import sys; print('boom'); sys.exit(3)"]},
            "step_profile": {"measured": [{"gpu_model": "CPU", "precision": "fp32", "step_ms": 20}]},
            "checkpoint_uri": str(tmp_path / "ckpt"),
        }
    )
    run = run_job(spec, [ONDEMAND], LocalProvider(tmp_path / "work"))
    assert run.outcome == "failed" and [a.outcome for a in run.attempts] == ["failed"]
    assert run.attempts[0].exit_code == 3 and run.attempts[0].steps_at_end == 0


def test_budget_cap_stops_the_loop_after_a_preempted_attempt(tmp_path):
    """A spot attempt reclaimed at boot, before any checkpoint: no progress, and at $36,000/h
    its ~0.3 s already spend the $1 cap, so the re-plan stops the job instead of relaunching."""
    pricey = Candidate("local", "here", "cpu-box", "spot", Decimal("36000"), 1, "CPU", 8, {"fp32": 1.0}, 0.0)
    spec = parse_job_spec(
        {
            "name": "capped",
            "team": "ml",
            "project": "p",
            "steps": 5,
            "budget_usd": "1",
            "run": {"command": ["python3", "-c", "import time; time.sleep(60)"]},
            "step_profile": {"measured": [{"gpu_model": "CPU", "precision": "fp32", "step_ms": 1}]},
            "checkpoint_uri": str(tmp_path / "ckpt"),
        }
    )
    started = []

    def preempter(attempt, inst):
        started.append(inst.proc.pid)
        return 0.0 if len(started) > 3 else None  # a hard kill, a few polls after launch

    run = run_job(spec, [pricey], LocalProvider(tmp_path / "work"), preempter, poll_s=0.1)
    assert [a.outcome for a in run.attempts] == ["preempted"] and run.attempts[0].exit_code == -9
    assert run.attempts[0].steps_at_end == 0 and run.attempts[0].estimated_cost >= Decimal("1")
    assert run.outcome == "stopped" and "budget cap $1 reached" in run.decisions[-1].reason
