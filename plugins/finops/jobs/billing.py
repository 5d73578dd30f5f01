"""What each training job cost according to the bill: focus_costs rows joined back to jobs and
attempts by the tags every job instance carries, estimated vs billed, and showback per team.

A bill row belongs to a job when its FOCUS `tags` carry `finops-job-id` (AWS cost-allocation
tags arrive as `user:finops-job-id`; GCP labels and Azure tags as sent), and to an attempt by
`finops-attempt`; a row with the job tag but no attempt tag goes to the attempt whose instance
is its resource id. Rows with no job tag still count when their resource id is an attempt's
instance (AWS before the tag is activated for cost allocation). Tag keys are bound, never
spliced. Money is Decimal; only USD rows are summed as billed (the job estimates are USD),
rows in another currency are reported apart.

The "known cost" of a job sums, per attempt, the billed amount once the export has it and
the estimate until then; savings are what the same work would have cost all on-demand minus
that.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from finops.warehouse.dialect import json_get

JOB_TAG_KEYS = ("finops-job-id", "user:finops-job-id")
ATTEMPT_TAG_KEYS = ("finops-attempt", "user:finops-attempt")
_SLACK = timedelta(days=1)  # charge periods are hours / days: a row may start before the launch


class _Queryable(Protocol):
    dialect: str

    def query(self, sql: str, params: Sequence[Any] = ..., /) -> list[tuple[Any, ...]]: ...


@dataclass
class AttemptCost:
    attempt: int
    pricing_model: str
    instance_id: str | None
    estimated: Decimal
    billed: Decimal | None = None  # USD rows of the bill; None until the export has any

    @property
    def known(self) -> Decimal:
        return self.billed if self.billed is not None else self.estimated


@dataclass
class JobCost:
    job_id: str
    name: str
    team: str
    project: str
    state: str
    estimated: Decimal
    ondemand: Decimal | None
    attempts: list[AttemptCost] = field(default_factory=list)
    unattributed: Decimal = Decimal(0)  # job-tagged USD rows that name no attempt of it
    other_currency: dict[str, Decimal] = field(default_factory=dict)
    bill_rows: int = 0

    @property
    def billed(self) -> Decimal | None:
        """USD billed so far (None while the bill has no row of this job)."""
        if self.bill_rows == 0 and not any(a.billed is not None for a in self.attempts):
            return None
        return sum((a.billed or Decimal(0) for a in self.attempts), self.unattributed)

    @property
    def ran(self) -> list[AttemptCost]:
        """Attempts that got an instance (only those can appear on a bill)."""
        return [a for a in self.attempts if a.instance_id]

    @property
    def fully_billed(self) -> bool:
        return bool(self.ran) and all(a.billed is not None for a in self.ran)

    @property
    def known(self) -> Decimal:
        """Billed where the bill has it, estimated where not yet."""
        if not self.attempts:
            return self.estimated + self.unattributed
        return sum((a.known for a in self.attempts), self.unattributed)

    @property
    def savings(self) -> Decimal | None:
        return None if self.ondemand is None else self.ondemand - self.known


@dataclass
class TeamShowback:
    team: str
    jobs: int = 0
    estimated: Decimal = Decimal(0)
    billed: Decimal = Decimal(0)
    known: Decimal = Decimal(0)
    ondemand: Decimal = Decimal(0)
    savings: Decimal = Decimal(0)


def _dec(v: Any) -> Decimal:
    return Decimal(0) if v is None else Decimal(str(v))


def _bill_groups(db: _Queryable, since: datetime) -> list[tuple[Any, ...]]:
    """(job tag, attempt tag, resource_id, currency, billed, rows) of bill rows that carry a
    job tag or whose resource is an attempt's instance, charged since `since`."""
    jid_sql, jid_params = zip(*(json_get(db.dialect, "tags", k) for k in JOB_TAG_KEYS), strict=True)
    att_sql, att_params = zip(*(json_get(db.dialect, "tags", k) for k in ATTEMPT_TAG_KEYS), strict=True)
    inner = (
        f"SELECT COALESCE({', '.join(jid_sql)}) AS jid, COALESCE({', '.join(att_sql)}) AS att, resource_id, "
        "billing_currency, billed_cost FROM focus_costs WHERE charge_period_start >= ?"
    )
    params = [p for ps in (*jid_params, *att_params) for p in ps] + [since]
    return db.query(
        f"SELECT jid, att, resource_id, billing_currency, SUM(billed_cost), COUNT(*) FROM ({inner}) t "
        "WHERE jid IS NOT NULL OR resource_id IN "
        "(SELECT instance_id FROM training_job_attempts WHERE instance_id IS NOT NULL) "
        "GROUP BY jid, att, resource_id, billing_currency",
        params,
    )


