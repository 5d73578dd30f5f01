"""Deferrable watch of one training-job attempt (runs in the triggerer, not a worker slot).

Polls the provider's instance state and the checkpoint store's newest complete step, and fires
one event when the operator has to act:
  {"kind": "ended", "status": "exited:<code>" | "gone"}   the attempt stopped running
  {"kind": "deadline", ...}   a spot attempt's observed pace ends past the deadline
  {"kind": "budget", ...}     the attempts so far plus this one's running cost reach the cap
Everything it needs travels in its kwargs (plain JSON), so a triggerer restart rebuilds it
from `serialize()`. Blocking calls (process table, S3) run in threads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from finops.jobs.checkpoint import newest_complete_step
from finops.jobs.executor import provider_from_config
from finops.jobs.planner import cost_of, deadline_at_risk
from finops.jobs.spec import parse_job_spec
from finops.jobs.stores import open_store


class TrainingJobTrigger(BaseTrigger):
    """Watch `watch` (finops.jobs.executor.Watch.as_dict()) every `poll_s` seconds."""

    def __init__(self, watch: dict[str, Any], poll_s: float = 30.0) -> None:
        super().__init__()
        self.watch = watch
        self.poll_s = poll_s

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("finops.jobs.trigger.TrainingJobTrigger", {"watch": self.watch, "poll_s": self.poll_s})

    def check(self, steps: int | None, now: float) -> dict[str, Any] | None:
        """The budget / deadline verdict for one poll (pure given its inputs)."""
        w = self.watch
        spec = parse_job_spec(w["spec"], "trigger spec")
        elapsed_h = max(now - float(w["started_at"]), 0.0) / 3600.0
        spent = Decimal(w["spent_before"]) + cost_of(Decimal(w["price_per_hour"]), elapsed_h)
        if spec.budget_usd is not None and spent >= spec.budget_usd:
            return {"kind": "budget", "spent_usd": str(spent),
                    "reason": f"estimated ${spent} reached the ${spec.budget_usd} budget cap"}  # fmt: skip
        done = max(steps or 0, int(w["steps_at_start"]))
        progressed = done - int(w["steps_at_start"])
        if w["spot"] and spec.deadline is not None and progressed > 0:
            step_ms = elapsed_h * 3_600_000.0 / progressed
            at = datetime.fromtimestamp(now, UTC)
            if deadline_at_risk(spec, at, done, step_ms):
                return {"kind": "deadline", "steps_done": done, "observed_step_ms": step_ms,
                        "reason": f"at the observed {step_ms:.0f} ms/step the {spec.steps - done} steps left "
                                  f"end after the deadline {spec.deadline.isoformat()}"}  # fmt: skip
        return None

    async def run(self) -> AsyncIterator[TriggerEvent]:
        w = self.watch
        provider = provider_from_config(w["provider"])
        store = await asyncio.to_thread(open_store, w["spec"]["checkpoint_uri"])
        base = {"job_id": w["job_id"], "attempt": w["attempt"], "instance_id": w["instance_id"]}
        polls = 0
        while True:
            polls += 1
            status = await asyncio.to_thread(provider.status, w["instance_id"])
            if status != "running":
                # when the end was seen: the attempt is billed to here, not to when a worker ran the
                # operator's next step
                yield TriggerEvent({**base, "kind": "ended", "status": status, "polls": polls,
                                    "observed_at": time.time()})  # fmt: skip
                return
            try:
                steps = await asyncio.to_thread(newest_complete_step, store)
            except Exception as e:  # noqa: BLE001 - a flaky store read is retried next poll
                self.log.warning("reading checkpoints of %s failed: %s", w["job_id"], e)
                steps = None
            verdict = self.check(steps, time.time())
            if verdict is not None:
                yield TriggerEvent({**base, **verdict, "polls": polls})
                return
            await asyncio.sleep(self.poll_s)

    async def on_kill(self) -> None:
        """A user failed or cleared the deferred task: end the instance now."""
        provider = provider_from_config(self.watch["provider"])
        await asyncio.to_thread(provider.terminate, self.watch["instance_id"], 0.0)
