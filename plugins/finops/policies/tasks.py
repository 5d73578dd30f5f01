"""What the policy DAGs call (kept here so DAG files only wire tasks).

Loads policies + targets from `policies_dir`, runs each policy over every matching target
with one cap per policy per run, and returns a JSON-able summary for XCom / the task log.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from finops.exceptions import FinopsError
from finops.policies.engine import CapExceeded, PolicyRunError, run_policy
from finops.policies.model import Policy, PolicyError, Target, load_all

log = logging.getLogger(__name__)


class PolicyRunFailed(FinopsError, RuntimeError):
    """At least one policy aborted (cap) or had failed actions; all are audited. Not retried: a
    retry would run every other resource's actions again."""

    retryable = False


def policies_dir() -> Path:
    from finops.config import get_config
    from finops.paths import REPO_ROOT

    d = Path(get_config().policies_dir)
    return d if d.is_absolute() else REPO_ROOT / d


def select(
    kind: str | None = None,
    policy: str | None = None,
    provider: str | None = None,
    account: str | None = None,
    directory: Path | None = None,
) -> list[tuple[Policy, list[Target]]]:
    policies, targets = load_all(directory or policies_dir())
    chosen = [p for p in policies if (not kind or p.kind == kind) and (not policy or p.name == policy)]
    if policy and not chosen:
        raise PolicyError(
            f"no policy named {policy!r}; known: {', '.join(p.name for p in policies) or '(none)'}"
        )
    out = []
    for p in chosen:
        ts = [
            t
            for t in targets
            if t.provider in p.scope.providers
            and (not provider or t.provider == provider)
            and (not account or account in (t.account, t.name))
        ]
        out.append((p, ts))
    return out


def run_policies(
    *,
    kind: str | None,
    dry_run: bool,
    run_id: str,
    policy: str | None = None,
    provider: str | None = None,
    account: str | None = None,
    directory: Path | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Run the selected policies; every policy runs even when another aborts, then the task fails.
    AuditUnavailable (the audit log unwritable before any action) is not caught: nothing was
    attempted, so the task's retries may run it again."""
    from finops.policies.clouds import build_clouds
    from finops.warehouse import connect

    now = now or datetime.now(UTC)
    # accounts: the ids of every account evaluated (a target named in a filter resolves to its
    # account, from STS for AWS): the audit's report filters its rows, which carry ids, by them
    summary: dict[str, Any] = {"run_id": run_id, "dry_run": dry_run, "policies": {}}
    accounts: set[str] = set()
    failures: list[str] = []
    wh = connect()
    try:
        for pol, targets in select(kind, policy, provider, account, directory):
            if not targets:
                summary["policies"][pol.name] = {"skipped": "no target in scope"}
                continue
            clouds = [c for t in targets for c in build_clouds(t, pol)]
            accounts.update(c.inventory.scope[0] for c in clouds)
            try:
                res = run_policy(pol, clouds, wh, dry_run=dry_run, now=now, run_id=run_id)
                counts: dict[str, int] = {}
                for o in res.outcomes:
                    counts[o.action] = counts.get(o.action, 0) + 1
                summary["policies"][pol.name] = {"resources": len(res.outcomes), "actions": counts}
                if res.reconciled:  # rows an earlier, dead run left unfinished (also in the audit report)
                    summary["policies"][pol.name]["reconciled"] = [
                        f"{r.resource_id} {r.action} ({r.run_id}): {r.status}" for r in res.reconciled
                    ]
            except (CapExceeded, PolicyRunError) as e:
                summary["policies"][pol.name] = {"error": str(e)}
                failures.append(str(e))
    finally:
        wh.close()
    summary["accounts"] = sorted(accounts)
    log.info("policy run %s (dry_run=%s): %s", run_id, dry_run, summary["policies"])
    if failures:
        raise PolicyRunFailed("; ".join(failures))
    return summary


def effective_dry_run(param: bool, run_type: str | None) -> bool:
    """Manual runs obey the `dry_run` Param. Scheduled runs stay dry unless the Airflow
    Variable `finops_policy_enforce` is `true`: going live is a deliberate, visible switch."""
    if run_type == "manual":
        return bool(param)
    from airflow.sdk import Variable

    return str(Variable.get("finops_policy_enforce", default="false")).strip().lower() != "true"


def audit_report(
    *, period: str | None, provider: str | None, account: str | list[str] | None, policy: str | None
) -> str:
    """`account`: an account id, or the ids a filtered evaluation covered (a target name in the
    form is not what the audit rows carry)."""
    from finops.policies.report import violations_report
    from finops.warehouse import connect

    wh = connect()
    try:
        rep = violations_report(wh, period=period, provider=provider, account=account, policy=policy)
    finally:
        wh.close()
    log.info("violations report saved to %s\n%s", rep.path, rep.text)
    return rep.text