def job_costs(db: _Queryable, job_ids: Iterable[str] | None = None, limit: int = 200) -> list[JobCost]:
    """Newest jobs first (or the named ones), each with its attempts' estimated and billed cost.
    Needs training_jobs / training_job_attempts; focus_costs may be absent (nothing billed)."""
    wanted = list(job_ids) if job_ids is not None else None
    if wanted is not None and not wanted:
        return []
    jsql = (
        "SELECT job_id, name, team, project, state, estimated_cost_usd, ondemand_cost_usd FROM training_jobs "
    )
    if wanted is None:
        rows = db.query(jsql + "ORDER BY created_at DESC, job_id LIMIT ?", [limit])
    else:
        rows = db.query(jsql + f"WHERE job_id IN ({', '.join('?' for _ in wanted)}) ORDER BY created_at DESC",
                        wanted)  # fmt: skip
    jobs = {
        r[0]: JobCost(job_id=r[0], name=r[1], team=r[2], project=r[3], state=r[4], estimated=_dec(r[5]),
                      ondemand=None if r[6] is None else _dec(r[6]))
        for r in rows
    }  # fmt: skip
    if not jobs:
        return []
    ids = list(jobs)
    earliest: datetime | None = None
    by_instance: dict[str, AttemptCost] = {}
    for job_id, n, pm, iid, est, started in db.query(
        "SELECT job_id, attempt, pricing_model, instance_id, estimated_cost_usd, started_at "
        f"FROM training_job_attempts WHERE job_id IN ({', '.join('?' for _ in ids)}) ORDER BY job_id, attempt",
        ids,
    ):
        att = AttemptCost(attempt=int(n), pricing_model=pm, instance_id=iid, estimated=_dec(est))
        jobs[job_id].attempts.append(att)
        if iid:
            by_instance[iid] = att
            if started is not None and (earliest is None or started < earliest):
                earliest = started
    if earliest is not None and _has_table(db, "focus_costs"):
        _attach_bill(db, jobs, by_instance, earliest - _SLACK)
    return list(jobs.values())


def _has_table(db: _Queryable, table: str) -> bool:
    rows = db.query(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?",
        [table],
    )
    return bool(rows and rows[0][0])


def _attach_bill(
    db: _Queryable, jobs: dict[str, JobCost], by_instance: dict[str, AttemptCost], since: datetime
) -> None:
    owner = {a.instance_id: j for j in jobs.values() for a in j.attempts if a.instance_id}
    by_lower = {k.lower(): j for k, j in jobs.items()}  # GCP label values are lower case
    for jid, att_tag, resource_id, currency, billed, n in _bill_groups(db, since):
        job = by_lower.get(str(jid).lower()) if jid is not None else None
        attempt: AttemptCost | None = None
        if job is not None:
            try:
                attempt = next(a for a in job.attempts if a.attempt == int(str(att_tag)))
            except (ValueError, StopIteration):
                hit = by_instance.get(resource_id) if resource_id else None
                attempt = hit if hit is not None and owner.get(resource_id) is job else None
        elif jid is None and resource_id in by_instance:
            attempt, job = by_instance[resource_id], owner[resource_id]
        if job is None:
            continue  # another job's row (outside this page) or a job no longer stored
        job.bill_rows += int(n)
        amount = _dec(billed)
        if currency != "USD":
            job.other_currency[currency] = job.other_currency.get(currency, Decimal(0)) + amount
        elif attempt is not None:
            attempt.billed = (attempt.billed or Decimal(0)) + amount
        else:
            job.unattributed += amount


def showback(costs: Iterable[JobCost]) -> list[TeamShowback]:
    """Per team: jobs, estimated, billed, known cost, all-on-demand and savings (largest first)."""
    teams: dict[str, TeamShowback] = {}
    for j in costs:
        t = teams.setdefault(j.team, TeamShowback(team=j.team))
        t.jobs += 1
        t.estimated += j.estimated
        t.billed += j.billed or Decimal(0)
        t.known += j.known
        if j.ondemand is not None:
            t.ondemand += j.ondemand
            t.savings += j.ondemand - j.known
    return sorted(teams.values(), key=lambda t: (-t.known, t.team))
