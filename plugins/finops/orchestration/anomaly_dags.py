"""The two anomaly DAGs, finops_anomalies and finops_anomalies_teams (the files in dags/ call
`build_anomaly_dag`; the logic is in finops.anomaly and finops.allocation.tasks).

The monitors are split by the table they read (finops.anomaly.settings.source_of), and each
half is scheduled on the asset that announces that table:
  finops_anomalies        provider / service / account / tag monitors, on finops://focus_costs
                          (the billing DAGs): these alert whether or not showback succeeds;
  finops_anomalies_teams  team monitors, on finops://showback (finops_showback, once every
                          period of its run is allocated): scheduled on the billing asset as
                          well, they started with showback from the same event and scored teams
                          on the previous, or a half-rewritten, showback.
Not AssetAll(focus_costs, showback) for either: a failed showback would hold back the
provider alerts, and a showback re-run by hand (no billing event) would never score teams.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, Param, dag, get_current_context, task

from finops.orchestration.assets import FOCUS_COSTS, SHOWBACK
from finops.orchestration.defaults import default_args

if TYPE_CHECKING:
    from finops.anomaly.settings import Source

# scoring the lookback (120 days by default) of every monitor; a hung run must not hold
# max_active_runs=1 until the next billing event
TASK_TIMEOUT = timedelta(hours=1)
ASSET_OF: dict[Source, Asset] = {"focus_costs": FOCUS_COSTS, "showback": SHOWBACK}
"""The Asset that announces each monitor source's table."""


def anomaly_params() -> dict[str, Param]:
    return {
        "send_alerts": Param(
            True,
            type="boolean",
            title="Send alerts",
            description="Deliver new anomalies to the configured Slack / e-mail routes. "
            "Off: detect and store only (dry run).",
        ),
        "lookback_days": Param(
            0,
            type="integer",
            minimum=0,
            maximum=730,
            title="Lookback days",
            description="History used for the baseline; 0 = anomaly.lookback_days from "
            "finops.yaml (default 120).",
        ),
    }


def build_anomaly_dag(dag_id: str, source: Source, description: str, doc_md: str) -> Any:
    """One DAG running the monitors of `source` ("focus_costs" | "showback") each time the
    Asset of that table is announced."""

    @dag(
        dag_id=dag_id,
        description=description,
        schedule=[ASSET_OF[source]],
        start_date=datetime(2026, 1, 1, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(execution_timeout=TASK_TIMEOUT),
        params=anomaly_params(),
        tags=["finops", "anomaly", "alerts"],
        doc_md=doc_md,
    )
    def anomalies() -> None:
        @task
        def detect() -> dict:
            from finops.allocation.tasks import run_anomalies_task

            p = get_current_context()["params"]
            res = run_anomalies_task(
                bool(p.get("send_alerts", True)), int(p.get("lookback_days") or 0) or None, source=source
            )
            print(
                f"anomalies ({source}): {len(res['new'])} new, {len(res['updated'])} updated, "
                f"{len(res['alerted'])} alerted"
            )
            return res

        detect()

    return anomalies()
