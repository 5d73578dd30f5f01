"""Pure allocation: cost rows -> per-team lines, exact to the warehouse quantum.

Order for each row: a shared pool that matches (split over teams), else the team tag (key
aliases normalised), else the first matching rule (account / project / subscription /
service / tag), else unallocated (own bucket, or spread over the teams by rule). Every split
uses the largest-remainder method, so the sum of the output equals the sum of the input
exactly, per day and currency, credits included.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Literal

from finops.allocation.classify import gpu_model, line_of, purchase_option
from finops.allocation.money import WAREHOUSE_QUANTUM, split
from finops.allocation.rules import AllocationRules, Match, SharedPool

CostView = Literal["billed", "amortised"]
VIEWS: tuple[CostView, ...] = ("billed", "amortised")
ZERO = Decimal(0)


@dataclass(frozen=True)
class CostRow:
    """One aggregated slice of focus_costs (day x account x service x tags x ...)."""

    day: date
    billing_period: str
    provider: str
    billing_account_id: str
    service_name: str
    currency: str
    billed: Decimal
    effective: Decimal
    list_cost: Decimal = ZERO
    sub_account_id: str | None = None
    service_category: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    instance_type: str | None = None
    usage_type: str | None = None
    pricing_category: str | None = None

    def amount(self, view: CostView) -> Decimal:
        return self.billed if view == "billed" else self.effective


@dataclass(frozen=True)
class Allocated:
    day: date
    billing_period: str
    cost_view: CostView
    team: str
    cost_centre: str | None
    allocation: str  # direct | shared | unallocated | spread
    rule: str | None
    provider: str
    billing_account_id: str
    sub_account_id: str | None
    service_name: str
    line: str
    currency: str
    cost: Decimal


def norm_key(key: str) -> str:
    """Tag-key identity: case-insensitive, `user:` / `user_` prefix dropped, -/space/. as _."""
    k = key.strip().lower()
    for p in ("user:", "user_"):
        if k.startswith(p):
            k = k[len(p) :]
    return re.sub(r"[-\s.:]+", "_", k)


def canonical_tags(tags: Mapping[str, str], tag_keys: Mapping[str, list[str]]) -> dict[str, str]:
    """Tags with every alias folded onto its canonical key (first non-empty alias wins, the
    canonical spelling first); unknown keys are kept under their normalised form."""
    out: dict[str, str] = {}
    by_norm: dict[str, str] = {}
    for k, v in tags.items():
        if v is None or str(v).strip() == "":
            continue
        by_norm.setdefault(norm_key(k), str(v).strip())
        out.setdefault(norm_key(k), str(v).strip())
    for canon, aliases in tag_keys.items():
        for alias in [canon, *aliases]:
            exact = tags.get(alias)
            val = str(exact).strip() if exact not in (None, "") else by_norm.get(norm_key(alias))
            if val:
                out[canon] = val
                break
    return out


def _in(value: str | None, wanted: list[str]) -> bool:
    return value is not None and value in wanted


def matches(m: Match, row: CostRow, tags: Mapping[str, str]) -> bool:
    if m.accounts and not (_in(row.billing_account_id, m.accounts) or _in(row.sub_account_id, m.accounts)):
        return False
    if m.projects and not _in(row.sub_account_id, m.projects):
        return False
    if m.subscriptions and not _in(row.sub_account_id, m.subscriptions):
        return False
    if m.providers and row.provider.lower() not in {p.lower() for p in m.providers}:
        return False
    if m.services and not _in(row.service_name, m.services):
        return False
    if m.service_categories and not _in(row.service_category, m.service_categories):
        return False
    for key, want in m.tags.items():
        have = tags.get(norm_key(key)) if key not in tags else tags[key]
        if have is None:
            return False
        wants = [want] if isinstance(want, str) else want
        if "*" not in wants and have not in wants:
            return False
    return True


class Resolver:
    """Team (or shared pool) of one row under a rule set; pure and cheap."""

    def __init__(self, rules: AllocationRules):
        self.rules = rules
        self._known = {t.name.lower(): t.name for t in rules.teams}

    def team_name(self, raw: str) -> str:
        return self._known.get(raw.strip().lower(), raw.strip())

    def resolve(self, row: CostRow) -> tuple[str, str | None, SharedPool | None, str | None]:
        """(kind, team, pool, rule): kind is direct | shared | unallocated; rule says why."""
        tags = canonical_tags(row.tags, self.rules.tag_keys)
        for pool in self.rules.shared:
            if matches(pool.match, row, tags):
                return "shared", None, pool, f"shared:{pool.name}"
        if tags.get("team"):
            return "direct", self.team_name(tags["team"]), None, "tag:team"
        for i, r in enumerate(self.rules.rules):
            if matches(r.match, row, tags):
                return "direct", r.team, None, f"rules[{i}]"
        return "unallocated", None, None, None


def _line(row: CostRow, rules: AllocationRules) -> str:
    return line_of(
        row.service_category, row.usage_type, row.instance_type, row.service_name, rules.gpu_models
    )


def allocate(
    rows: Iterable[CostRow], rules: AllocationRules, view: CostView, quantum: Decimal = WAREHOUSE_QUANTUM
) -> list[Allocated]:
    """Allocate every row's cost (BilledCost or EffectiveCost) to teams; aggregated output."""
    res = Resolver(rules)
    bucket = rules.unallocated.bucket
    out: dict[tuple, Decimal] = defaultdict(lambda: ZERO)

    def add(row: CostRow, team: str, allocation: str, rule: str | None, amount: Decimal) -> None:
        key = (
            row.day,
            row.billing_period,
            team,
            allocation,
            rule,
            row.provider,
            row.billing_account_id,
            row.sub_account_id,
            row.service_name,
            _line(row, rules),
            row.currency,
        )
        out[key] += amount

    # group by (day, currency): shares are computed against the same day's direct cost
    groups: dict[tuple[date, str], list[CostRow]] = defaultdict(list)
    for r in rows:
        groups[(r.day, r.currency)].append(r)

    for _, group in sorted(groups.items(), key=lambda kv: kv[0]):
        direct: dict[str, Decimal] = defaultdict(lambda: ZERO)
        shared: list[tuple[CostRow, SharedPool]] = []
        unalloc: list[CostRow] = []
        for row in group:
            kind, team, pool, why = res.resolve(row)
            amt = row.amount(view)
            if kind == "direct" and team:
                direct[team] += amt
                add(row, team, "direct", why, amt)
            elif kind == "shared" and pool:
                shared.append((row, pool))
            else:
                unalloc.append(row)
        teams_with_cost = sorted(t for t in direct if t != bucket)
        all_teams = teams_with_cost or sorted(t.name for t in rules.teams)

        for row, pool in shared:
            amt = row.amount(view)
            if pool.method == "fixed":
                weights = {t: p for t, p in pool.percentages.items()}
            else:
                recipients = pool.teams or all_teams
                if not recipients:
                    add(row, bucket, "unallocated", f"shared:{pool.name}:no-recipients", amt)
                    continue
                if pool.method == "even":
                    weights = {t: Decimal(1) for t in recipients}
                else:
                    weights = {t: max(direct.get(t, ZERO), ZERO) for t in recipients}
            for team, part in split(amt, weights, quantum).items():
                if part:
                    add(row, team, "shared", f"shared:{pool.name}", part)

        ua = rules.unallocated
        for row in unalloc:
            amt = row.amount(view)
            if ua.mode == "spread" and teams_with_cost:
                if ua.method == "even":
                    weights = {t: Decimal(1) for t in teams_with_cost}
                else:
                    weights = {t: max(direct[t], ZERO) for t in teams_with_cost}
                for team, part in split(amt, weights, quantum).items():
                    if part:
                        add(row, team, "spread", f"unallocated:{ua.method}", part)
            else:
                add(row, bucket, "unallocated", None, amt)

    return [
        Allocated(
            day=k[0],
            billing_period=k[1],
            cost_view=view,
            team=k[2],
            cost_centre=rules.cost_centre(k[2]),
            allocation=k[3],
            rule=k[4],
            provider=k[5],
            billing_account_id=k[6],
            sub_account_id=k[7],
            service_name=k[8],
            line=k[9],
            currency=k[10],
            cost=v,
        )
        for k, v in sorted(out.items(), key=lambda kv: tuple("" if x is None else str(x) for x in kv[0]))
    ]


