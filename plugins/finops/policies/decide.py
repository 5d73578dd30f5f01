"""Pure policy decisions: (policy, resource, metric series, now) -> Decision with evidence.

No cloud or Airflow imports: everything here is plain data so it is tested exhaustively
with plain data. The rules that make the tool safe live here:
- missing, partial or stale metrics are never idle;
- exempt resources are never touched (not even unmarked);
- a stop only happens for a resource marked at least `grace_hours` ago, re-checked now,
  inside the off-hours window, with a known owner (unless the policy opts out); a mark older
  than the resource's launch was not written for this resource and is replaced, not obeyed.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from finops.policies.model import OffHours, Policy, normalise_key

Verdict = Literal[
    "out_of_scope",
    "exempt",
    "not_running",
    "too_young",
    "compliant",
    "violation",
    "busy",
    "idle",
    "no_metrics",
    "partial_metrics",
]
Act = Literal["none", "report", "notify", "mark", "unmark", "wait", "stop", "terminate"]


@dataclass(frozen=True)
class Resource:
    provider: str
    account: str
    region: str
    resource_id: str
    name: str = ""
    state: str = "running"  # normalised: running | stopped | other
    launched_at: datetime | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    instance_type: str = ""
    gpu_count: int | None = None  # known -> every GPU must report


@dataclass(frozen=True)
class Series:
    """One metric time series, values already in the policy's unit (percent, bytes/s)."""

    metric: Literal["gpu", "cpu", "network"]
    points: Sequence[tuple[datetime, float]]
    label: str = ""


@dataclass(frozen=True)
class TagCheck:
    missing: list[str]
    invalid: list[str]
    team: str | None
    compliant: bool


@dataclass(frozen=True)
class Decision:
    policy: str
    resource: Resource
    verdict: Verdict
    action: Act
    reason: str
    owner: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- tags ---------------
