"""The commitments tables (migration 800) rebuilt from focus_costs, the expiry calendar with
its alerts, and the purchase advice: the bodies of the finops_commitments tasks. Warehouse
in, tables and alert events out; the arithmetic lives in the pure modules."""

from __future__ import annotations

import logging
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finops.commitments import inventory as inv
from finops.commitments.advice import Advice, advise, daily_samples
from finops.commitments.expiry import Commitment, ExpiryEntry, alerts_due, expiry_calendar
from finops.commitments.gcp import (
    cud_row,
    cud_utilisation,
    new_model_ids,
    new_spend_cud_rows,
    spend_cud_utilisation,
)
from finops.commitments.gcp_attribution import reports_unused
from finops.commitments.query import commitment_lines, gcp_cud_rows, gcp_new_spend_cud_lines, month_window
from finops.commitments.settings import PER_FAMILY, CommitmentsSettings
from finops.commitments.usage import Coverage, Utilisation, coverage, utilisation

if TYPE_CHECKING:
    from finops.alerts.events import AlertEvent
    from finops.allocation.rules import AllocationRules

log = logging.getLogger(__name__)
ZERO = Decimal(0)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def spend_discount(settings: CommitmentsSettings) -> Any:
    """term years -> the spend-based CUD discount the settings give (no-upfront offer)."""
    rates = {
        o.term_years: o.discount for o in settings.offers("gcp", "spend_cud") if o.payment == "no_upfront"
    }

    def discount(years: int) -> Decimal:
        if years not in rates:
            raise ValueError(
                f"commitments.discounts.gcp.spend_cud.{years}y.no_upfront: no rate for a {years}-year CUD"
            )
        return rates[years]

    return discount


def gcp_fee_utilisation(
    wh: Any, start: date, end: date, settings: CommitmentsSettings | None = None
) -> list[Utilisation]:
    """GCP CUDs per day as Utilisation rows (finops.commitments.gcp). Resource CUDs (id
    `gcp-cud:<account>:<region>:<resource>`): used / unused from the fee and the committed vs
    credited quantity. Spend-based CUDs (id `gcp-spend-cud:<account>:<service>:<region or
    all>`): from the fee, the credited on-demand cost and the configured discount; their
    quantity is on-demand money (unit: the currency). Spend-based CUDs on the multiprice model
    (id `gcp-spend-cud:<subscription>`): the FEE_UTILIZATION_OFFSET over the fee. Compute API
    commitments take their share of the resource CUD rows (finops.commitments.gcp_attribution)."""
    fees, covered = gcp_cud_rows(wh, start, end)
    new = gcp_new_spend_cud_lines(wh, start, end)
    new_ids = new_model_ids(new)
    covered = [c for c in covered if c.commitment_id not in new_ids]  # not legacy credits
    out = new_spend_cud_rows(new)
    for s in spend_cud_utilisation(fees, covered, spend_discount(settings or CommitmentsSettings()), "day"):
        out.append(
            cud_row(
                f"gcp-spend-cud:{s.billing_account}:{s.service}:{s.region or 'all'}",
                s.currency,
                s.period,
                s.used_cost,
                s.unused_cost,
                s.covered_list,
                s.credited,
                max(s.commitment_on_demand - s.credited, ZERO),
                {s.currency},
            )
        )
    for u in cud_utilisation(fees, covered, "day"):
        out.append(
            cud_row(
                f"gcp-cud:{u.billing_account}:{u.region}:{u.resource}",
                u.currency,
                u.period,
                u.used_cost,
                u.unused_cost,
                u.covered_list,
                u.used_quantity,
                max(u.committed_quantity - u.used_quantity, ZERO),
                {u.unit} if u.unit else set(),
            )
        )
    return inv.attribute_api_commitments(wh, out)  # API commitments get their share


def daily_utilisation(
    wh: Any, start: date, end: date, providers: Sequence[str], settings: CommitmentsSettings | None = None
) -> list[Utilisation]:
    """Every commitment per day: AWS / Azure from their Used / Unused rows, GCP from its fees."""
    lines = commitment_lines(wh, start, end, [p for p in providers if p != "gcp"] or ["-"])
    rows = utilisation(lines, "day")
    if "gcp" in providers:
        rows.extend(gcp_fee_utilisation(wh, start, end, settings))
    return rows


def _replace(wh: Any, table: str, period: str, rows: list[dict[str, Any]], schema: Any) -> int:
    """Delete the period's rows and insert the new ones in one transaction (via parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tbl = pa.Table.from_pylist(rows, schema=schema)
    with tempfile.TemporaryDirectory(prefix="finops-commitments-") as d:
        files: list[Path] = []
        if tbl.num_rows:
            f = Path(d) / f"{table}.parquet"
            pq.write_table(tbl, f)
            files.append(f)
        return wh.replace_partition(table, {"billing_period": period}, files)


def _schemas() -> dict[str, Any]:
    import pyarrow as pa

    m, s = pa.decimal128(38, 10), pa.string()
    return {
        "commitment_utilisation": pa.schema(
            [
                ("billing_period", s),
                ("day", pa.date32()),
                ("provider", s),
                ("commitment_id", s),
                ("commitment_type", s),
                ("currency", s),
                ("used_cost", m),
                ("unused_cost", m),
                ("covered_list", m),
                ("used_quantity", m),
                ("unused_quantity", m),
                ("unit", s),
                ("computed_at", pa.timestamp("us")),
            ]
        ),
        "commitment_coverage": pa.schema(
            [
                ("billing_period", s),
                ("day", pa.date32()),
                ("provider", s),
                ("account", s),
                ("team", s),
                ("family", s),
                ("currency", s),
                ("covered_list", m),
                ("covered_effective", m),
                ("eligible_list", m),
                ("eligible_effective", m),
                ("unused_cost", m),
                ("computed_at", pa.timestamp("us")),
            ]
        ),
    }


_Q = Decimal("1e-10")


def _m(v: Decimal) -> Decimal:
    return v.quantize(_Q)


@dataclass
class RefreshResult:
    period: str
    commitments: int
    utilisation_rows: int
    coverage_rows: int
    inventory_declared: int = 0


def refresh_period(
    wh: Any, period: str, settings: CommitmentsSettings, rules: AllocationRules | None = None
) -> RefreshResult:
    """Rewrite commitment_utilisation and commitment_coverage (day grain) of one month."""
    start, end = month_window(period)
    now = _now()
    util = daily_utilisation(wh, start, end, settings.providers, settings)
    u_rows = [
        {
            "billing_period": period,
            "day": date.fromisoformat(u.period),
            "provider": u.provider,
            "commitment_id": u.commitment_id,
            "commitment_type": u.commitment_type,
            "currency": u.currency,
            "used_cost": _m(u.used_cost),
            "unused_cost": _m(u.unused_cost),
            "covered_list": _m(u.covered_list),
            "used_quantity": _m(u.used_quantity),
            "unused_quantity": _m(u.unused_quantity),
            "unit": next(iter(u.units)) if len(u.units) == 1 else None,
            "computed_at": now,
        }
        for u in util
    ]
    lines = commitment_lines(wh, start, end, settings.providers, rules=rules)
    cov = coverage(lines, "day", by_account=True, by_family=True, by_team=rules is not None)
    c_rows = [
        {
            "billing_period": period,
            "day": date.fromisoformat(c.period),
            "provider": c.provider,
            "account": c.account,
            "team": c.team,
            "family": c.family,
            "currency": c.currency,
            "covered_list": _m(c.covered_list),
            "covered_effective": _m(c.covered_effective),
            "eligible_list": _m(c.eligible_list),
            "eligible_effective": _m(c.eligible_effective),
            "unused_cost": _m(c.unused_cost),
            "computed_at": now,
        }
        for c in cov
    ]
    schemas = _schemas()
    n_u = _replace(wh, "commitment_utilisation", period, u_rows, schemas["commitment_utilisation"])
    n_c = _replace(wh, "commitment_coverage", period, c_rows, schemas["commitment_coverage"])
    declared = inv.store(
        wh,
        [
            inv.InventoryItem(d.provider, d.id, d.end, d.start, "", d.description, source="finops.yaml")
            for d in settings.inventory
        ],
    )
    return RefreshResult(period, len({(u.provider, u.commitment_id) for u in util}), n_u, n_c, declared)


def stored_utilisation(wh: Any, start: date, end: date) -> list[Utilisation]:
    """Day-grain Utilisation rows back from commitment_utilisation, days in [start, end)."""
    out = []
    for r in wh.query(
        "SELECT provider, commitment_id, commitment_type, currency, day, used_cost, unused_cost, covered_list, "
        "used_quantity, unused_quantity, unit FROM commitment_utilisation WHERE day >= ? AND day < ?",
        [start, end],
    ):
        day = r[4] if isinstance(r[4], date) else date.fromisoformat(str(r[4])[:10])
        out.append(
            Utilisation(
                provider=r[0],
                commitment_id=r[1],
                commitment_type=r[2],
                currency=r[3],
                period=day.isoformat(),
                used_cost=Decimal(r[5]),
                unused_cost=Decimal(r[6]),
                covered_list=Decimal(r[7]),
                used_quantity=Decimal(r[8] or 0),
                unused_quantity=Decimal(r[9] or 0),
                units={r[10]} if r[10] else set(),
                unused_reported=reports_unused(r[0], str(r[1])),
            )
        )
    return out


def calendar(wh: Any, settings: CommitmentsSettings, today: date) -> list[ExpiryEntry]:
    """Every commitment with an end date (inventory table + finops.yaml), its daily cost and
    the daily bill after it ends, averaged over the last `utilisation_days` days."""
    items = {(i.provider, i.commitment_id): i for i in inv.load(wh)}
    for d in settings.inventory:
        items[(d.provider, d.id)] = inv.InventoryItem(d.provider, d.id, d.end, d.start, "", d.description)
    recent = stored_utilisation(wh, today - timedelta(days=settings.utilisation_days), today)
    commitments = [
        Commitment(
            i.provider,
            i.commitment_id,
            i.end,
            " ".join(x for x in (i.commitment_type, i.description, i.term, i.payment_option) if x),
        )
        for i in items.values()
    ]
    return expiry_calendar(commitments, recent, today, settings.warn_days)


def expiry_events(
    entries: Iterable[ExpiryEntry], settings: CommitmentsSettings, today: date
) -> list[AlertEvent]:
    """Alert events for the entries inside a warn window or under the utilisation floor. Each
    dedup key names what it is about (the window and the end date; the floor and the month),
    so the alert ledger delivers each once per channel however often the DAG runs."""
    from finops.alerts.events import AlertEvent

    floor = None if settings.utilisation_floor is None else Decimal(str(settings.utilisation_floor))
    out = []
    for e in alerts_due(entries, floor):
        c = e.commitment
        facts = {
            "provider": c.provider,
            "commitment": c.commitment_id,
            "covers": c.description or "-",
            "ends": c.end.isoformat(),
            "days_left": e.days_left,
            "daily_cost_now": f"{e.daily_commitment_cost:.2f}",
            "daily_bill_after_end": f"{e.daily_on_demand_cost:.2f}",
            "daily_increase": f"{e.daily_increase:.2f}",
        }
        if e.alert is not None:
            out.append(
                AlertEvent(
                    kind="commitment_expiry",
                    severity="critical" if e.alert <= 7 else "warning",
                    title=f"Commitment ends in {e.days_left} days: {c.provider} {c.commitment_id}",
                    summary=f"Ends {c.end.isoformat()}; the same usage then costs {e.daily_increase:.2f} more a day "
                    "unless it is renewed or replaced.",
                    facts=facts,
                    dedup_key=f"commitment_expiry:{c.provider}:{c.commitment_id}:{c.end}:{e.alert}d",
                )
            )
        if floor is not None and e.daily_utilisation is not None and e.daily_utilisation < floor:
            out.append(
                AlertEvent(
                    kind="commitment_low_utilisation",
                    severity="warning",
                    title=f"Commitment under-used: {c.provider} {c.commitment_id} at "
                    f"{100 * e.daily_utilisation:.1f} %",
                    summary=f"Utilisation over the last {settings.utilisation_days} days is under the "
                    f"{100 * floor:.0f} % floor: part of what it costs buys nothing.",
                    facts={**facts, "utilisation": f"{e.daily_utilisation:.4f}"},
                    dedup_key=f"commitment_low_util:{c.provider}:{c.commitment_id}:{today:%Y-%m}",
                )
            )
    return out


@dataclass
class WhatIf:
    """An ad-hoc "what if we buy X" run: X $/h of one product (as the provider bills it)."""

    provider: str
    product: str
    commitment_hourly: Decimal
    scope: str = "all"  # a family for per-family products, "all" otherwise


@dataclass
class AdviceResult:
    advice: list[Advice] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # (region, AWS Capacity Block offering priced against on-demand): described, never bought
    capacity_blocks: list[tuple[str, Any]] = field(default_factory=list)


def eligible_daily(
    wh: Any, start: date, end: date, providers: Sequence[str]
) -> dict[tuple[str, str, str], dict[date, Decimal]]:
    """(provider, family or "all", currency) -> day -> eligible on-demand ListCost: the usage
    no commitment covers yet, what new commitments would cover."""
    out: dict[tuple[str, str, str], dict[date, Decimal]] = defaultdict(lambda: defaultdict(lambda: ZERO))
    cov: list[Coverage] = coverage(commitment_lines(wh, start, end, providers), "day", by_account=False)
    for c in cov:
        if c.eligible_list == 0:
            continue
        d = date.fromisoformat(c.period)
        out[(c.provider, "all", c.currency)][d] += c.eligible_list
        if c.family:
            out[(c.provider, c.family, c.currency)][d] += c.eligible_list
    return out


def purchase_advice(
    wh: Any, settings: CommitmentsSettings, today: date, what_if: WhatIf | None = None
) -> AdviceResult:
    """Advice per provider product (and the largest families for per-family products) from the
    last `advice.lookback_days` days before `today`. ADVICE ONLY: nothing is bought."""
    a = settings.advice
    start = today - timedelta(days=a.lookback_days)
    days = [start + timedelta(days=i) for i in range(a.lookback_days)]
    series = eligible_daily(wh, start, today, settings.providers)
    res = AdviceResult()
    drop = Decimal(str(a.drop_share))
    from finops.commitments import rates

    price_rates = rates.load(wh, settings, datetime.combine(today, datetime.min.time()))
    for provider in settings.providers:
        from finops.commitments.settings import DEFAULT_DISCOUNTS

        for product in DEFAULT_DISCOUNTS.get(provider, {}):
            if what_if is not None and (what_if.provider, what_if.product) != (provider, product):
                continue
            keyed = [(k, v) for k, v in series.items() if k[0] == provider]
            if (provider, product) in PER_FAMILY:
                keyed = sorted(
                    (kv for kv in keyed if kv[0][1] != "all"), key=lambda kv: -sum(kv[1].values())
                )[: a.families]
            else:
                keyed = [kv for kv in keyed if kv[0][1] == "all"]
            if what_if is not None:
                keyed = [kv for kv in keyed if what_if.scope in ("all", kv[0][1])]
            if not keyed:
                res.skipped.append(f"{provider} {product}: no on-demand usage it could cover in the window")
            for (_, scope, currency), daily in keyed:
                for adv in advise(
                    daily_samples(daily, days),
                    rates.offers(settings, provider, product, scope, price_rates),
                    scope=scope,
                    currency=currency,
                    drop_share=drop,
                    commitment_hourly=None if what_if is None else what_if.commitment_hourly,
                ):
                    if what_if is None and (
                        adv.covers_on_demand_hourly == 0
                        or adv.expected_savings_monthly < Decimal(str(a.min_monthly_savings))
                    ):
                        continue
                    res.advice.append(adv)
    if "aws" in settings.providers and what_if is None:
        from finops.commitments.capacity import stored_capacity_blocks

        res.capacity_blocks = stored_capacity_blocks(wh)
        if not res.capacity_blocks:
            res.skipped.append(
                "aws capacity blocks: no offerings stored (prices.aws.capacity_blocks.instance_types "
                "names the GPU types the price jobs describe)"
            )
    res.advice.sort(key=lambda x: -x.expected_savings_term)
    return res


def store_advice(wh: Any, run_id: str, advice: Sequence[Advice], what_if: bool) -> int:
    import pyarrow as pa

    now = _now()
    rows = [
        {
            "run_id": run_id,
            "computed_at": now,
            "provider": x.offer.provider,
            "product": x.offer.product,
            "scope": x.scope,
            "term_years": x.offer.term_years,
            "payment": x.offer.payment,
            "discount": _m(x.offer.discount),
            "rate_source": x.offer.rate_source,
            "currency": x.currency,
            "what_if": what_if,
            "covers_on_demand_hourly": _m(x.covers_on_demand_hourly),
            "commitment_hourly": _m(x.commitment_hourly),
            "upfront": _m(x.upfront),
            "monthly_recurring": _m(x.monthly_recurring),
            "on_demand_hourly": _m(x.expected.on_demand_hourly),
            "expected_hourly": _m(x.expected.committed_hourly),
            "expected_utilisation": None if x.expected.utilisation is None else _m(x.expected.utilisation),
            "expected_savings_monthly": _m(x.expected_savings_monthly),
            "expected_savings_term": _m(x.expected_savings_term),
            "break_even_utilisation": _m(x.break_even_utilisation),
            "break_even_months": x.break_even_months,
            "drop_share": _m(x.drop_share),
            "drop_utilisation": None if x.drop.utilisation is None else _m(x.drop.utilisation),
            "drop_savings_term": _m(x.drop_savings_term),
            "samples": x.samples,
        }
        for x in advice
    ]
    if not rows:
        return 0
    m, ints = pa.decimal128(38, 10), {"term_years", "break_even_months", "samples"}
    text = {"run_id", "provider", "product", "scope", "payment", "currency", "rate_source"}
    schema = pa.schema([
        (k, pa.timestamp("us") if k == "computed_at" else pa.bool_() if k == "what_if"
         else pa.int64() if k in ints else pa.string() if k in text else m)
        for k in rows[0]
    ])  # fmt: skip
    return wh.insert_arrow("commitment_advice", pa.Table.from_pylist(rows, schema=schema))