@dataclass(frozen=True)
class ChargebackLine:
    billing_period: str
    cost_view: CostView
    team: str
    cost_centre: str | None
    currency: str
    direct_cost: Decimal
    shared_cost: Decimal
    unallocated_cost: Decimal
    gpu_cost: Decimal
    storage_cost: Decimal
    egress_cost: Decimal
    total_cost: Decimal
    total_cents: Decimal  # rounded so that the teams' cents add up to the period's cents


def chargeback(allocated: Iterable[Allocated]) -> list[ChargebackLine]:
    """Monthly totals per team; cents distributed by largest remainder per (period, view, currency)."""
    from finops.allocation.money import round_total_preserving

    acc: dict[tuple, dict[str, Decimal]] = defaultdict(lambda: defaultdict(lambda: ZERO))
    cc: dict[str, str | None] = {}
    for a in allocated:
        d = acc[(a.billing_period, a.cost_view, a.currency, a.team)]
        kind = {"direct": "direct", "shared": "shared", "spread": "shared"}.get(a.allocation, "unallocated")
        d[kind] += a.cost
        if a.line in ("gpu", "storage", "egress"):
            d[a.line] += a.cost
        d["total"] += a.cost
        cc[a.team] = a.cost_centre
    by_group: dict[tuple, dict[str, Decimal]] = defaultdict(dict)
    for (period, view, cur, team), d in acc.items():
        by_group[(period, view, cur)][team] = d["total"]
    cents: dict[tuple, Decimal] = {}
    for g, totals in by_group.items():
        for team, c in round_total_preserving(totals).items():
            cents[(*g, team)] = c
    return [
        ChargebackLine(
            p,
            v,
            t,
            cc.get(t),
            cur,
            d["direct"],
            d["shared"],
            d["unallocated"],
            d["gpu"],
            d["storage"],
            d["egress"],
            d["total"],
            cents[(p, v, cur, t)],
        )
        for (p, v, cur, t), d in sorted(acc.items())
    ]


