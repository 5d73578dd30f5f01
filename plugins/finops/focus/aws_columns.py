"""The column lists AWS documents for its billing exports, and what a delivery's columns say
about which variant it is. Pure data + string tests: no I/O, no DuckDB.

Sources (AWS Cost and Usage Report user guide, "Data Exports" table dictionaries):
- CUR 2.0: table-dictionary-cur2.html (table COST_AND_USAGE_REPORT; the `line_item_resource_id`
  column is present only with INCLUDE_RESOURCES, `split_line_item_*` only with
  INCLUDE_SPLIT_COST_ALLOCATION_DATA; a custom export selects any subset of the columns).
- FOCUS 1.0 with AWS columns: table-dictionary-focus-1-0-aws-columns.html (FOCUS_1_0_AWS).
- FOCUS 1.2 with AWS columns: table-dictionary-focus-1-2-aws-columns.html (FOCUS_1_2_AWS).
- Legacy CUR: data-dictionary.html; csv headers are `category/Name` (`lineItem/UnblendedCost`),
  parquet and Athena columns the snake form (`line_item_unblended_cost`), one column per tag
  (`resourceTags/user:team` / `resource_tags_user_team`).

Granularity (hourly / daily / monthly) is a table configuration, not a column: the same
columns arrive whatever it is, so a variant named from the columns cannot tell it (the rows'
ChargePeriodStart / End say it, and the mapping does not depend on it).
"""

from __future__ import annotations

from collections.abc import Sequence

# The documented lists, compact, in the order AWS lists them.
# fmt: off
CUR2_COLUMNS: tuple[str, ...] = (
    "bill_bill_type", "bill_billing_entity", "bill_billing_period_end_date", "bill_billing_period_start_date",
    "bill_invoice_id", "bill_invoicing_entity", "bill_payer_account_id", "bill_payer_account_name", "cost_category",
    "discount", "discount_bundled_discount", "discount_total_discount", "identity_line_item_id",
    "identity_time_interval", "line_item_availability_zone", "line_item_blended_cost", "line_item_blended_rate",
    "line_item_currency_code", "line_item_legal_entity", "line_item_line_item_description",
    "line_item_line_item_type", "line_item_net_unblended_cost", "line_item_net_unblended_rate",
    "line_item_normalization_factor", "line_item_normalized_usage_amount", "line_item_operation",
    "line_item_product_code", "line_item_resource_id", "line_item_tax_type", "line_item_unblended_cost",
    "line_item_unblended_rate", "line_item_usage_account_id", "line_item_usage_account_name",
    "line_item_usage_amount", "line_item_usage_end_date", "line_item_usage_start_date", "line_item_usage_type",
    "pricing_currency", "pricing_lease_contract_length", "pricing_offering_class", "pricing_public_on_demand_cost",
    "pricing_public_on_demand_rate", "pricing_purchase_option", "pricing_rate_code", "pricing_rate_id",
    "pricing_term", "pricing_unit", "product", "product_comment", "product_fee_code", "product_fee_description",
    "product_from_location", "product_from_location_type", "product_from_region_code", "product_instance_family",
    "product_instance_type", "product_instancesku", "product_location", "product_location_type",
    "product_operation", "product_pricing_unit", "product_product_family", "product_region_code",
    "product_servicecode", "product_sku", "product_to_location", "product_to_location_type",
    "product_to_region_code", "product_usagetype", "reservation_amortized_upfront_cost_for_usage",
    "reservation_amortized_upfront_fee_for_billing_period", "reservation_availability_zone",
    "reservation_effective_cost", "reservation_end_time", "reservation_modification_status",
    "reservation_net_amortized_upfront_cost_for_usage", "reservation_net_amortized_upfront_fee_for_billing_period",
    "reservation_net_effective_cost", "reservation_net_recurring_fee_for_usage",
    "reservation_net_unused_amortized_upfront_fee_for_billing_period", "reservation_net_unused_recurring_fee",
    "reservation_net_upfront_value", "reservation_normalized_units_per_reservation",
    "reservation_number_of_reservations", "reservation_recurring_fee_for_usage", "reservation_reservation_a_r_n",
    "reservation_start_time", "reservation_subscription_id", "reservation_total_reserved_normalized_units",
    "reservation_total_reserved_units", "reservation_units_per_reservation",
    "reservation_unused_amortized_upfront_fee_for_billing_period", "reservation_unused_normalized_unit_quantity",
    "reservation_unused_quantity", "reservation_unused_recurring_fee", "reservation_upfront_value", "resource_tags",
    "savings_plan_amortized_upfront_commitment_for_billing_period", "savings_plan_end_time",
    "savings_plan_instance_type_family", "savings_plan_net_amortized_upfront_commitment_for_billing_period",
    "savings_plan_net_recurring_commitment_for_billing_period", "savings_plan_net_savings_plan_effective_cost",
    "savings_plan_offering_type", "savings_plan_payment_option", "savings_plan_purchase_term",
    "savings_plan_recurring_commitment_for_billing_period", "savings_plan_region",
    "savings_plan_savings_plan_a_r_n", "savings_plan_savings_plan_effective_cost", "savings_plan_savings_plan_rate",
    "savings_plan_start_time", "savings_plan_total_commitment_to_date", "savings_plan_used_commitment",
    "split_line_item_actual_usage", "split_line_item_net_split_cost", "split_line_item_net_unused_cost",
    "split_line_item_parent_resource_id", "split_line_item_public_on_demand_split_cost",
    "split_line_item_public_on_demand_unused_cost", "split_line_item_reserved_usage", "split_line_item_split_cost",
    "split_line_item_split_usage", "split_line_item_split_usage_ratio", "split_line_item_unused_cost",
)
CUR2_RESOURCE_COLUMN = "line_item_resource_id"  # only with INCLUDE_RESOURCES
SPLIT_PREFIX = "split_line_item_"  # only with INCLUDE_SPLIT_COST_ALLOCATION_DATA

