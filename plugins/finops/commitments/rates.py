"""The discount each purchase-advice offer is priced at, and where it came from.

Three sources, the first that has a rate wins:
1. `config`: a rate the user set in finops.yaml (`commitments.discounts...`): a negotiated
   agreement or a deliberate planning figure beats any list price;
2. `price_data:<family>` / `price_data:all`: the median discount (1 - commitment effective
   rate / on-demand rate of the same SKU) of the rates the price jobs stored in
   commitment_rates (finops.prices.commit_rates), for the instance family the advice is about,
   else across every family of that provider product; rates older than
   `advice.rates_max_age_days` are not used;
3. `default`: the round planning figures of settings.DEFAULT_DISCOUNTS.
The median, not the mean: one odd size (a commitment dearer than on demand is dropped before)
should not move the rate of a family."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from finops.commitments.advice import Offer
from finops.commitments.settings import CommitmentsSettings

RateKey = tuple[str, str, int, str, str]  # provider, product, term years, payment, family or "all"
ALL = "all"


def median(values: Iterable[Decimal]) -> Decimal:
    v = sorted(values)
    if not v:
        raise ValueError("median of nothing")
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def aggregate(rows: Iterable[tuple[str, str, int, str, str, Decimal]]) -> dict[RateKey, Decimal]:
    """(provider, product, term, payment, family, discount) rows -> the median discount per
    family (family names folded to lower case) and per provider product (`all`). Discounts
    outside (0, 1) are left out."""
    groups: dict[RateKey, list[Decimal]] = defaultdict(list)
    for provider, product, term, payment, family, discount in rows:
        d = Decimal(discount)
        if not 0 < d < 1:
            continue
        groups[(provider, product, int(term), payment, str(family).casefold())].append(d)
        groups[(provider, product, int(term), payment, ALL)].append(d)
    return {k: median(v) for k, v in groups.items()}


def load(wh: Any, settings: CommitmentsSettings, now: datetime) -> dict[RateKey, Decimal]:
    """The stored price-data rates, aggregated; empty when the price jobs stored none."""
    if not wh.table_exists("commitment_rates"):
        return {}
    since = now - timedelta(days=settings.advice.rates_max_age_days)
    return aggregate(
        (p, prod, t, pay, fam, Decimal(d))
        for p, prod, t, pay, fam, d in wh.query(
            "SELECT provider, product, term_years, payment, family, discount FROM commitment_rates "
            "WHERE observed_at >= ?",
            [since],
        )
    )


def offers(
    settings: CommitmentsSettings,
    provider: str,
    product: str,
    scope: str = ALL,
    price_rates: Mapping[RateKey, Decimal] | None = None,
) -> list[Offer]:
    """Every (term, payment) of one product with its discount and rate_source (see the module):
    settings.offers' list (defaults merged with finops.yaml), each rate the user did not set
    replaced by the price data's where there is one."""
    price_rates = price_rates or {}
    explicit = settings.discounts.get(provider, {}).get(product, {})  # type: ignore[call-overload]
    out = []
    for o in settings.offers(provider, product):
        if o.payment in explicit.get(f"{o.term_years}y", {}):
            out.append(replace(o, rate_source="config"))
            continue
        fam = (provider, product, o.term_years, o.payment, scope.casefold())
        whole = (provider, product, o.term_years, o.payment, ALL)
        if scope != ALL and fam in price_rates:
            out.append(replace(o, discount=price_rates[fam], rate_source=f"price_data:{scope}"))
        elif whole in price_rates:
            out.append(replace(o, discount=price_rates[whole], rate_source=f"price_data:{ALL}"))
        else:
            out.append(replace(o, rate_source="default"))
    return out
