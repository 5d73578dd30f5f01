"""The `prices:` section of finops.yaml, validated here (config.py keeps it a plain dict)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from finops.config import ConfigError


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class HttpSettings(_M):
    max_attempts: int = Field(default=5, ge=1, le=20)
    backoff_base_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=60.0, ge=0)
    retry_after_max_s: float = Field(default=300.0, ge=0, description="cap on a server's Retry-After")
    timeout_s: float = Field(default=30.0, gt=0)
    max_pages: int = Field(default=500, ge=1, description="safety cap on followed pages per listing")


class CapacityBlocks(_M):
    """AWS Capacity Blocks for ML to describe (never buy): empty instance_types = not fetched."""

    instance_types: list[str] = Field(default=[], description="e.g. [p5.48xlarge]; empty: off")
    instance_count: int = Field(default=1, ge=1, le=64)
    duration_hours: int = Field(default=24, ge=24, le=4368, description="whole days, 1 to 182")
    window_days: int | None = Field(default=None, ge=1, le=182, description="start within N days")


class AwsPrices(_M):
    enabled: bool = True
    conn_id: str = "aws_default"
    regions: list[str] = ["us-east-1", "us-west-2"]
    instance_families: list[str] = ["p5", "p5e", "p4d", "p4de", "g6e", "g6", "g5", "g4dn"]
    lookback_days: int = Field(default=30, ge=1, le=90, description="first run / backfill: AWS keeps 90 days")
    pricing_region: str = Field(default="us-east-1", description="Pricing API endpoint region")
    placement_scores: bool = True
    placement_target_capacity: int = Field(default=1, ge=1)
    placement_instance_types: list[str] = ["p5.48xlarge", "p4d.24xlarge", "g6e.xlarge", "g5.xlarge"]
    commitment_rates: bool = Field(
        default=True, description="RI terms (get_products) and Compute Savings Plans rates for the advice"
    )
    capacity_blocks: CapacityBlocks = CapacityBlocks()


class AzurePrices(_M):
    enabled: bool = True
    conn_id: str | None = Field(
        default=None, description="optional HTTP connection whose host overrides base_url"
    )
    base_url: str = "https://prices.azure.com/api/retail/prices"
    api_version: str = "2023-01-01-preview"
    currency: str = "USD"
    regions: list[str] = ["eastus", "westus2", "westeurope"]
    instance_families: list[str] = Field(
        default=["Standard_NC", "Standard_ND", "Standard_NG", "Standard_NV"],
        description="armSkuName prefixes",
    )
    subscription_id: str | None = Field(
        default=None,
        description="Resource SKUs (specs, zones) are read in this subscription; unset -> static table",
    )
    arm_conn_id: str | None = Field(
        default=None, description="Azure connection (login = client id, password = secret, extra tenantId)"
    )
    arm_base_url: str = "https://management.azure.com"
    commitment_rates: bool = Field(
        default=True, description="reservation and savings plan prices for the advice"
    )


class GcpPrices(_M):
    enabled: bool = True
    conn_id: str | None = Field(
        default=None,
        description="HTTP connection: host = API base, password = API key (or a google_cloud_platform conn)",
    )
    base_url: str = "https://cloudbilling.googleapis.com"
    service_id: str = "6F81-5844-456A"  # Compute Engine
    currency: str = "USD"
    regions: list[str] = ["us-central1", "us-east4", "europe-west4"]
    instance_families: list[str] = Field(default=["a2", "a3", "a4", "g2"], description="machine series")
    project: str | None = Field(
        default=None,
        description="machine types (specs, zones) are listed in this project; unset -> static table",
    )
    compute_base_url: str = "https://compute.googleapis.com"
    commitment_rates: bool = Field(default=True, description="resource-CUD SKU prices for the advice")


class LambdaPrices(_M):
    enabled: bool = True
    conn_id: str = Field(default="lambda_cloud_default", description="HTTP connection, password = API key")
    base_url: str = "https://cloud.lambda.ai"
    auth: str = Field(default="bearer", pattern="^(basic|bearer)$")


class PricesSettings(_M):
    aws: AwsPrices = AwsPrices()
    azure: AzurePrices = AzurePrices()
    gcp: GcpPrices = GcpPrices()
    lambda_cloud: LambdaPrices = Field(default=LambdaPrices(), alias="lambda")
    http: HttpSettings = HttpSettings()


def parse_prices(section: dict[str, Any] | None) -> PricesSettings:
    """Validate the `prices:` mapping; errors name the key path like config.py does."""
    try:
        return PricesSettings.model_validate(section or {})
    except ValidationError as e:
        lines = ["prices." + ".".join(str(p) for p in err["loc"]) + f": {err['msg']}" for err in e.errors()]
        raise ConfigError("\n".join(lines)) from None


def get_prices_settings() -> PricesSettings:
    from finops.config import get_config

    return parse_prices(get_config().prices)