@dataclass(frozen=True)
class GpuLine:
    billing_period: str
    cost_view: CostView
    team: str
    gpu_model: str
    purchase_option: str  # spot | on_demand | committed
    currency: str
    cost: Decimal
    list_cost: Decimal
    savings: Decimal  # list (on-demand equivalent) - paid
    idle_cost: Decimal = ZERO


def gpu_view(rows: Iterable[CostRow], rules: AllocationRules, view: CostView) -> list[GpuLine]:
    """GPU instance cost by team x GPU model x purchase option, with savings vs list price."""
    res = Resolver(rules)
    acc: dict[tuple, list[Decimal]] = defaultdict(lambda: [ZERO, ZERO])
    for r in rows:
        model = gpu_model(r.instance_type, rules.gpu_models)
        if not model:
            continue
        kind, team, _, _ = res.resolve(r)
        team = team if kind == "direct" and team else rules.unallocated.bucket
        po = purchase_option(r.pricing_category, r.usage_type)
        a = acc[(r.billing_period, team, model, po, r.currency)]
        a[0] += r.amount(view)
        a[1] += r.list_cost
    return [
        GpuLine(p, view, t, m, po, cur, c, lc, lc - c if lc else ZERO)
        for (p, t, m, po, cur), (c, lc) in sorted(acc.items())
    ]


def spot_share(lines: Iterable[GpuLine]) -> dict[str, Decimal]:
    """Per team: spot cost / total GPU cost (0..1)."""
    tot: dict[str, Decimal] = defaultdict(lambda: ZERO)
    spot: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for g in lines:
        tot[g.team] += g.cost
        if g.purchase_option == "spot":
            spot[g.team] += g.cost
    return {t: (spot[t] / tot[t] if tot[t] else ZERO) for t in sorted(tot)}
