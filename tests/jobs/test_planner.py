"""Planner decisions on hand-computed figures.

The work: 36,000 steps. Checkpoints every 36 min (0.6 h); restart overhead 0.1 h, so a spot
interruption loses 0.6 / 2 + 0.1 = 0.4 h (finops.gpubench.pricing.expected_run).
- A100 on-demand $4/h, fp32 100 ms/step: 36,000 x 0.1 s = 1 h -> $4.00.
- A100 spot $1/h at 0.5 interruptions/h: 0.5 x 0.4 = 0.2 of every hour lost -> 1 / 0.8 = 1.25 h
  -> $1.25.
- L4 on-demand $1.50/h, 24 GiB: fp32 needs 40 GiB (rejected); amp_bf16 needs 20 GiB and runs
  150 ms/step -> 1.5 h -> $2.25.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from finops.jobs.planner import Candidate, JobState, deadline_at_risk, plan
from finops.jobs.spec import parse_job_spec
from tests.fixtures.jobs import job_spec_data

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
A100_OD = Candidate(
    "aws", "us-east-1", "p4d.24xlarge", "ondemand", Decimal("4"), 1, "A100", 80, {"fp32": 100.0}
)
A100_SPOT = Candidate(
    "aws", "us-east-1", "p4d.24xlarge", "spot", Decimal("1"), 1, "A100", 80, {"fp32": 100.0}, 0.5
)
L4_OD = Candidate(
    "gcp",
    "us-central1",
    "g2-standard-8",
    "ondemand",
    Decimal("1.50"),
    1,
    "L4",
    24,
    {"fp32": 300.0, "amp_bf16": 150.0},
)
ALL = [A100_OD, A100_SPOT, L4_OD]


def _spec(**over):
    base = {"min_gpu_memory_gib": 40, "min_gpu_memory_gib_amp": 20, "max_spot_preemptions": 2}
    return parse_job_spec(job_spec_data(**{**base, **over}))


def _row(decision, label, precision):
    return next(r for r in decision.rows if r.candidate == label and r.precision == precision)


def test_normal_takes_spot_when_interruptions_still_leave_it_cheapest():
    d = plan(_spec(), ALL, NOW)
    assert d.action == "launch" and d.candidate == A100_SPOT and d.precision == "fp32"
    assert d.expected_cost == Decimal("1.2500")
    assert d.expected_finish == NOW + timedelta(hours=1.25)
    assert _row(d, A100_OD.label, "fp32").expected_cost == Decimal("4.0000")
    assert _row(d, A100_OD.label, "fp32").why == "$2.75 more than the chosen candidate"
    assert _row(d, L4_OD.label, "amp_bf16").expected_cost == Decimal("2.2500")
    assert _row(d, L4_OD.label, "fp32").why == "needs 40 GiB GPU memory at fp32, has 24 GiB"
    assert _row(d, A100_OD.label, "amp_bf16").why == "no step time for A100 at amp_bf16"
    assert d.rows[0].chosen and sum(r.chosen for r in d.rows) == 1
    table = d.table()
    assert table.splitlines()[0].startswith("LAUNCH: normal:")
    assert "CHOSEN" in table and "1.25" in table and "2026-11-25 13:15" in table


def test_critical_takes_on_demand_first_even_when_spot_is_cheaper():
    d = plan(_spec(priority="critical"), ALL, NOW)
    assert d.candidate == L4_OD and d.precision == "amp_bf16" and d.expected_cost == Decimal("2.2500")
    assert (
        _row(d, A100_SPOT.label, "fp32").why
        == "passes, but the priority rule prefers the chosen pricing model"
    )


def test_critical_uses_spot_only_when_no_on_demand_passes():
    d = plan(_spec(priority="critical"), [A100_SPOT], NOW)
    assert d.candidate == A100_SPOT and d.reason.startswith("critical: no on-demand")


def test_opportunistic_waits_for_price_when_spot_exceeds_the_budget():
    d = plan(_spec(priority="opportunistic", budget_usd="1.00"), ALL, NOW)
    assert d.action == "wait" and d.candidate is None
    assert _row(d, A100_SPOT.label, "fp32").why == "expected $1.25 exceeds the $1.00 budget left"
    assert _row(d, A100_OD.label, "fp32").why == "opportunistic jobs run on spot only"


def test_deadline_moves_a_normal_job_to_on_demand():
    d = plan(_spec(deadline=(NOW + timedelta(hours=1.2)).isoformat()), ALL, NOW)
    assert d.candidate == A100_OD and d.expected_cost == Decimal("4.0000")
    assert _row(d, A100_SPOT.label, "fp32").why == "finishes 0.1 h after the deadline"
    assert _row(d, L4_OD.label, "amp_bf16").why == "finishes 0.3 h after the deadline"


def test_replan_after_preemptions_falls_back_to_a_smaller_gpu_with_amp():
    """Half done, $0.80 spent, 2 preemptions (the limit): 18,000 steps left. A100 on-demand
    0.5 h -> $2.00; L4 amp_bf16 0.75 h -> $1.125; spot is out."""
    state = JobState(steps_done=18_000, spent_usd=Decimal("0.80"), spot_preemptions=2)
    d = plan(_spec(budget_usd="10"), ALL, NOW, state)
    assert d.candidate == L4_OD and d.precision == "amp_bf16"
    assert d.expected_cost == Decimal("1.1250")
    assert d.expected_finish == NOW + timedelta(hours=0.75)
    assert _row(d, A100_SPOT.label, "fp32").why == "2 spot preemptions reached the limit (2)"
    assert _row(d, A100_OD.label, "fp32").expected_cost == Decimal("2.0000")


def test_one_preemption_below_the_limit_keeps_spot():
    d = plan(_spec(), ALL, NOW, JobState(steps_done=18_000, spot_preemptions=1))
    assert d.candidate == A100_SPOT and d.expected_cost == Decimal("0.6250")


def test_user_measured_step_time_wins_over_the_benchmark():
    spec = _spec(
        step_profile={
            "benchmark": "cuda-full",
            "measured": [{"gpu_model": "a100", "precision": "fp32", "step_ms": 200}],
        }
    )
    d = plan(spec, [A100_OD], NOW)
    assert d.expected_cost == Decimal("8.0000") and d.expected_finish == NOW + timedelta(hours=2)


def test_measured_only_profile_rejects_gpus_it_has_no_figure_for():
    spec = _spec(step_profile={"measured": [{"gpu_model": "L4", "precision": "amp_bf16", "step_ms": 150}]})
    d = plan(spec, ALL, NOW)
    assert d.candidate == L4_OD
    assert _row(d, A100_OD.label, "fp32").why == "no step time for A100 at fp32"


def test_budget_cap_reached_stops():
    d = plan(_spec(budget_usd="5"), ALL, NOW, JobState(spent_usd=Decimal("5.00")))
    assert d.action == "stop" and "budget cap $5 reached" in d.reason and d.rows == []


def test_nothing_within_budget_stops():
    d = plan(_spec(budget_usd="1.00"), ALL, NOW)
    assert d.action == "stop" and d.reason == "no candidate can finish within the budget left"


def test_no_candidate_meets_the_deadline_takes_the_earliest_finish():
    d = plan(_spec(deadline=(NOW + timedelta(minutes=30)).isoformat()), ALL, NOW)
    assert d.candidate == A100_OD and "earliest finish" in d.reason


def test_clouds_and_regions_filter():
    d = plan(_spec(clouds=["gcp"]), ALL, NOW)
    assert d.candidate == L4_OD
    assert _row(d, A100_SPOT.label, "fp32").why == "cloud aws not in the spec's clouds"
    d = plan(_spec(regions=["eu-west-1"]), ALL, NOW)
    assert d.action == "stop" and d.reason == "no candidate can run this job"
    assert _row(d, L4_OD.label, "amp_bf16").why == "region us-central1 not in the spec's regions"


def test_spot_interrupted_faster_than_it_progresses_is_rejected():
    storm = Candidate(
        "aws", "us-east-1", "p4d.24xlarge", "spot", Decimal("0.5"), 1, "A100", 80, {"fp32": 100.0}, 3.0
    )
    d = plan(_spec(), [storm, A100_OD], NOW)
    assert d.candidate == A100_OD
    assert "never finishes" in _row(d, storm.label, "fp32").why


def test_checkpoint_steps_shorter_than_minutes_shrink_the_loss():
    """Every 3,600 steps at 100 ms = 0.1 h: loss 0.05 + 0.1 = 0.15 h; 0.5 x 0.15 = 0.075
    -> 1 / 0.925 h x $1 = $1.0811."""
    d = plan(_spec(checkpoint_every_steps=3600), [A100_SPOT], NOW)
    assert d.expected_cost == Decimal("1.0811")


def test_all_steps_done_stops():
    assert plan(_spec(), ALL, NOW, JobState(steps_done=36_000)).action == "stop"


def test_deadline_at_risk_uses_the_observed_step_time():
    spec = _spec(deadline=(NOW + timedelta(hours=1)).isoformat())
    # 18,000 steps left: 150 ms -> 0.75 h (in time); 250 ms -> 1.25 h (late)
    assert not deadline_at_risk(spec, NOW, 18_000, 150.0)
    assert deadline_at_risk(spec, NOW, 18_000, 250.0)
    assert deadline_at_risk(spec, NOW, 18_000, 150.0, restart_overhead_h=0.3)
    assert not deadline_at_risk(_spec(), NOW, 0, 1e9)


def test_orchestrator_side_modules_import_no_airflow_torch_or_cloud_sdk():
    import subprocess
    import sys

    code = (
        "import sys, finops.jobs.spec, finops.jobs.planner, finops.jobs.local, finops.jobs.stores, "
        "finops.jobs.checkpoint; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'airflow', 'torch', 'boto3', 'numpy'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_naive_now_is_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        plan(_spec(), ALL, NOW.replace(tzinfo=None))
