"""FOCUS 1.2 schema: the single source of truth.

The warehouse DDL, the per-provider converters, the Great Expectations suite and the
`finops export focus` command are all generated from COLUMNS below, so a column added
here shows up everywhere at once. Spec text: FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec,
`specification/columns/`.

Extension columns (our own, prefixed `x_`) carry lineage: which configured source and
billing period a row belongs to (the idempotent-replace partition key) and the raw
provider fields that showback / anomaly root-cause need.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

FOCUS_VERSION = "1.2"


class Level(StrEnum):
    REQUIRED = "Mandatory"
    RECOMMENDED = "Recommended"
    CONDITIONAL = "Conditional"
    EXTENSION = "Extension"


class Kind(StrEnum):
    """Logical types; each backend maps them to its own SQL types (see warehouse.types)."""

    STRING = "string"
    MONEY = "money"  # exact decimal: totals must reconcile to the cent
    QUANTITY = "quantity"  # exact decimal, more scale
    TIMESTAMP = "timestamp"  # UTC, no time zone stored
    JSON = "json"


@dataclass(frozen=True)
class Column:
    name: str  # FOCUS spec name, e.g. "BilledCost"
    kind: Kind
    level: Level
    nullable: bool = True
    allowed: tuple[str, ...] | None = None
    description: str = ""

    @property
    def snake(self) -> str:
        return to_snake(self.name)


def to_snake(name: str) -> str:
    """BilledCost -> billed_cost; SkuPriceId -> sku_price_id; x_Source stays x_source."""
    if name.startswith("x_"):
        return name.lower()
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


CHARGE_CATEGORIES = ("Usage", "Purchase", "Tax", "Credit", "Adjustment")
CHARGE_CLASSES = ("Correction",)
CHARGE_FREQUENCIES = ("One-Time", "Recurring", "Usage-Based")
PRICING_CATEGORIES = ("Standard", "Dynamic", "Committed", "Other")
COMMITMENT_CATEGORIES = ("Spend", "Usage")
COMMITMENT_STATUSES = ("Used", "Unused")
CAPACITY_RESERVATION_STATUSES = ("Used", "Unused")
SERVICE_CATEGORIES = (
    "AI and Machine Learning",
    "Analytics",
    "Business Applications",
    "Compute",
    "Databases",
    "Developer Tools",
    "Multicloud",
    "Identity",
    "Integration",
    "Internet of Things",
    "Management and Governance",
    "Media",
    "Migration",
    "Mobile",
    "Networking",
    "Security",
    "Storage",
    "Web",
    "Other",
)

SERVICE_SUBCATEGORIES: dict[str, str] = {  # subcategory -> its one parent ServiceCategory (FOCUS 1.2)
    "AI Platforms": "AI and Machine Learning",
    "Bots": "AI and Machine Learning",
    "Generative AI": "AI and Machine Learning",
    "Machine Learning": "AI and Machine Learning",
    "Natural Language Processing": "AI and Machine Learning",
    "Other (AI and Machine Learning)": "AI and Machine Learning",
    "Analytics Platforms": "Analytics",
    "Business Intelligence": "Analytics",
    "Data Processing": "Analytics",
    "Search": "Analytics",
    "Streaming Analytics": "Analytics",
    "Other (Analytics)": "Analytics",
    "Productivity and Collaboration": "Business Applications",
    "Other (Business Applications)": "Business Applications",
    "Containers": "Compute",
    "End User Computing": "Compute",
    "Quantum Compute": "Compute",
    "Serverless Compute": "Compute",
    "Virtual Machines": "Compute",
    "Other (Compute)": "Compute",
    "Caching": "Databases",
    "Data Warehouses": "Databases",
    "Ledger Databases": "Databases",
    "NoSQL Databases": "Databases",
    "Relational Databases": "Databases",
    "Time Series Databases": "Databases",
    "Other (Databases)": "Databases",
    "Developer Platforms": "Developer Tools",
    "Continuous Integration and Deployment": "Developer Tools",
    "Development Environments": "Developer Tools",
    "Source Code Management": "Developer Tools",
    "Quality Assurance": "Developer Tools",
    "Other (Developer Tools)": "Developer Tools",
    "Identity and Access Management": "Identity",
    "Other (Identity)": "Identity",
    "API Management": "Integration",
    "Messaging": "Integration",
    "Workflow Orchestration": "Integration",
    "Other (Integration)": "Integration",
    "IoT Analytics": "Internet of Things",
    "IoT Platforms": "Internet of Things",
    "Other (Internet of Things)": "Internet of Things",
    "Architecture": "Management and Governance",
    "Compliance": "Management and Governance",
    "Cost Management": "Management and Governance",
    "Data Governance": "Management and Governance",
    "Disaster Recovery": "Management and Governance",
    "Endpoint Management": "Management and Governance",
    "Observability": "Management and Governance",
    "Support": "Management and Governance",
    "Other (Management and Governance)": "Management and Governance",
    "Content Creation": "Media",
    "Gaming": "Media",
    "Media Streaming": "Media",
    "Mixed Reality": "Media",
    "Other (Media)": "Media",
    "Data Migration": "Migration",
    "Resource Migration": "Migration",
    "Other (Migration)": "Migration",
    "Other (Mobile)": "Mobile",
    "Multicloud Integration": "Multicloud",
    "Other (Multicloud)": "Multicloud",
    "Application Networking": "Networking",
    "Content Delivery": "Networking",
    "Network Connectivity": "Networking",
    "Network Infrastructure": "Networking",
    "Network Routing": "Networking",
    "Network Security": "Networking",
    "Other (Networking)": "Networking",
    "Secret Management": "Security",
    "Security Posture Management": "Security",
    "Threat Detection and Response": "Security",
    "Other (Security)": "Security",
    "Backup Storage": "Storage",
    "Block Storage": "Storage",
    "File Storage": "Storage",
    "Object Storage": "Storage",
    "Storage Platforms": "Storage",
    "Other (Storage)": "Storage",
    "Application Platforms": "Web",
    "Other (Web)": "Web",
    "Other (Other)": "Other",
}

# Lessons from running focus-validator 2.2.1 (rules model 1.2.0.1) on our exports:
# - ProviderName must equal InvoiceIssuerName unless a third party is paid (then BilledCost = 0);
# - InvoiceId-C-004-C (MUST be null) and -C-005-C (MUST NOT be null) are both unconditional in
#   2.2.1, so exactly one always fails; dropping the column fails 7 rules, so we keep InvoiceId
#   filled (the provisional invoice id for open months) and accept that single known failure;
# - ServiceSubcategory must not be null, must be one of SERVICE_SUBCATEGORIES with the matching
#   parent ServiceCategory, and each ServiceName should map to exactly one subcategory;
# - export parquet for exact types (CSV makes the validator guess: ids become numbers).

_S, _M, _Q, _T, _J = Kind.STRING, Kind.MONEY, Kind.QUANTITY, Kind.TIMESTAMP, Kind.JSON
_R, _RC, _C, _X = Level.REQUIRED, Level.RECOMMENDED, Level.CONDITIONAL, Level.EXTENSION


def _c(
    name: str, kind: Kind, level: Level, nullable: bool = True, allowed=None, description: str = ""
) -> Column:
    return Column(name, kind, level, nullable, tuple(allowed) if allowed else None, description)


FOCUS_COLUMNS: tuple[Column, ...] = (
    # --- Mandatory -------------------------------------------------------------------
    _c("BilledCost", _M, _R, False, description="What the invoice charges for this row."),
    _c("BillingAccountId", _S, _R, False),
    _c("BillingAccountName", _S, _R),
    _c("BillingCurrency", _S, _R, False),
    _c("BillingPeriodStart", _T, _R, False),
    _c("BillingPeriodEnd", _T, _R, False),
    _c("ChargeCategory", _S, _R, False, CHARGE_CATEGORIES),
    _c("ChargeClass", _S, _R, True, CHARGE_CLASSES),
    _c("ChargeDescription", _S, _R),
    _c("ChargePeriodStart", _T, _R, False),
    _c("ChargePeriodEnd", _T, _R, False),
    _c("ContractedCost", _M, _R, False),
    _c("EffectiveCost", _M, _R, False, description="Amortised cost after commitment discounts."),
    _c("InvoiceIssuerName", _S, _R, False),
    _c("ListCost", _M, _R, False),
    _c("PricingQuantity", _Q, _R),
    _c("PricingUnit", _S, _R),
    _c("ProviderName", _S, _R, False),
    _c("PublisherName", _S, _R, False),
    _c("ServiceCategory", _S, _R, False, SERVICE_CATEGORIES),
    _c("ServiceName", _S, _R, False),
    # --- Recommended -----------------------------------------------------------------
    _c("AvailabilityZone", _S, _RC),
    _c("ChargeFrequency", _S, _RC, True, CHARGE_FREQUENCIES),
    _c("InvoiceId", _S, _RC),
    _c("ServiceSubcategory", _S, _RC, True, tuple(SERVICE_SUBCATEGORIES)),
    # --- Conditional -----------------------------------------------------------------
    _c("BillingAccountType", _S, _C),
    _c("CapacityReservationId", _S, _C),
    _c("CapacityReservationStatus", _S, _C, True, CAPACITY_RESERVATION_STATUSES),
    _c("CommitmentDiscountCategory", _S, _C, True, COMMITMENT_CATEGORIES),
    _c("CommitmentDiscountId", _S, _C),
    _c("CommitmentDiscountName", _S, _C),
    _c("CommitmentDiscountQuantity", _Q, _C),
    _c("CommitmentDiscountStatus", _S, _C, True, COMMITMENT_STATUSES),
    _c("CommitmentDiscountType", _S, _C),
    _c("CommitmentDiscountUnit", _S, _C),
    _c("ConsumedQuantity", _Q, _C),
    _c("ConsumedUnit", _S, _C),
    _c("ContractedUnitPrice", _Q, _C),
    _c("ListUnitPrice", _Q, _C),
    _c("PricingCategory", _S, _C, True, PRICING_CATEGORIES),
    _c("PricingCurrency", _S, _C),
    _c("PricingCurrencyContractedUnitPrice", _Q, _C),
    _c("PricingCurrencyEffectiveCost", _M, _C),
    _c("PricingCurrencyListUnitPrice", _Q, _C),
    _c("RegionId", _S, _C),
    _c("RegionName", _S, _C),
    _c("ResourceId", _S, _C),
    _c("ResourceName", _S, _C),
    _c("ResourceType", _S, _C),
    _c("SkuId", _S, _C),
    _c("SkuMeter", _S, _C),
    _c("SkuPriceDetails", _J, _C),
    _c("SkuPriceId", _S, _C),
    _c("SubAccountId", _S, _C),
    _c("SubAccountName", _S, _C),
    _c("SubAccountType", _S, _C),
    _c("Tags", _J, _C, description="JSON object of resource tags / labels, keys as the provider sent them."),
)

# Our extension columns. x_source + x_billing_period is the replace-partition key.
EXTENSION_COLUMNS: tuple[Column, ...] = (
    _c("x_source", _S, _X, False, description="Configured source name (finops.yaml)."),
    _c("x_billing_period", _S, _X, False, description="YYYY-MM of BillingPeriodStart."),
    _c("x_provider", _S, _X, False, description="aws | gcp | azure | lambda"),
    _c("x_usage_type", _S, _X),
    _c("x_operation", _S, _X),
    _c("x_charge_type", _S, _X, description="Provider's raw line-item / charge type."),
    _c("x_instance_type", _S, _X),
    _c("x_load_id", _S, _X, False, description="load_log.load_id that wrote this row."),
)

COLUMNS: tuple[Column, ...] = FOCUS_COLUMNS + EXTENSION_COLUMNS
BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}
BY_SNAKE: dict[str, Column] = {c.snake: c for c in COLUMNS}
PARTITION_KEYS = ("x_source", "x_billing_period")
MONEY_COLUMNS = tuple(c.snake for c in COLUMNS if c.kind is Kind.MONEY)

# Exact types for money: 38 digits, 10 after the point (AWS CUR carries up to 10 decimals).
MONEY_PRECISION, MONEY_SCALE = 38, 10
QUANTITY_PRECISION, QUANTITY_SCALE = 38, 12


def required_columns() -> list[Column]:
    return [c for c in FOCUS_COLUMNS if c.level is Level.REQUIRED]


def not_null_columns() -> list[Column]:
    return [c for c in COLUMNS if not c.nullable]


def snake_names() -> list[str]:
    return [c.snake for c in COLUMNS]


def arrow_schema():
    """pyarrow schema of the canonical FOCUS table (snake_case, warehouse order)."""
    import pyarrow as pa

    def t(k: Kind):
        return {
            Kind.STRING: pa.string(),
            Kind.MONEY: pa.decimal128(MONEY_PRECISION, MONEY_SCALE),
            Kind.QUANTITY: pa.decimal128(QUANTITY_PRECISION, QUANTITY_SCALE),
            Kind.TIMESTAMP: pa.timestamp("us"),
            Kind.JSON: pa.string(),
        }[k]

    return pa.schema([pa.field(c.snake, t(c.kind), nullable=c.nullable) for c in COLUMNS])


@dataclass(frozen=True)
class Issue:
    column: str
    problem: str


@dataclass
class SchemaCheck:
    """Result of comparing a batch's columns with the canonical list."""

    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing
