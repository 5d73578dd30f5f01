"""Lambda Cloud: instance lifetimes x price -> hourly FOCUS rows (Lambda has no billing export).

Lifetime rule (pure, `observe` / `billable_interval`), driven by our polls of
`/api/v1/instances`:
- an instance is billable while we see it `active` or `unhealthy` (and `terminating`,
  which Lambda still bills until the VM is gone); `booting` is recorded but not billed;
- seen at poll t1 and again at t2 -> billed for the whole [t1, t2], however long the gap
  between polls was (both sightings prove it existed);
- after the last sighting, once a poll no longer lists it (or lists it `terminated`), it is
  billed up to min(that poll, last sighting + max_gap) -- max_gap is the expected poll
  interval, so a long polling outage never invents hours;
- closed by a `terminated` listing is final (a stale listing cannot reopen it); closed only
  because one poll did not list it (`gone`), a later billable sighting reopens the same
  lifetime (instance ids are never reused, so both sightings prove it ran in between):
  first_seen is kept, never replaced by a fresh lifetime that would drop the hours billed;
- while it is still listed, billing runs to the last poll that saw it (the next poll
  extends it): nothing is billed ahead of an observation;
- before the first sighting nothing is billed (the API gives no launch time).
Granularity: Lambda bills on-demand instances by the minute; billable time is counted in
whole minutes (epoch minutes, so it is the same whichever hour a boundary falls in) at
price_cents_per_hour / 60 per minute.

Money is exact: each hourly row is the difference of the *cumulative* rounded cost at the
end and at the start of that hour, so an instance's rows add up exactly to its rounded
total (the raw total the spine reconciles against).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from finops.focus.projection import (
    files_list,
    lineage,
    lit,
    period_bounds_sql,
    raw_totals_by_currency,
    select_list,
)

MONEY = "DECIMAL(38,10)"
BILLABLE_STATUSES = frozenset({"active", "unhealthy", "terminating"})
DEFAULT_MAX_GAP = timedelta(hours=1)
_EPOCH, _FAR = "TIMESTAMP '1970-01-01'", "TIMESTAMP '9999-01-01'"


# -------------------------------------------------------------------- lifetimes (pure)
@dataclass(frozen=True)
class Lifetime:
    instance_id: str
    name: str | None
    instance_type: str
    region: str | None
    price_cents_per_hour: int
    first_seen: datetime
    last_seen: datetime
    ended_at: datetime | None = None  # billing end once the instance is gone
    status: str = "active"


def observe(
    known: dict[str, Lifetime],
    instances: list[dict],
    polled_at: datetime,
    max_gap: timedelta = DEFAULT_MAX_GAP,
) -> dict[str, Lifetime]:
    """Fold one poll of /api/v1/instances into the lifetimes; returns the changed ones.

    `known` must hold every open lifetime and the closed lifetime of any instance this poll
    lists: without it a reappearing instance would start a new lifetime over its history."""
    changed: dict[str, Lifetime] = {}
    listed: set[str] = set()
    for inst in instances:
        iid = inst["id"]
        listed.add(iid)
        status = inst.get("status", "active")
        itype = inst.get("instance_type") or {}
        region = (inst.get("region") or {}).get("name")
        old = known.get(iid)
        if old is not None and old.ended_at is not None:
            if old.status == "gone" and status in BILLABLE_STATUSES:  # missed by one listing, still running
                changed[iid] = replace(
                    old, last_seen=max(old.last_seen, polled_at), ended_at=None, status=status
                )
            continue  # closed by `terminated`: a stale listing cannot reopen it
        if status == "terminated":
            if old is not None:
                changed[iid] = replace(old, ended_at=min(polled_at, old.last_seen + max_gap), status=status)
            continue
        if status not in BILLABLE_STATUSES:
            continue  # booting: not billed yet
        if old is None:
            changed[iid] = Lifetime(
                iid,
                inst.get("name"),
                itype.get("name", "unknown"),
                region,
                int(itype.get("price_cents_per_hour", 0)),
                polled_at,
                polled_at,
                None,
                status,
            )
        else:
            changed[iid] = replace(old, last_seen=max(old.last_seen, polled_at), status=status)
    for iid, old in known.items():
        if iid not in listed and old.ended_at is None and iid not in changed:
            changed[iid] = replace(old, ended_at=min(polled_at, old.last_seen + max_gap), status="gone")
    return changed


def billable_interval(lt: Lifetime) -> tuple[datetime, datetime]:
    return lt.first_seen, lt.ended_at if lt.ended_at is not None else lt.last_seen


# -------------------------------------------------------------------- converter (SQL)
def _usd(minutes: str) -> str:
    """minutes x cents/hour -> USD rounded half-up to 1e-10, in exact integer arithmetic
    (DuckDB decimal division would go through a double)."""
    q = f"((CAST({minutes} AS HUGEINT) * cents * 10000000000 + 3000) // 6000)"
    return f"(CAST({q} AS DECIMAL(28,0)) * CAST(0.0000000001 AS DECIMAL(10,10)))"


class LambdaLifetimesConverter:
    """Raw input: parquet rows (instance_id, name, instance_type, region, price_cents_per_hour,
    bill_start, bill_end, account_name) written by finops.sources.lambda_cloud."""

    name = "lambda_lifetimes"
    provider = "lambda"
    required_raw_columns = ("instance_id", "instance_type", "price_cents_per_hour", "bill_start", "bill_end")

    def reader_sql(self, files: list[str]) -> str:
        return f"SELECT * FROM read_parquet({files_list(files)}, union_by_name = true)"

    def variant(self, columns: Sequence[str]) -> str:
        return "Lambda Cloud instance lifetimes (polled /api/v1/instances)"

    def derived_counts_sql(self, raw: str) -> str:
        """(column, rows): Lambda ships no billing data, so every FOCUS column is ours; these are the
        recommended / descriptive ones (ChargeDescription from the instance type, ChargeFrequency
        'Usage-Based', InvoiceId provisional account + month, ServiceSubcategory 'Virtual Machines'),
        counted per raw interval."""
        return " UNION ALL ".join(
            f"SELECT {lit(c)} AS column, count(*) AS rows FROM {raw}"
            for c in ("ChargeDescription", "ChargeFrequency", "InvoiceId", "ServiceSubcategory")
        )

    @staticmethod
    def _clipped(raw: str, start: str, end: str) -> str:
        """Intervals clipped to the period, in whole epoch minutes."""
        return f"""SELECT *,
  CAST(floor(epoch(greatest(CAST(bill_start AS TIMESTAMP), {start})) / 60) AS BIGINT) AS m0,
  CAST(floor(epoch(least(CAST(bill_end AS TIMESTAMP), {end})) / 60) AS BIGINT) AS m1,
  CAST(price_cents_per_hour AS HUGEINT) AS cents
