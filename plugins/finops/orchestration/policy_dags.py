"""The policy DAGs: finops_policy_tags / finops_policy_idle (build_policy_dag) and the manual
finops_audit (build_audit_dag); the files in dags/ call these, the logic is in finops.policies.

Cap aborts and audited per-resource failures (a metric read or an action, after the client's
own retries) fail the task at once: a retry would re-run the other resources' actions too;
other errors (an inventory listing failing, the audit log unwritable before the first action)
retry with exponential backoff. Re-running is safe: every decision is recomputed from the
clouds' current state, and a row an attempt killed mid-action left pending is reconciled by
the next one (finops.policies.engine)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Param, dag, get_current_context, task

from finops.orchestration.defaults import default_args

# A run that never ends (an inventory call or a warehouse lock wait that hangs) would hold
# its worker slot and, with max_active_runs=1, stall every later run: no idle GPU stopped.
TASK_TIMEOUT = timedelta(hours=2)
MAX_RETRY_DELAY = timedelta(minutes=20)
PROVIDERS = ["all", "aws", "gcp", "azure", "lambda"]


def _dry_run_param() -> Param:
    return Param(
        True,
        type="boolean",
        title="Dry run",
        description="Report what would happen without tagging, stopping or terminating anything "
        "(scheduled runs stay dry unless the Variable finops_policy_enforce is true).",
    )


def _run(kind: str | None, params: dict[str, Any]) -> dict[str, Any]:
    from airflow.sdk.exceptions import AirflowFailException

    from finops.orchestration.failures import fail_on_bad_input
    from finops.policies.tasks import effective_dry_run, run_policies

    ctx = get_current_context()
    run_type = str(getattr(ctx["dag_run"], "run_type", "") or "").split(".")[-1].lower()
    dry = effective_dry_run(bool(params.get("dry_run", True)), run_type)
    provider = params.get("provider") if params.get("provider") not in (None, "", "all") else None
    account = params.get("account") or None
    # an unknown policy name, a bad policy file (PolicyError), a cap abort or failed actions
    # (PolicyRunFailed, see above): none is retried
    with fail_on_bad_input():
        summary = run_policies(
            kind=kind,
            dry_run=dry,
            run_id=ctx["run_id"],
            provider=provider,
            account=account,
            policy=params.get("policy") or None,
        )
    if (provider or account) and not _evaluated(summary):
        # a typo in the form must not read as "no violations"
        raise AirflowFailException(
            f"no policy has a configured target matching {_scope(provider, account)}: "
            f"nothing was evaluated; configured targets: {_targets()}"
        )
    return summary


def _evaluated(summary: dict[str, Any]) -> bool:
    return any("skipped" not in res for res in summary.get("policies", {}).values())


def _scope(provider: str | None, account: str | None) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (("provider", provider), ("account", account)) if v)


def _targets() -> str:
    from finops.policies.model import load_all
    from finops.policies.tasks import policies_dir

    _, targets = load_all(policies_dir())
    return (
        ", ".join(f"{t.name} ({t.provider}{', ' + t.account if t.account else ''})" for t in targets)
        or "(none)"
    )


def build_policy_dag(
    kind: str, dag_id: str, schedule: str, description: str, *, execution_timeout: timedelta = TASK_TIMEOUT
) -> Any:
    """`execution_timeout`: shorter than the schedule's interval, so a hung run ends before the next."""

    @dag(
        dag_id=dag_id,
        schedule=schedule,
        start_date=datetime(2026, 1, 1, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(execution_timeout=execution_timeout, max_retry_delay=MAX_RETRY_DELAY),
        description=description,
        tags=["finops", "policies"],
        params={"dry_run": _dry_run_param()},
    )
    def policy_dag() -> None:
        @task(task_id=f"enforce_{kind}")
        def enforce() -> dict[str, Any]:
            return _run(kind, dict(get_current_context()["params"]))

        enforce()

    return policy_dag()


def build_audit_dag() -> Any:
    @dag(
        dag_id="finops_audit",
        schedule=None,
        start_date=datetime(2026, 1, 1, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(execution_timeout=TASK_TIMEOUT, max_retry_delay=MAX_RETRY_DELAY),
        description="Ad-hoc policy audit: evaluate tag and idle policies, then a violations report with costs",
        tags=["finops", "policies", "audit"],
        params={
            "provider": Param(
                "all",
                type="string",
                enum=PROVIDERS,
                title="Provider",
                description="Only targets of this cloud (all = every configured target).",
            ),
            "account": Param(
                "",
                type="string",
                title="Account",
                description="Target name or account / project / subscription id; empty = all.",
            ),
            "policy": Param(
                "",
                type="string",
                title="Policy",
                description="One policy name from include/policies; empty = every policy.",
            ),
            "billing_period": Param(
                "",
                type="string",
                pattern=r"^([0-9]{4}-(0[1-9]|1[0-2]))?$",
                title="Billing period",
                description="YYYY-MM for the cost join; empty = the current month.",
            ),
            "dry_run": Param(
                True,
                type="boolean",
                title="Dry run",
                description="Evaluate and audit only; nothing is tagged, stopped or terminated.",
            ),
        },
    )
    def audit_dag() -> None:
        @task(task_id="evaluate_policies")
        def evaluate() -> dict[str, Any]:
            return _run(None, dict(get_current_context()["params"]))

        @task(task_id="violations_report")
        def report(evaluated: dict[str, Any]) -> str:
            from finops.policies.tasks import audit_report

            p = get_current_context()["params"]
            provider = p.get("provider") if p.get("provider") not in (None, "", "all") else None
            # the form's account may name a target; the audit rows carry account ids: filter by
            # the ids the evaluation covered
            account = list(evaluated.get("accounts") or []) if p.get("account") else None
            return audit_report(
                period=p.get("billing_period") or None,
                provider=provider,
                account=account,
                policy=p.get("policy") or None,
            )

        # TaskFlow resolves the XComArg to evaluate()'s dict at run time; Airflow's @task
        # typing declares the call with the function's own parameter types.
        report(evaluate())  # type: ignore[arg-type]

    return audit_dag()