FOCUS_1_0_AWS_COLUMNS: tuple[str, ...] = (
    "AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency",
    "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription",
    "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart", "CommitmentDiscountCategory", "CommitmentDiscountId",
    "CommitmentDiscountName", "CommitmentDiscountStatus", "CommitmentDiscountType", "ConsumedQuantity",
    "ConsumedUnit", "ContractedCost", "ContractedUnitPrice", "EffectiveCost", "InvoiceIssuerName", "ListCost",
    "ListUnitPrice", "PricingCategory", "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName",
    "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType", "ServiceCategory", "ServiceName",
    "SkuId", "SkuPriceId", "SubAccountId", "SubAccountName", "Tags", "x_CostCategories", "x_Discounts",
    "x_Operation", "x_ServiceCode", "x_UsageType",
)
FOCUS_1_2_AWS_COLUMNS: tuple[str, ...] = (
    "AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName", "BillingAccountType",
    "BillingCurrency", "BillingPeriodEnd", "BillingPeriodStart", "CapacityReservationId",
    "CapacityReservationStatus", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency",
    "ChargePeriodEnd", "ChargePeriodStart", "CommitmentDiscountCategory", "CommitmentDiscountId",
    "CommitmentDiscountName", "CommitmentDiscountQuantity", "CommitmentDiscountStatus", "CommitmentDiscountType",
    "CommitmentDiscountUnit", "ConsumedQuantity", "ConsumedUnit", "ContractedCost", "ContractedUnitPrice",
    "EffectiveCost", "InvoiceId", "InvoiceIssuerName", "ListCost", "ListUnitPrice", "PricingCategory",
    "PricingCurrency", "PricingCurrencyContractedUnitPrice", "PricingCurrencyEffectiveCost",
    "PricingCurrencyListUnitPrice", "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "RegionId",
    "RegionName", "ResourceId", "ResourceName", "ResourceType", "ServiceCategory", "ServiceName",
    "ServiceSubcategory", "SkuId", "SkuMeter", "SkuPriceDetails", "SkuPriceId", "SubAccountId", "SubAccountName",
    "SubAccountType", "Tags", "x_Discounts", "x_Operation", "x_ServiceCode",
)
# fmt: on
# Columns FOCUS 1.2 added that the 1.0 export does not have: any of them marks a 1.2 export.
FOCUS_1_2_ONLY = frozenset(FOCUS_1_2_AWS_COLUMNS) - frozenset(FOCUS_1_0_AWS_COLUMNS)


def _selection(present: set[str], documented: Sequence[str]) -> str:
    n = sum(1 for c in documented if c in present)
    return (
        "all documented columns" if n == len(documented) else f"{n} of {len(documented)} documented columns"
    )


def cur2_variant(columns: Sequence[str]) -> str:
    """'AWS CUR 2.0, with resource IDs, split cost allocation, 60 of 125 documented columns'."""
    present = set(columns)
    parts = ["AWS CUR 2.0 (Data Exports)"]
    parts.append("with resource IDs" if CUR2_RESOURCE_COLUMN in present else "no resource IDs")
    if any(c.startswith(SPLIT_PREFIX) for c in present):
        parts.append("split cost allocation")
    parts.append(
        _selection(
            present, [c for c in CUR2_COLUMNS if c != CUR2_RESOURCE_COLUMN and not c.startswith(SPLIT_PREFIX)]
        )
    )
    return ", ".join(parts)


def legacy_variant(columns: Sequence[str]) -> str:
    """'AWS legacy CUR, csv headers (lineItem/UnblendedCost), 3 tag columns, with resource IDs'."""
    slash = [c for c in columns if "/" in c]
    if slash:
        form = "csv headers (lineItem/UnblendedCost)"
        tags = sum(1 for c in slash if c.lower().startswith("resourcetags/"))
        resource = "lineItem/ResourceId" in columns
    else:
        form = "parquet / Athena names (line_item_unblended_cost)"
        tags = sum(1 for c in columns if c.startswith("resource_tags_"))
        resource = "line_item_resource_id" in columns
    return ", ".join(
        [
            "AWS legacy CUR",
            form,
            f"{tags} tag column(s)",
            "with resource IDs" if resource else "no resource IDs",
        ]
    )


def focus_variant(columns: Sequence[str]) -> str:
    """'AWS FOCUS 1.2 export, all documented columns' (1.0 when no 1.2-only column is there)."""
    present = set(columns)
    lower = {c.lower() for c in columns}
    is_12 = any(c.lower() in lower for c in FOCUS_1_2_ONLY)
    documented = FOCUS_1_2_AWS_COLUMNS if is_12 else FOCUS_1_0_AWS_COLUMNS
    present_ci = {c for c in documented if c in present or c.lower() in lower}
    return f"AWS FOCUS {'1.2' if is_12 else '1.0'} export, {_selection(present_ci, documented)}"