FROM {raw}
WHERE CAST(bill_end AS TIMESTAMP) > {start} AND CAST(bill_start AS TIMESTAMP) < {end}"""

    def raw_billed_totals_sql(self, raw: str) -> str:
        # The period bounds are not known here: the spine hands only `raw`; the source writes
        # only the intervals of its period, already clipped, so no clipping is needed.
        clipped = f"(SELECT * FROM ({self._clipped(raw, _EPOCH, _FAR)}) WHERE m1 > m0)"
        return raw_totals_by_currency(clipped, "'USD'", _usd("m1 - m0"))

    def focus_sql(self, raw: str, ctx: object) -> str:
        start, end = period_bounds_sql(ctx.billing_period)  # type: ignore[attr-defined]
        hours = f"""SELECT c.*, h AS hour_start,
  greatest(m0, CAST(epoch(h) / 60 AS BIGINT)) - m0 AS cum0,
  least(m1, CAST(epoch(h) / 60 AS BIGINT) + 60) - m0 AS cum1
FROM ({self._clipped(raw, start, end)}) AS c,
  generate_series(date_trunc('hour', make_timestamp(m0 * 60000000)),
                  make_timestamp((m1 - 1) * 60000000), INTERVAL 1 HOUR) AS g(h)
WHERE m1 > m0"""
        cost = f"{_usd('cum1')} - {_usd('cum0')}"
        list_price = "CAST(price_cents_per_hour AS DECIMAL(38,12)) / 100"
        cols = {
            "billed_cost": cost,
            "effective_cost": cost,
            "list_cost": cost,
            "contracted_cost": cost,
            "billing_account_id": "COALESCE(account_name, 'lambda')",
            "billing_account_name": "COALESCE(account_name, 'lambda')",
            "billing_currency": "'USD'",
            "billing_period_start": start,
            "billing_period_end": end,
            "charge_category": "'Usage'",
            "charge_description": "'Lambda On-Demand ' || instance_type || ' instance'",
            "charge_frequency": "'Usage-Based'",
            "charge_period_start": "hour_start",
            "charge_period_end": "hour_start + INTERVAL 1 HOUR",
            "invoice_issuer_name": "'Lambda'",
            "invoice_id": f"COALESCE(account_name, 'lambda') || '-' || strftime({start}, '%Y%m')",
            "provider_name": "'Lambda'",
            "publisher_name": "'Lambda'",
            "service_category": "'Compute'",
            "service_subcategory": "'Virtual Machines'",
            "service_name": "'Lambda On-Demand Cloud'",
            "pricing_quantity": "CAST(cum1 - cum0 AS DECIMAL(38,12)) / 60",
            "pricing_unit": "'Hours'",
            "consumed_quantity": "CAST(cum1 - cum0 AS DECIMAL(38,12)) / 60",
            "consumed_unit": "'Hours'",
            "list_unit_price": list_price,
            "contracted_unit_price": list_price,
            "pricing_category": "'Standard'",
            "region_id": "region",
            "region_name": "region",
            "resource_id": "instance_id",
            "resource_name": "name",
            "resource_type": "'instance'",
            "sku_id": "instance_type",
            "sku_price_id": "instance_type || ':' || CAST(price_cents_per_hour AS VARCHAR)",
            "x_instance_type": "instance_type",
            "x_usage_type": lit("on-demand"),
            "x_charge_type": "'Usage'",
        }
        return (
            f"SELECT {select_list({**cols, **lineage(ctx, self.provider)})} FROM ({hours}) WHERE cum1 > cum0"
        )


CONVERTER = LambdaLifetimesConverter()
