"""Violations report: actions whose outcome nobody recorded (first: the call may have happened),
non-compliant resources (latest tag snapshot) per team with the month's cost joined from
`focus_costs` on resource id, plus the idle-policy decisions of the last days.

Saved under FINOPS_HOME/reports (text + CSV) and returned as text for the task log. Team
names are tag values (hostile input): bound in SQL, neutralised in CSV cells."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from finops.alerts.csv_safe import write_csv
from finops.paths import subdir
from finops.policies.audit import PENDING, UNKNOWN
from finops.warehouse.base import Warehouse


@dataclass
class ViolationsReport:
    text: str
    path: Path
    csv_path: Path
    teams: list[tuple[str, int, Decimal, str | None]]  # team, resources, cost, currency
    # created_at, policy, provider, resource_id, action, dry_run, run_id, status, result
    unresolved: list[tuple]


Accounts = str | Sequence[str] | None  # one account id, or those a filtered audit run evaluated


def _account_ids(account: Accounts) -> list[str] | None:
    """None: no account filter; else the ids to keep (an empty list keeps nothing)."""
    if account is None or account == "":
        return None
    return [account] if isinstance(account, str) else list(account)


def _filters(
    provider: str | None, account: Accounts, policy: str | None, alias: str = ""
) -> tuple[str, list]:
    sql, params = "", []
    for col, val in (("provider", provider), ("policy", policy)):
        if val:
            sql += f" AND {alias}{col} = ?"
            params.append(val)
    ids = _account_ids(account)
    if ids is not None:
        sql += f" AND {alias}account IN ({', '.join('?' for _ in ids)})" if ids else " AND 1 = 0"
        params += ids
    return sql, params


def _scope_text(provider: str | None, account: Accounts, policy: str | None) -> str:
    ids = _account_ids(account)
    acct = None if ids is None else ",".join(ids) or "(none)"
    return ", ".join(
        f"{k}={v}" for k, v in (("provider", provider), ("account", acct), ("policy", policy)) if v
    )


def team_costs(
    wh: Warehouse,
    period: str,
    provider: str | None = None,
    account: Accounts = None,
    policy: str | None = None,
) -> list[tuple[str, int, Decimal, str | None]]:
    where, params = _filters(provider, account, policy)
    sql = f"""
        WITH latest AS (
            SELECT max(snapshot_date) AS d FROM tag_compliance WHERE 1 = 1 {where}
        ), snap AS (
            SELECT DISTINCT provider, resource_id, coalesce(team, '(no team)') AS team
            FROM tag_compliance WHERE compliant = FALSE AND snapshot_date = (SELECT d FROM latest) {where}
        ), cost AS (
            SELECT lower(resource_id) AS rid, billing_currency AS cur, sum(effective_cost) AS c
            FROM focus_costs WHERE x_billing_period = ? AND resource_id IS NOT NULL
            GROUP BY lower(resource_id), billing_currency
        )
        SELECT s.team, count(DISTINCT s.resource_id), coalesce(sum(c.c), 0), max(c.cur)
        FROM snap s LEFT JOIN cost c
          ON c.rid = lower(s.resource_id)
          OR right(c.rid, length(s.resource_id) + 1) = '/' || lower(s.resource_id)
        GROUP BY s.team, c.cur
        ORDER BY 3 DESC, 1
    """
    rows = wh.query(sql, [*params, *params, period])
    return [(str(t), int(n), Decimal(str(c)), cur) for t, n, c, cur in rows]


def idle_summary(
    wh: Warehouse,
    since: datetime,
    provider: str | None = None,
    account: Accounts = None,
    policy: str | None = None,
) -> list[tuple]:
    where, params = _filters(provider, account, policy)
    return wh.query(
        f"SELECT policy, decision, action, result, count(*) FROM policy_actions "
        f"WHERE policy_kind = 'idle' AND created_at >= ? {where} GROUP BY 1, 2, 3, 4 ORDER BY 1, 5 DESC",
        [since.astimezone(UTC).replace(tzinfo=None), *params],
    )


def unresolved_actions(
    wh: Warehouse,
    since: datetime,
    provider: str | None = None,
    account: Accounts = None,
    policy: str | None = None,
) -> list[tuple]:
    """Actions with no recorded outcome: still `pending`, whatever their age (their run died
    between the call and its outcome, or is acting right now), and those a later run found so
    (`unknown`, its re-read of the resource in the result) since `since`."""
    where, params = _filters(provider, account, policy)
    return wh.query(
        "SELECT created_at, policy, provider, resource_id, action, dry_run, run_id, status, result FROM policy_actions "
        f"WHERE (status = ? OR (status = ? AND created_at >= ?)) {where} ORDER BY created_at, action_id",
        [PENDING, UNKNOWN, since.astimezone(UTC).replace(tzinfo=None), *params],
    )


def violations_report(
    wh: Warehouse,
    *,
    period: str | None = None,
    provider: str | None = None,
    account: Accounts = None,
    policy: str | None = None,
    now: datetime | None = None,
    days: int = 7,
) -> ViolationsReport:
    """`account`: an account id, or a list of them (the accounts a filtered audit run evaluated)."""
    now = now or datetime.now(UTC)
    period = period or now.strftime("%Y-%m")
    teams = team_costs(wh, period, provider, account, policy)
    idle = idle_summary(wh, now - timedelta(days=days), provider, account, policy)
    unresolved = unresolved_actions(wh, now - timedelta(days=days), provider, account, policy)
    scope = _scope_text(provider, account, policy)
    lines = [
        f"FinOps violations report - billing period {period} - {scope or 'all'} - {now:%Y-%m-%d %H:%M} UTC",
        "",
    ]
    lines.append(
        f"Actions with no recorded outcome (OUTCOME UNKNOWN: the call may have happened; check the resource), "
        f"pending ones of any age, the rest of the last {days} days:"
    )
    lines += [
        f"  {at:%Y-%m-%d %H:%M} {pol} {prov} {rid} {act} ({'dry run' if dry else 'live'}, run {run}) [{st}]: {res}"
        for at, pol, prov, rid, act, dry, run, st, res in unresolved
    ] or ["  (none)"]
    lines.append("")
    lines.append("Non-compliant resources (latest tag snapshot) and their month cost (EffectiveCost):")
    if teams:
        lines.append(f"  {'team':<30} {'resources':>9} {'cost':>16} currency")
        for team, n, cost, cur in teams:
            lines.append(f"  {team[:30]!s:<30} {n:>9} {cost:>16.2f} {cur or '-'}")
    else:
        lines.append("  (none)")
    lines += ["", f"Idle-policy decisions, last {days} days:"]
    lines += [f"  {p}: {d} -> {a} ({r}): {n}" for p, d, a, r, n in idle] or ["  (none)"]
    text = "\n".join(lines) + "\n"
    out = subdir("reports")
    stem = f"violations-{period}-{now:%Y%m%dT%H%M%S}"
    path, csv_path = out / f"{stem}.txt", out / f"{stem}.csv"
    path.write_text(text)
    with csv_path.open("w", newline="") as f:
        write_csv(
            f,
            ["team", "resources", "effective_cost", "currency", "billing_period"],
            [
                (team, n, Decimal(cost).quantize(Decimal("0.01")), cur or "", period)
                for team, n, cost, cur in teams
            ],
        )
    return ViolationsReport(text, path, csv_path, teams, unresolved)
