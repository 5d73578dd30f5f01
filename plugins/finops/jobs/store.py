"""The job and attempt tables (warehouse migration 700): read and write one job's record.

The executor writes an attempt row *before* it asks a provider for an instance (outcome
`launching`) and fills the instance id in after, so a task that dies in between leaves a row
a retry can resolve by the instance's tags. Every value is bound, never spliced into SQL.
Timestamps are naive UTC, like the rest of the warehouse.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from finops.warehouse.base import Warehouse

_AUDIT_COLS = (
    "action_id", "run_id", "policy", "policy_kind", "provider", "account", "region", "resource_id",
    "resource_name", "owner", "decision", "action", "result", "reason", "dry_run", "evidence", "created_at",
    "status", "updated_at",
)  # fmt: skip
TERMINAL = ("finished", "stopped", "failed", "dry_run")
OPEN_OUTCOMES = ("launching", "running")


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _naive(ts: datetime | None) -> datetime | None:
    if ts is None or ts.tzinfo is None:
        return ts
    return ts.astimezone(UTC).replace(tzinfo=None)


def _dec(v: Any) -> Decimal | None:
    return None if v is None else Decimal(str(v))


@dataclass
class JobRecord:
    job_id: str
    name: str
    team: str
    project: str
    spec_json: str
    state: str
    steps_total: int
    dag_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    state_reason: str | None = None
    plan_table: str | None = None
    steps_done: int = 0
    spot_preemptions: int = 0
    spot_allowed: bool = True
    excluded: list[str] = field(default_factory=list)
    budget_usd: Decimal | None = None
    estimated_cost_usd: Decimal = Decimal(0)
    ondemand_cost_usd: Decimal | None = None
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)
    finished_at: datetime | None = None

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL


@dataclass
class AttemptRecord:
    job_id: str
    attempt: int
    provider: str
    region: str
    instance_type: str
    pricing_model: str
    precision: str
    price_per_hour: Decimal
    started_at: datetime
    steps_at_start: int
    outcome: str = "launching"
    instance_id: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    ended_at: datetime | None = None
    steps_at_end: int | None = None
    estimated_cost_usd: Decimal = Decimal(0)
    launch_reason: str | None = None
    end_reason: str | None = None
    plan_table: str | None = None

    @property
    def label(self) -> str:
        """The planner's Candidate.label of the place this attempt ran."""
        return f"{self.provider}/{self.region}/{self.instance_type} {self.pricing_model}"


_JOB_COLS = (
    "job_id", "name", "team", "project", "dag_id", "run_id", "task_id", "spec_json", "state",
    "state_reason", "plan_table", "steps_total", "steps_done", "spot_preemptions", "spot_allowed",
    "excluded_json", "budget_usd", "estimated_cost_usd", "ondemand_cost_usd", "created_at",
    "updated_at", "finished_at",
)  # fmt: skip
_ATT_COLS = (
    "job_id", "attempt", "provider", "region", "instance_type", "pricing_model", "precision_mode",
    "price_per_hour", "instance_id", "tags_json", "started_at", "ended_at", "steps_at_start",
    "steps_at_end", "estimated_cost_usd", "outcome", "launch_reason", "end_reason", "plan_table",
)  # fmt: skip


def _job_values(j: JobRecord) -> list[Any]:
    return [
        j.job_id, j.name, j.team, j.project, j.dag_id, j.run_id, j.task_id, j.spec_json, j.state,
        j.state_reason, j.plan_table, j.steps_total, j.steps_done, j.spot_preemptions, j.spot_allowed,
        json.dumps(j.excluded), j.budget_usd, j.estimated_cost_usd, j.ondemand_cost_usd,
        _naive(j.created_at), _naive(j.updated_at), _naive(j.finished_at),
    ]  # fmt: skip


def _att_values(a: AttemptRecord) -> list[Any]:
    return [
        a.job_id, a.attempt, a.provider, a.region, a.instance_type, a.pricing_model, a.precision,
        a.price_per_hour, a.instance_id, json.dumps(a.tags, sort_keys=True), _naive(a.started_at),
        _naive(a.ended_at), a.steps_at_start, a.steps_at_end, a.estimated_cost_usd, a.outcome,
        a.launch_reason, a.end_reason, a.plan_table,
    ]  # fmt: skip


def _job(row: tuple[Any, ...]) -> JobRecord:
    d = dict(zip(_JOB_COLS, row, strict=True))
    return JobRecord(
        job_id=d["job_id"], name=d["name"], team=d["team"], project=d["project"], spec_json=d["spec_json"],
        state=d["state"], steps_total=int(d["steps_total"]), dag_id=d["dag_id"], run_id=d["run_id"],
        task_id=d["task_id"], state_reason=d["state_reason"], plan_table=d["plan_table"],
        steps_done=int(d["steps_done"]), spot_preemptions=int(d["spot_preemptions"]),
        spot_allowed=bool(d["spot_allowed"]), excluded=json.loads(d["excluded_json"] or "[]"),
        budget_usd=_dec(d["budget_usd"]), estimated_cost_usd=_dec(d["estimated_cost_usd"]) or Decimal(0),
        ondemand_cost_usd=_dec(d["ondemand_cost_usd"]), created_at=d["created_at"], updated_at=d["updated_at"],
        finished_at=d["finished_at"],
    )  # fmt: skip


