"""finops.yaml `commitments:` section (finops_commitments DAG): windows, alert thresholds,
discount rates for the purchase advice, and commitments the exports carry no end date for.

Discount rates are the share off on-demand a commitment gives, per provider / product / term
/ payment option. The defaults are round planning figures near the providers' published
"up to" rates for compute; GPU families and negotiated agreements differ, so set your own
(`commitments.discounts.aws.savings_plan.1y.no_upfront: 0.27`). A bad key or value fails
when the file loads, naming the key."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from finops.commitments.advice import PAYMENTS, Offer
from finops.exceptions import ConfigError

Provider = Literal["aws", "gcp", "azure"]

# provider -> product -> term -> payment -> discount. GCP CUDs and Azure commitments have no
# upfront discount of their own (GCP bills monthly; Azure prices monthly and upfront alike).
DEFAULT_DISCOUNTS: dict[str, dict[str, dict[str, dict[str, str]]]] = {
    "aws": {
        "savings_plan": {  # Compute Savings Plans
            "1y": {"no_upfront": "0.20", "partial_upfront": "0.24", "all_upfront": "0.26"},
            "3y": {"no_upfront": "0.40", "partial_upfront": "0.45", "all_upfront": "0.48"},
        },
        "reserved_instance": {  # standard RIs
            "1y": {"no_upfront": "0.30", "partial_upfront": "0.35", "all_upfront": "0.37"},
            "3y": {"no_upfront": "0.50", "partial_upfront": "0.56", "all_upfront": "0.58"},
        },
    },
    "gcp": {
        "resource_cud": {"1y": {"no_upfront": "0.37"}, "3y": {"no_upfront": "0.55"}},
        "spend_cud": {"1y": {"no_upfront": "0.28"}, "3y": {"no_upfront": "0.46"}},
    },
    "azure": {
        "reservation": {
            "1y": {"no_upfront": "0.40", "all_upfront": "0.40"},
            "3y": {"no_upfront": "0.60", "all_upfront": "0.60"},
        },
        "savings_plan": {
            "1y": {"no_upfront": "0.25", "all_upfront": "0.25"},
            "3y": {"no_upfront": "0.45", "all_upfront": "0.45"},
        },
    },
}
# products bought per instance family (the others cover a provider's whole compute spend)
PER_FAMILY = frozenset({("aws", "reserved_instance"), ("gcp", "resource_cud"), ("azure", "reservation")})


class CommitmentsConfigError(ConfigError):
    pass


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DeclaredCommitment(_Model):
    """A commitment whose end date no export carries (GCP, Azure without the reservations
    API): declared here so the calendar and alerts still see it."""

    provider: Provider
    id: str = Field(min_length=1, max_length=400, description="its CommitmentDiscountId in focus_costs")
    end: date
    start: date | None = None
    description: str = Field(default="", max_length=400)


class EndDateSource(_Model):
    """A provider API the DAG reads commitment end dates from (finops.commitments.sources):
    Azure reservation and savings plan orders, GCP Compute commitments of one project."""

    provider: Literal["azure", "gcp"]
    conn_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=250,
        description="Airflow connection: azure / google_cloud_platform, or http (host + bearer token)",
    )
    project: str | None = Field(
        default=None,
        pattern=r"^([a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$",
        description="GCP project id (default: the connection's project)",
    )
    base_url: str | None = Field(
        default=None, pattern=r"^https?://[^\s?#]+$", description="API host other than the provider's"
    )
    cud_export_table: str | None = Field(
        default=None,
        pattern=r"^([a-z][a-z0-9.:-]*[a-z0-9]\.)?[A-Za-z0-9_]{1,1024}\.[A-Za-z0-9_-]{1,1024}$",
        description="GCP CUD metadata export `project.dataset.cud_subscriptions_export`, read through "
        "conn_id's BigQuery client instead of the Compute API",
    )

    @model_validator(mode="after")
    def _check(self) -> EndDateSource:
        if not self.conn_id and not self.base_url:
            raise ValueError("conn_id is required unless base_url points at a local server")
        if self.provider == "azure" and self.project:
            raise ValueError("project: only for provider gcp")
        if self.cud_export_table and self.provider != "gcp":
            raise ValueError("cud_export_table: only for provider gcp")
        if self.cud_export_table and (self.base_url or not self.conn_id):
            raise ValueError(
                "cud_export_table: read through conn_id's BigQuery connection (its api_endpoint extra "
                "names an emulator); base_url is not used"
            )
        return self


class AdviceSettings(_Model):
    lookback_days: int = Field(default=60, ge=7, le=400, description="days of usage behind the advice")
    drop_share: float = Field(default=0.2, ge=0, lt=1, description="usage drop the risk is simulated at")
    min_monthly_savings: float = Field(default=0, ge=0, description="leave out advice saving less per month")
    families: int = Field(default=10, ge=1, le=200, description="per-family products: the N largest families")
    rates_max_age_days: int = Field(
        default=35, ge=1, le=400, description="price-data discount rates older than this are not used"
    )


class CommitmentsSettings(_Model):
    history_days: int = Field(
        default=35, ge=1, le=800, description="days of coverage / utilisation rewritten per run"
    )
    warn_days: list[int] = Field(
        default=[30, 7], min_length=1, description="alert this many days before an end"
    )
    utilisation_floor: float | None = Field(
        default=0.8, ge=0, le=1, description="alert when a commitment's utilisation is under this share"
    )
    utilisation_days: int = Field(
        default=7, ge=1, le=92, description="window the utilisation floor is checked on"
    )
    providers: list[Provider] = ["aws", "gcp", "azure"]
    advice: AdviceSettings = AdviceSettings()
    discounts: dict[Provider, dict[str, dict[Literal["1y", "3y"], dict[str, float]]]] = Field(
        default_factory=dict, description="overrides merged over DEFAULT_DISCOUNTS"
    )
    inventory: list[DeclaredCommitment] = []
    end_date_sources: list[EndDateSource] = Field(
        default=[], description="provider APIs the DAG reads end dates from"
    )

    @field_validator("warn_days")
    @classmethod
    def _warn(cls, v: list[int]) -> list[int]:
        if any(d < 0 for d in v):
            raise ValueError("whole days >= 0, e.g. [30, 7]")
        return sorted(set(v), reverse=True)

    @field_validator("discounts")
    @classmethod
    def _discounts(cls, v: dict) -> dict:
        for provider, products in v.items():
            for product, terms in products.items():
                if product not in DEFAULT_DISCOUNTS[provider]:
                    known = ", ".join(DEFAULT_DISCOUNTS[provider])
                    raise ValueError(f"{provider}.{product}: unknown product (known: {known})")
                for term, payments in terms.items():
                    for payment, rate in payments.items():
                        if payment not in PAYMENTS:
                            raise ValueError(
                                f"{provider}.{product}.{term}.{payment}: payment is one of {PAYMENTS}"
                            )
                        if not 0 <= rate < 1:
                            raise ValueError(
                                f"{provider}.{product}.{term}.{payment}: {rate} is not in [0, 1)"
                            )
        return v

    def offers(self, provider: str, product: str) -> list[Offer]:
        """Every (term, payment) of one product, defaults overridden by `discounts`."""
        terms: dict[str, dict[str, Any]] = {
            t: dict(p) for t, p in DEFAULT_DISCOUNTS[provider][product].items()
        }
        for t, p in self.discounts.get(provider, {}).get(product, {}).items():  # type: ignore[call-overload]
            terms.setdefault(t, {}).update(p)
        return [
            Offer(provider, product, int(t[0]), pay, Decimal(str(rate)))  # type: ignore[arg-type]
            for t, pays in sorted(terms.items())
            for pay, rate in pays.items()
        ]


def parse_settings(data: Any) -> CommitmentsSettings:
    try:
        return CommitmentsSettings.model_validate(data or {})
    except ValidationError as e:
        lines = []
        for err in e.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(root)"
            lines.append(f"commitments.{loc}: {err['msg']}")
        raise CommitmentsConfigError("\n".join(lines)) from None


def commitments_settings(section: dict | None = None) -> CommitmentsSettings:
    """The given section, or finops.yaml's (validated when the file loaded)."""
    if section is None:
        from finops.config import get_config

        return get_config().commitments
    return parse_settings(section)
