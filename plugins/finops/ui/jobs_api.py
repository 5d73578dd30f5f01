"""JSON endpoints of the Training jobs page (GET only): each job's state, estimated cost, what
the same work would have cost all on-demand and what the bill says once the export arrives
(focus_costs rows joined by the job / attempt tags, finops.jobs.billing), showback per team,
and per job its attempts for a timeline with the reason for every move and each attempt's
billed cost. Reads training_jobs / training_job_attempts."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path

from finops.jobs.billing import job_costs, showback
from finops.ui.api import ReaderDep
from finops.ui.queries import _iso, empty, money

router = APIRouter(prefix="/api/jobs")
_TABLES = ("training_jobs", "training_job_attempts")
JobId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


@router.get("")
def jobs(r: ReaderDep) -> dict[str, Any]:
    """Newest jobs first, with estimated vs billed and the savings against all on-demand (on the
    billed cost where the bill has it, the estimate where not yet)."""
    if r.missing(*_TABLES):
        return empty("No training job has run yet (finops_training_job).")
    costs = {c.job_id: c for c in job_costs(r.warehouse)}
    items = []
    for (job_id, name, team, project, state, reason, steps_done, steps_total, est, od, preempt, created,
         finished, n) in r.query(
        "SELECT j.job_id, j.name, j.team, j.project, j.state, j.state_reason, j.steps_done, j.steps_total, "
        "j.estimated_cost_usd, j.ondemand_cost_usd, j.spot_preemptions, j.created_at, j.finished_at, "
        "(SELECT COUNT(*) FROM training_job_attempts a WHERE a.job_id = j.job_id) "
        "FROM training_jobs j ORDER BY j.created_at DESC, j.job_id LIMIT 200"
    ):  # fmt: skip
        c = costs.get(job_id)
        items.append({
            "job_id": job_id, "name": name, "team": team, "project": project, "state": state, "reason": reason,
            "steps_done": int(steps_done), "steps_total": int(steps_total), "attempts": int(n),
            "spot_preemptions": int(preempt), "estimated": money(est or 0), "ondemand": money(od),
            "savings": money(c.savings) if c else None, "billed": money(c.billed) if c else None,
            "known": money(c.known) if c else money(est), "fully_billed": bool(c and c.fully_billed),
            "billed_other_currency": {k: money(v) for k, v in c.other_currency.items()} if c else {},
            "created_at": _iso(created), "finished_at": _iso(finished),
        })  # fmt: skip
    return {"items": items}


@router.get("/showback")
def team_showback(r: ReaderDep) -> dict[str, Any]:
    """Per team over the newest 200 jobs: estimated, billed, known cost, all on-demand, savings."""
    if r.missing(*_TABLES):
        return empty("No training job has run yet (finops_training_job).")
    return {"items": [
        {"team": t.team, "jobs": t.jobs, "estimated": money(t.estimated), "billed": money(t.billed),
         "known": money(t.known), "ondemand": money(t.ondemand), "savings": money(t.savings)}
        for t in showback(job_costs(r.warehouse))
    ]}  # fmt: skip


@router.get("/{job_id}/attempts")
def attempts(r: ReaderDep, job_id: JobId) -> dict[str, Any]:
    """One job's attempts in order: place, pricing model, precision, start / end (a timeline),
    steps, estimated cost, outcome, why it was launched and why it ended; the latest plan."""
    if r.missing(*_TABLES):
        raise HTTPException(404, "no training jobs yet")
    job = r.query("SELECT plan_table, state FROM training_jobs WHERE job_id = ?", [job_id])
    if not job:
        raise HTTPException(404, "no such job")
    billed = {a.attempt: a.billed for c in job_costs(r.warehouse, [job_id]) for a in c.attempts}
    items = [
        {"attempt": int(n), "place": f"{prov}/{region}/{itype}", "pricing_model": pm, "precision": prec,
         "price_per_hour": str(price), "instance_id": iid, "started_at": _iso(start), "ended_at": _iso(end),
         "steps_at_start": int(s0), "steps_at_end": None if s1 is None else int(s1), "estimated": money(cost),
         "billed": money(billed.get(int(n))), "outcome": outcome, "launch_reason": why_in, "end_reason": why_out}
        for (n, prov, region, itype, pm, prec, price, iid, start, end, s0, s1, cost, outcome, why_in, why_out)
        in r.query(
            "SELECT attempt, provider, region, instance_type, pricing_model, precision_mode, price_per_hour, "
            "instance_id, started_at, ended_at, steps_at_start, steps_at_end, estimated_cost_usd, outcome, "
            "launch_reason, end_reason FROM training_job_attempts WHERE job_id = ? ORDER BY attempt",
            [job_id],
        )
    ]  # fmt: skip
    return {"job_id": job_id, "state": job[0][1], "plan": job[0][0], "items": items}