def _attempt(row: tuple[Any, ...]) -> AttemptRecord:
    d = dict(zip(_ATT_COLS, row, strict=True))
    return AttemptRecord(
        job_id=d["job_id"], attempt=int(d["attempt"]), provider=d["provider"], region=d["region"],
        instance_type=d["instance_type"], pricing_model=d["pricing_model"], precision=d["precision_mode"],
        price_per_hour=_dec(d["price_per_hour"]) or Decimal(0), started_at=d["started_at"],
        steps_at_start=int(d["steps_at_start"]), outcome=d["outcome"], instance_id=d["instance_id"],
        tags=json.loads(d["tags_json"] or "{}"), ended_at=d["ended_at"],
        steps_at_end=None if d["steps_at_end"] is None else int(d["steps_at_end"]),
        estimated_cost_usd=_dec(d["estimated_cost_usd"]) or Decimal(0), launch_reason=d["launch_reason"],
        end_reason=d["end_reason"], plan_table=d["plan_table"],
    )  # fmt: skip


class JobStore:
    """training_jobs / training_job_attempts on any warehouse backend."""

    def __init__(self, wh: Warehouse) -> None:
        self.wh = wh

    def create_job(self, job: JobRecord) -> bool:
        """Insert the job unless its id exists (a retry); True when this call created it."""
        if self.get_job(job.job_id) is not None:
            return False
        marks = ", ".join("?" for _ in _JOB_COLS)
        self.wh.execute(
            f"INSERT INTO training_jobs ({', '.join(_JOB_COLS)}) VALUES ({marks})", _job_values(job)
        )
        return True

    def save_job(self, job: JobRecord) -> None:
        job.updated_at = utcnow()
        cols = _JOB_COLS[1:]
        sets = ", ".join(f"{c} = ?" for c in cols)
        self.wh.execute(
            f"UPDATE training_jobs SET {sets} WHERE job_id = ?", [*_job_values(job)[1:], job.job_id]
        )

    def get_job(self, job_id: str) -> JobRecord | None:
        rows = self.wh.query(f"SELECT {', '.join(_JOB_COLS)} FROM training_jobs WHERE job_id = ?", [job_id])
        return _job(rows[0]) if rows else None

    def jobs(self, limit: int = 200) -> list[JobRecord]:
        rows = self.wh.query(
            f"SELECT {', '.join(_JOB_COLS)} FROM training_jobs ORDER BY created_at DESC, job_id LIMIT ?",
            [limit],
        )
        return [_job(r) for r in rows]

    def add_attempt(self, att: AttemptRecord) -> None:
        marks = ", ".join("?" for _ in _ATT_COLS)
        self.wh.execute(
            f"INSERT INTO training_job_attempts ({', '.join(_ATT_COLS)}) VALUES ({marks})", _att_values(att)
        )

    def save_attempt(self, att: AttemptRecord) -> None:
        cols = _ATT_COLS[2:]
        sets = ", ".join(f"{c} = ?" for c in cols)
        self.wh.execute(
            f"UPDATE training_job_attempts SET {sets} WHERE job_id = ? AND attempt = ?",
            [*_att_values(att)[2:], att.job_id, att.attempt],
        )

    def attempts(self, job_id: str) -> list[AttemptRecord]:
        rows = self.wh.query(
            f"SELECT {', '.join(_ATT_COLS)} FROM training_job_attempts WHERE job_id = ? ORDER BY attempt",
            [job_id],
        )
        return [_attempt(r) for r in rows]

    def open_attempt(self, job_id: str) -> AttemptRecord | None:
        """The attempt that is launching or running, if any (there is at most one)."""
        live = [a for a in self.attempts(job_id) if a.outcome in OPEN_OUTCOMES]
        return live[-1] if live else None

    def audit(
        self,
        *,
        run_id: str,
        provider: str,
        resource_id: str,
        action: str,
        result: str,
        dry_run: bool,
        reason: str,
        evidence: dict[str, Any] | None = None,
    ) -> None:
        """One row in the shared audit log (policy_actions, migration 200), policy `training-job`."""
        at = utcnow()
        status = "failed" if result == "failed" else "done"
        row = [uuid.uuid4().hex, run_id, "training-job", "job_reaper", provider, None, None, resource_id, None,
               None, action, action, result, reason[:2000], dry_run, json.dumps(evidence or {}, default=str), at,
               status, at]  # fmt: skip
        self.wh.execute(f"INSERT INTO policy_actions ({', '.join(_AUDIT_COLS)}) VALUES "
                        f"({', '.join('?' for _ in _AUDIT_COLS)})", row)  # fmt: skip

    def find_by_instance(self, instance_id: str) -> AttemptRecord | None:
        rows = self.wh.query(
            f"SELECT {', '.join(_ATT_COLS)} FROM training_job_attempts WHERE instance_id = ?", [instance_id]
        )
        return _attempt(rows[0]) if rows else None
