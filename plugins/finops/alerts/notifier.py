"""The alert routes of finops.yaml as an Airflow notifier: `on_failure_callback=AlertRouteNotifier()`
(or on a DAG, or any other callback slot) sends the failure through the same Slack / e-mail
routes, escaping and dedup as every other FinOps alert (finops.alerts.events).

A BaseNotifier rather than a bare function so it is used the way Airflow users use SlackNotifier
or SmtpNotifier: templated fields, a list of notifiers per callback, and `async_notify` for the
triggerer (deadline alerts)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import BaseNotifier

from finops.alerts.events import AlertEvent, Severity, emit
from finops.alerts.task_failure import failure_event

log = logging.getLogger(__name__)


def dag_run_event(context: Mapping[str, Any]) -> AlertEvent:
    """A DAG-level callback (no task instance): which DAG run, and Airflow's reason."""
    dag = context.get("dag")
    dag_run = context.get("dag_run")
    dag_id = getattr(dag, "dag_id", None) or getattr(dag_run, "dag_id", "?")
    run_id = getattr(dag_run, "run_id", None) or context.get("run_id", "?")
    reason = str(context.get("reason") or "see the DAG run in the Airflow UI")
    return AlertEvent(
        kind="dag_run_failed",
        title=f"Airflow DAG run failed: {dag_id}",
        severity="critical",
        summary=reason[:600],
        facts={"dag_id": dag_id, "run_id": run_id},
        dedup_key=f"dag_run_failed:{dag_id}:{run_id}",
    )


class AlertRouteNotifier(BaseNotifier):
    """Send an Airflow callback to the finops.yaml alert routes.

    :param team: route to use (a team of finops.yaml); None: the default route. Templated.
    :param title: replaces the generated title. Templated.
    :param summary: replaces the generated summary (the redacted exception). Templated.
    :param severity: "info" | "warning" | "critical" (default critical).
    """

    template_fields: Sequence[str] = ("team", "title", "summary")

    def __init__(
        self,
        *,
        team: str | None = None,
        title: str | None = None,
        summary: str | None = None,
        severity: Severity = "critical",
    ) -> None:
        super().__init__()
        self.team = team
        self.title = title
        self.summary = summary
        self.severity = severity

    def event(self, context: Mapping[str, Any]) -> AlertEvent:
        has_ti = context.get("ti") or context.get("task_instance")
        event = failure_event(context) if has_ti else dag_run_event(context)
        changes: dict[str, Any] = {"severity": self.severity}
        for name in ("team", "title", "summary"):
            if value := getattr(self, name):
                changes[name] = str(value)
        return dataclasses.replace(event, **changes)

    def notify(self, context: Any) -> None:
        """Never raises: a broken alert path must not mask the task's own error (the sinks'
        errors are logged by emit and here)."""
        try:
            errors = emit(self.event(context))
        except Exception:  # noqa: BLE001
            log.exception("could not emit the alert for %s", self.__class__.__name__)
            return
        if errors:
            log.error("%d alert route(s) failed: %s", len(errors), "; ".join(map(str, errors)))

    async def async_notify(self, context: Any) -> None:
        """In the triggerer (deadline alerts): the sync delivery on a worker thread, so Slack / SMTP
        round trips never block the triggerer's event loop."""
        await asyncio.to_thread(self.notify, context)