def normalised_tags(tags: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in tags.items():
        out.setdefault(normalise_key(k), "" if v is None else str(v))
    return out


def tag_value(tags: Mapping[str, str], keys: Sequence[str]) -> str | None:
    norm = normalised_tags(tags)
    for k in keys:
        v = norm.get(k, "").strip()
        if v:
            return v
    return None


def check_tags(policy: Policy, resource: Resource, team_key: str = "team") -> TagCheck:
    norm = normalised_tags(resource.tags)
    missing: list[str] = []
    invalid: list[str] = []
    for rule in policy.required_tags:
        value = next((norm[k] for k in rule.keys() if norm.get(k, "").strip()), None)
        if value is None:
            missing.append(rule.key)
        elif rule.allowed is not None and value.strip().casefold() not in {
            a.casefold() for a in rule.allowed
        }:
            invalid.append(rule.key)
        elif rule.pattern is not None and not re.fullmatch(rule.pattern, value.strip()):
            invalid.append(rule.key)
    team = tag_value(resource.tags, [normalise_key(team_key)])
    return TagCheck(missing, invalid, team, not missing and not invalid)


# ---------------------------------------------------------------- scope --------------
def in_scope(policy: Policy, r: Resource) -> bool:
    s = policy.scope
    return (
        r.provider in s.providers
        and (not s.accounts or r.account in s.accounts)
        and (not s.regions or r.region in s.regions)
    )


def has_tag(tags: Mapping[str, str], spec: str) -> bool:
    """`spec` is `key` (present, any value) or `key=value` (value compared without case);
    keys match as everywhere (normalise_key)."""
    key, _, want = spec.partition("=")
    have = normalised_tags(tags).get(normalise_key(key))
    return have is not None and (not want or have.strip().casefold() == want.strip().casefold())


def exemption(policy: Policy, r: Resource) -> str | None:
    ex = policy.exemptions
    if r.account in ex.accounts:
        return f"account {r.account} is on the allow-list"
    if ex.tag and has_tag(r.tags, ex.tag):
        return f"exemption tag {ex.tag.partition('=')[0]}"
    for pat in ex.name_patterns:
        if r.name and fnmatch.fnmatchcase(r.name.lower(), pat.lower()):
            return f"name matches {pat}"
    return None


# ---------------------------------------------------------------- marks --------------
_MARK_SLACK = timedelta(minutes=1)  # marks have minute resolution: ours can read up to 59 s early


def format_mark(now: datetime) -> str:
    """ISO 8601 basic UTC, lowercase so it is a valid GCP label value: 20261122t1335z."""
    return now.astimezone(UTC).strftime("%Y%m%dt%H%Mz")


def parse_mark(value: str | None) -> datetime | None:
    """Read a mark; unreadable -> None (treated as unmarked: re-marked, never acted on).
    A date-only mark counts from the END of that day, so grace is never shortened."""
    if not value:
        return None
    v = value.strip().lower()
    for fmt in ("%Y%m%dt%H%Mz", "%Y-%m-%dt%H:%Mz", "%Y-%m-%dt%H:%M:%Sz"):
        try:
            return datetime.strptime(v, fmt).replace(tzinfo=UTC)
        except ValueError:
            pass
    try:
        d = datetime.strptime(v[:10], "%Y-%m-%d").replace(tzinfo=UTC) if len(v) == 10 else None
    except ValueError:
        d = None
    return d + timedelta(days=1) if d else None


# ---------------------------------------------------------------- metrics ------------
def _aggregate(values: list[float], how: str) -> float:
    if how == "mean":
        return sum(values) / len(values)
    if how == "p95":
        s = sorted(values)
        return s[min(len(s) - 1, math.ceil(0.95 * len(s)) - 1)]
    return max(values)


def summarise(series: Series, start: datetime, end: datetime, period_s: int, how: str) -> dict[str, Any]:
    pts = [(t, v) for t, v in series.points if start <= t <= end and v is not None and not math.isnan(v)]
    expected = max(1, int((end - start).total_seconds() // period_s))
    buckets = {int((t - start).total_seconds() // period_s) for t, _ in pts}
    vals = [v for _, v in pts]
    return {
        "metric": series.metric,
        "label": series.label,
        "points": len(pts),
        "expected": expected,
        "coverage": round(min(1.0, len(buckets) / expected), 3),
        "value": round(_aggregate(vals, how), 3) if vals else None,
        "min": round(min(vals), 3) if vals else None,
        "max": round(max(vals), 3) if vals else None,
        "last_at": max(t for t, _ in pts).isoformat() if pts else None,
    }


def evaluate_idle(
    policy: Policy, resource: Resource, series: Sequence[Series], now: datetime
) -> tuple[Verdict, str, dict[str, Any]]:
    """idle / busy / no_metrics / partial_metrics, with a summary of every series as evidence."""
    rule = policy.idle
    assert rule is not None
    start = now - timedelta(hours=rule.hours)
    period_s = rule.period_minutes * 60
    stale_before = now - timedelta(minutes=rule.max_staleness_minutes)
    limits = {
        "gpu": rule.gpu_util_below,
        "cpu": rule.cpu_util_below,
        "network": rule.network_below_bytes_per_s,
    }
    sums = [summarise(s, start, now, period_s, rule.aggregate) for s in series]
    evidence: dict[str, Any] = {
        "window_start": start.isoformat(),
        "window_end": now.isoformat(),
        "series": sums,
    }
    needed = [m for m, lim in limits.items() if lim is not None]
    # Any signal already over its limit means busy, whatever the coverage of the others.
    for s in sums:
        lim = limits.get(s["metric"])
        if lim is not None and s["max"] is not None and s["value"] >= lim:
            return "busy", f"{s['metric']} {s['label']} at {s['value']} >= {lim}", evidence
    for m in needed:
        got = [s for s in sums if s["metric"] == m]
        if not got or all(s["points"] == 0 for s in got):
            return "no_metrics", f"no {m} metrics in the last {rule.hours}h (never read as idle)", evidence
    gpus = [s for s in sums if s["metric"] == "gpu"]
    if resource.gpu_count is not None and len(gpus) < resource.gpu_count:
        return "partial_metrics", f"{len(gpus)} of {resource.gpu_count} GPUs report metrics", evidence
    for s in sums:
        if s["metric"] not in needed:
            continue
        if s["coverage"] < rule.min_coverage:
            return (
                "partial_metrics",
                f"{s['metric']} {s['label']} covers {s['coverage']:.0%} of the window",
                evidence,
            )
        if s["last_at"] is None or datetime.fromisoformat(s["last_at"]) < stale_before:
            return "partial_metrics", f"{s['metric']} {s['label']} is stale (last {s['last_at']})", evidence
    return "idle", f"every needed signal below its limit for {rule.hours}h", evidence


def in_off_hours(oh: OffHours, now: datetime) -> bool:
    local = now.astimezone(ZoneInfo(oh.timezone))
    t = local.time().replace(tzinfo=None)
    day = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")[local.weekday()]
    if oh.start <= oh.end:
        return day in oh.days and oh.start <= t < oh.end
    # Overnight window: the part after midnight belongs to the day the window started.
    if t >= oh.start:
        return day in oh.days
    prev = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")[(local.weekday() - 1) % 7]
    return t < oh.end and prev in oh.days


# ---------------------------------------------------------------- decide -------------
def decide(
    policy: Policy,
    resource: Resource,
    now: datetime,
    series: Sequence[Series] = (),
    tag_check: TagCheck | None = None,
) -> Decision:
    """What to do with one resource now. `now` must be timezone-aware."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    owner = tag_value(resource.tags, policy.owner_tag.keys())
    base: dict[str, Any] = {"owner": owner, "state": resource.state, "instance_type": resource.instance_type}

    def d(verdict: Verdict, action: Act, reason: str, **ev: Any) -> Decision:
        return Decision(policy.name, resource, verdict, action, reason, owner, {**base, **ev})

    if not in_scope(policy, resource):
        return d("out_of_scope", "none", "outside the policy scope")
    why = exemption(policy, resource)
    if why:
        return d("exempt", "none", why)
    mark_raw = normalised_tags(resource.tags).get(normalise_key(policy.mark_tag))
    marked_at = parse_mark(mark_raw)
    mark_note = "; unreadable mark replaced" if mark_raw and marked_at is None else ""
    if (
        marked_at is not None
        and resource.launched_at is not None
        and marked_at + _MARK_SLACK < resource.launched_at
    ):
        # Older than the resource itself: copied with its tags (launch template, "launch more
        # like this", machine image) or left from before a restart. Not our warning: grace anew.
        marked_at, mark_note = None, "; mark older than the launch replaced"
        base["ignored_mark"] = mark_raw
    base["marked_at"] = marked_at.isoformat() if marked_at else None

    if policy.kind == "tags":
        tc = tag_check or check_tags(policy, resource)
        ev = {"missing": tc.missing, "invalid": tc.invalid, "team": tc.team}
        if tc.compliant:
            return d(
                "compliant", "unmark" if mark_raw is not None else "none", "all required tags valid", **ev
            )
        reason = f"missing {tc.missing} invalid {tc.invalid}"
        return _violation(policy, resource, d, reason, mark_note, marked_at, now, owner, ev)

    if resource.state != "running":
        return d("not_running", "unmark" if mark_raw is not None else "none", f"state {resource.state}")
    if resource.launched_at is not None:
        age_h = (now - resource.launched_at).total_seconds() / 3600
        base["age_hours"] = round(age_h, 2)
        if age_h < policy.min_age_hours:
            return d("too_young", "none", f"launched {age_h:.1f}h ago < {policy.min_age_hours}h")
    elif policy.min_age_hours > 0:
        return d("too_young", "none", "launch time unknown: age cannot be proven")
    verdict, reason, ev = evaluate_idle(policy, resource, series, now)
    if verdict != "idle":
        # Busy again -> lift an earlier mark. No/partial metrics: keep the mark, never act.
        act: Act = "unmark" if verdict == "busy" and mark_raw is not None else "none"
        return d(verdict, act, reason, **ev)
    return _violation(policy, resource, d, reason, mark_note, marked_at, now, owner, ev)


def _violation(policy, resource, d, reason, mark_note, marked_at, now, owner, ev) -> Decision:
    verdict: Verdict = "violation" if policy.kind == "tags" else "idle"
    if policy.action in ("report", "notify"):
        return d(verdict, policy.action, reason, **ev)
    if policy.opt_in_tag and not has_tag(resource.tags, policy.opt_in_tag):
        # The cloud would refuse the mark and the stop (include/iam), and planning them spent the
        # run's cap on actions that cannot happen: a fleet of idle, not-opted-in GPUs aborted
        # every run before the opted-in ones were touched. Reported, so the waste stays visible.
        return d(verdict, "report", f"{reason}; not opted in ({policy.opt_in_tag}): reported only", **ev)
    if marked_at is None:
        return d(verdict, "mark", reason + mark_note, **ev)
    if policy.action == "mark":
        return d(verdict, "none", reason + "; already marked", **ev)
    due = marked_at + timedelta(hours=policy.grace_hours)
    ev = {**ev, "grace_until": due.isoformat()}
    if now < due:
        return d(verdict, "wait", f"{reason}; grace period until {due.isoformat()}", **ev)
    if policy.off_hours is not None and not in_off_hours(policy.off_hours, now):
        return d(verdict, "wait", f"{reason}; outside off-hours window", **ev)
    if owner is None and not policy.act_without_owner:
        return d(verdict, "notify", f"{reason}; no owner tag, so nobody was warned: not acting", **ev)
    return d(verdict, policy.action, reason, **ev)
