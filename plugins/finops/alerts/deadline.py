"""A DeadlineAlert on the billing DAGs: when a run's load has not finished by a configured time,
the alert routes hear of it (Airflow's scheduler checks the deadline; the callback runs in the
triggerer), even when the run is still queued, stuck or retrying and no task has failed yet.

finops.yaml, per billing DAG (provider):

    alerts:
      billing_deadlines:
        aws: "10:00"     # a daily DAG: by 10:00 UTC on the day of the scheduled run
        lambda: "45m"    # any schedule: 45 minutes after the scheduled time (also "2h", "1h30m")

"HH:MM" needs a daily cron schedule ("M H * * *"): the deadline is that time on the day the run
was scheduled for (the next day when it is earlier than the scheduled time). The reference is
the run's logical date, which for a scheduled run is its scheduled time; a manual run without a
logical date gets no deadline (Airflow skips it). Airflow drops a run's deadline when the run
succeeds; a run that failed has not landed either, so its deadline still fires (after the
task-failure alert).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from finops.alerts.model import AlertEvent
from finops.exceptions import ConfigError

if TYPE_CHECKING:
    from airflow.sdk.definitions.deadline import DeadlineAlert

_CLOCK = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")
_DURATION = re.compile(r"^(?:([0-9]{1,3})h)?(?:([0-9]{1,4})m)?$")
_DAILY_CRON = re.compile(r"^([0-9]{1,2}) ([0-9]{1,2}) \* \* \*$")
MAX_INTERVAL = timedelta(days=2)


def deadline_interval(spec: str, schedule: str | None, where: str = "alerts.billing_deadlines") -> timedelta:
    """The time after the run's scheduled time by which it must be done. A ConfigError names
    `where` when the spec cannot be read or does not fit the schedule."""
    spec = str(spec).strip()
    if m := _CLOCK.match(spec):
        daily = _DAILY_CRON.match((schedule or "").strip())
        if not daily or int(daily[1]) > 59 or int(daily[2]) > 23:
            raise ConfigError(
                f"{where}: {spec!r} is a time of day, which needs a daily schedule ('M H * * *'); "
                f"the DAG runs on {schedule!r}: give a duration after the scheduled time instead ('45m', '2h')"
            )
        due = timedelta(hours=int(m[1]), minutes=int(m[2]))
        scheduled = timedelta(hours=int(daily[2]), minutes=int(daily[1]))
        interval = (due - scheduled) % timedelta(days=1)
        return interval or timedelta(days=1)
    m = _DURATION.match(spec)
    if not spec or not m or not (m[1] or m[2]):
        raise ConfigError(
            f"{where}: {spec!r} is neither a UTC time 'HH:MM' nor a duration like '45m', '2h', '1h30m'"
        )
    interval = timedelta(hours=int(m[1] or 0), minutes=int(m[2] or 0))
    if not timedelta(0) < interval <= MAX_INTERVAL:
        raise ConfigError(f"{where}: {spec!r} must be more than 0 and at most {MAX_INTERVAL}")
    return interval


def billing_deadline(
    provider: str, schedule: str | None, deadlines: Mapping[str, str] | None = None
) -> DeadlineAlert | None:
    """The DeadlineAlert for finops_billing_<provider>, or None when finops.yaml sets none.
    `deadlines` defaults to alerts.billing_deadlines of the active finops.yaml; no config file at
    parse time means no deadline (the tasks report the missing file when they run)."""
    if deadlines is None:
        from finops.config import config_path, get_config

        if not config_path().exists():
            return None
        deadlines = {str(k): v for k, v in get_config().alerts.billing_deadlines.items()}
    spec = deadlines.get(provider)
    if not spec:
        return None
    interval = deadline_interval(spec, schedule, f"alerts.billing_deadlines.{provider}")
    from airflow.sdk.definitions.callback import AsyncCallback  # airflow.sdk exports both; its stub does not
    from airflow.sdk.definitions.deadline import DeadlineAlert, DeadlineReference

    return DeadlineAlert(
        reference=DeadlineReference.DAGRUN_LOGICAL_DATE,
        interval=interval,
        callback=AsyncCallback(billing_load_late, kwargs={"provider": provider, "due": str(spec)}),
        name=f"finops_billing_{provider} landed by {spec}",
    )


def deadline_event(provider: str, due: str, context: Mapping[str, Any] | None) -> AlertEvent:
    """The alert for a missed deadline, from the context Airflow hands a deadline callback
    ({"dag_run": <DAG run as JSON>, "deadline": {"id", "deadline_time"}})."""
    context = context or {}
    run = context.get("dag_run") or {}
    deadline = context.get("deadline") or {}
    dag_id = str(run.get("dag_id") or f"finops_billing_{provider}")
    run_id = str(run.get("run_id") or "?")
    facts = {
        "dag_id": dag_id,
        "run_id": run_id,
        "scheduled for": str(run.get("logical_date") or "?"),
        "deadline": str(deadline.get("deadline_time") or due),
        "run state": str(run.get("state") or "?"),
    }
    return AlertEvent(
        kind="billing_deadline_missed",
        title=f"Billing load for {provider} has not landed by {due}",
        severity="warning",
        summary=f"{dag_id} run {run_id} ({facts['run state']}) had not succeeded by its deadline; "
        "cost views, anomalies and budgets for this day use the data loaded before it.",
        facts=facts,
        dedup_key=f"billing_deadline_missed:{dag_id}:{run_id}",
    )


async def billing_load_late(provider: str, due: str, context: Mapping[str, Any] | None = None) -> None:
    """The DeadlineAlert callback (AsyncCallback: runs in the triggerer). Delivery is sync Slack /
    SMTP, so it runs on a worker thread and never blocks the triggerer's event loop."""
    from finops.alerts.events import emit

    errors = await asyncio.to_thread(emit, deadline_event(provider, due, context))
    if errors:  # the triggerer records the callback as failed, with the reason
        raise RuntimeError(f"{len(errors)} alert route(s) failed: " + "; ".join(map(str, errors)))
