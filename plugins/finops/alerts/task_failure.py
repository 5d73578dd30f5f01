"""on_failure_callback of every finops DAG: a task that failed for good (retries spent, or a
fail-at-once error) reaches the default alert route (Slack / e-mail), not only its task log.
Without it, expired credentials on a scheduled billing or policy run failed in silence.

Why our own callback and not a provider notifier: the routes (which Slack connection, which
recipients) live in finops.yaml and are shared with every other alert, with one escaping and
dedup path (finops.alerts.events)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from finops.alerts.events import AlertEvent, emit

log = logging.getLogger(__name__)

_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")


def _redacted(text: str) -> str:
    """Exception text without secrets: Airflow's masker (connection passwords, variables it has
    seen) plus credentials in URLs, cut to a readable length."""
    try:
        from airflow.sdk.log import redact

        text = str(redact(text))
    except Exception:  # noqa: BLE001 - masking is best effort; the URL rule below still applies
        log.debug("secrets masker unavailable", exc_info=True)
    return _URL_CREDENTIALS.sub(r"\1***@", text)[:600]


def failure_event(context: Mapping[str, Any]) -> AlertEvent:
    ti = context.get("ti") or context.get("task_instance")
    dag_id, task_id = getattr(ti, "dag_id", "?"), getattr(ti, "task_id", "?")
    run_id, map_index = getattr(ti, "run_id", "?"), getattr(ti, "map_index", -1)
    exc = context.get("exception")
    summary = _redacted(f"{type(exc).__name__}: {exc}") if exc is not None else "see the task log"
    facts: dict[str, Any] = {"dag_id": dag_id, "task_id": task_id, "run_id": run_id}
    if map_index is not None and map_index >= 0:
        facts["map_index"] = map_index
        facts["failed_map_indexes"] = _failed_map_indexes(ti)
    if (tries := getattr(ti, "try_number", None)) is not None:
        facts["try_number"] = tries
    return AlertEvent(
        kind="task_failed",
        title=f"Airflow task failed: {dag_id}.{task_id}",
        severity="critical",
        summary=summary,
        facts=facts,
        # one alert per DAG run + task: the map indexes of a mapped task fail together (expired
        # credentials fail every partition); the ledger delivers the first and drops the rest
        dedup_key=f"task_failed:{dag_id}:{task_id}:{run_id}",
    )


def _failed_map_indexes(ti: Any) -> str:
    """'k of n (so far)': the task's failed map indexes in this run when the alert goes out
    (this one included, whether or not its own state is written yet). The later ones are not
    alerted again: the task log and the grid show them."""
    try:
        count = ti.get_ti_count
        scope = {"dag_id": ti.dag_id, "task_ids": [ti.task_id], "run_ids": [ti.run_id]}
        total = count(**scope)
        failed = count(**scope, states=["failed"])
        if not count(**scope, map_index=ti.map_index, states=["failed"]):
            failed += 1  # this index's failure is not recorded until its callback returns
        return f"{failed} of {total} (so far)"
    except Exception:  # noqa: BLE001 - outside a task process (no supervisor to ask): say what is known
        log.debug("could not count failed map indexes", exc_info=True)
        return "1 or more (count unavailable)"


def task_failed(context: Mapping[str, Any]) -> None:
    """The callback itself: never raises (a broken alert path must not mask the task's error)."""
    try:
        emit(failure_event(context))
    except Exception:  # noqa: BLE001
        log.exception("could not emit the task-failure alert")
