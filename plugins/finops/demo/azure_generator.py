"""Deterministic Azure Cost Management export files (EA and MCA column layouts).

Headers: MCA as the Cost Details API / exports write it (2023-12-01-preview column order);
EA in the classic export order (field set of the EA 2021-10-01 schema). EA tags are the
JSON members without braces, MCA tags a JSON object. Dates are MM/DD/YYYY as exports
write them. `generate()` returns the rows per layout plus the totals a correct FOCUS load
must give, computed here independently of the converter.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

MCA_HEADER = (
    "invoiceId,previousInvoiceId,billingAccountId,billingAccountName,billingProfileId,billingProfileName,"
    "invoiceSectionId,invoiceSectionName,resellerName,resellerMpnId,costCenter,billingPeriodEndDate,"
    "billingPeriodStartDate,servicePeriodEndDate,servicePeriodStartDate,date,serviceFamily,productOrderId,"
    "productOrderName,consumedService,meterId,meterName,meterCategory,meterSubCategory,meterRegion,ProductId,"
    "ProductName,SubscriptionId,subscriptionName,publisherType,publisherId,publisherName,resourceGroupName,"
    "ResourceId,resourceLocation,location,effectivePrice,quantity,unitOfMeasure,chargeType,billingCurrency,"
    "pricingCurrency,costInBillingCurrency,costInPricingCurrency,costInUsd,paygCostInBillingCurrency,paygCostInUsd,"
    "exchangeRatePricingToBilling,exchangeRateDate,isAzureCreditEligible,serviceInfo1,serviceInfo2,additionalInfo,"
    "tags,PayGPrice,frequency,term,reservationId,reservationName,pricingModel,unitPrice,costAllocationRuleName,"
    "benefitId,benefitName,provider"
).split(",")

EA_HEADER = (
    "InvoiceSectionName,AccountName,AccountOwnerId,SubscriptionId,SubscriptionName,ResourceGroup,ResourceLocation,"
    "Date,ProductName,MeterCategory,MeterSubCategory,MeterId,MeterName,MeterRegion,UnitOfMeasure,Quantity,"
    "EffectivePrice,CostInBillingCurrency,CostCenter,ConsumedService,ResourceId,Tags,OfferId,AdditionalInfo,"
    "ServiceInfo1,ServiceInfo2,ResourceName,ReservationId,ReservationName,UnitPrice,ProductOrderId,ProductOrderName,"
    "Term,PublisherType,PublisherName,ChargeType,Frequency,PricingModel,AvailabilityZone,BillingAccountId,"
    "BillingAccountName,BillingCurrencyCode,BillingPeriodStartDate,BillingPeriodEndDate,BillingProfileId,"
    "BillingProfileName,InvoiceSectionId,IsAzureCreditEligible,PartNumber,PayGPrice,PlanName,ServiceFamily,"
    "CostAllocationRuleName,benefitId,benefitName"
).split(",")

# internal key -> (EA column, MCA column)
_COLS: dict[str, tuple[str | None, str | None]] = {
    "account_id": ("BillingAccountId", "billingAccountId"),
    "account_name": ("BillingAccountName", "billingAccountName"),
    "profile_id": ("BillingProfileId", "billingProfileId"),
    "invoice_id": (None, "invoiceId"),
    "sub_id": ("SubscriptionId", "SubscriptionId"),
    "sub_name": ("SubscriptionName", "subscriptionName"),
    "rg": ("ResourceGroup", "resourceGroupName"),
    "loc": ("ResourceLocation", "resourceLocation"),
    "date": ("Date", "date"),
    "pstart": ("BillingPeriodStartDate", "billingPeriodStartDate"),
    "pend": ("BillingPeriodEndDate", "billingPeriodEndDate"),
    "product": ("ProductName", "ProductName"),
    "cat": ("MeterCategory", "meterCategory"),
    "subcat": ("MeterSubCategory", "meterSubCategory"),
    "meter_id": ("MeterId", "meterId"),
    "meter": ("MeterName", "meterName"),
    "uom": ("UnitOfMeasure", "unitOfMeasure"),
    "qty": ("Quantity", "quantity"),
    "eff_price": ("EffectivePrice", "effectivePrice"),
    "unit_price": ("UnitPrice", "unitPrice"),
    "payg_price": ("PayGPrice", "PayGPrice"),
    "cost": ("CostInBillingCurrency", "costInBillingCurrency"),
    "currency": ("BillingCurrencyCode", "billingCurrency"),
    "svc": ("ConsumedService", "consumedService"),
    "rid": ("ResourceId", "ResourceId"),
    "tags": ("Tags", "tags"),
    "info": ("AdditionalInfo", "additionalInfo"),
    "res_id": ("ReservationId", "reservationId"),
    "res_name": ("ReservationName", "reservationName"),
    "charge_type": ("ChargeType", "chargeType"),
    "freq": ("Frequency", "frequency"),
    "pm": ("PricingModel", "pricingModel"),
    "part": ("PartNumber", None),
    "product_id": (None, "ProductId"),
    "publisher_type": ("PublisherType", "publisherType"),
}

_VMS = [
    ("Standard_NC24ads_A100_v4", "NC24ads A100 v4", 3.673, "NCads A100 v4 Series"),
    ("Standard_D8s_v5", "D8s v5", 0.384, "Dsv5 Series"),
    ("Standard_NV36ads_A10_v5", "NV36ads A10 v5", 3.20, "NVadsA10 v5 Series"),
]


@dataclass
class AzureSample:
    layout: str  # ea | mca
    kind: str  # actual | amortized
    period: str
    rows: list[dict[str, Any]]  # internal keys
    billed_total: Decimal
    effective_total: Decimal
    currency: str

    def header(self) -> list[str]:
        return EA_HEADER if self.layout == "ea" else MCA_HEADER

    def csv_bytes(self, gz: bool = False) -> bytes:
        idx = 0 if self.layout == "ea" else 1
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        header = self.header()
        w.writerow(header)
        for r in self.rows:
            out = dict.fromkeys(header, "")
            for key, cols in _COLS.items():
                col = cols[idx]
                if col is not None and col in out and r.get(key) is not None:
                    v = r[key]
                    out[col] = format(v, "f") if isinstance(v, Decimal) else str(v)
            w.writerow([out[h] for h in header])
        data = buf.getvalue().encode("utf-8-sig" if self.layout == "mca" else "utf-8")
        return gzip.compress(data, mtime=0) if gz else data

    def write_csv(self, path: Path, gz: bool = False) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.csv_bytes(gz))
        return path


def _tags(layout: str, tags: dict[str, str]) -> str:
    body = json.dumps(tags, separators=(",", ": "))
    return body[1:-1] if layout == "ea" else body  # EA: members without the outer braces


def generate(
    period: str = "2026-10",
    layout: str = "ea",
    kind: str = "amortized",
    days: int = 3,
    seed: int = 11,
    currency: str = "USD",
) -> AzureSample:
    rng = random.Random(seed)
    y, m = (int(x) for x in period.split("-"))
    first = date(y, m, 1)
    nxt = date(y + (m == 12), m % 12 + 1, 1)
    fx = Decimal("1") if currency == "USD" else Decimal("0.9231")
    acct = "8611537" if layout == "ea" else "a1b2c3d4-0000-4000-8000-123456789abc:e5f6_2019-05-31"
    base = {
        "account_id": acct,
        "account_name": "Contoso",
        "profile_id": "PROF-1" if layout == "mca" else "8611537",
        "invoice_id": "G012345678" if layout == "mca" else None,
        "currency": currency,
        "pstart": first.strftime("%m/%d/%Y"),
        "pend": (nxt - timedelta(days=1)).strftime("%m/%d/%Y"),
        "publisher_type": "Microsoft" if layout == "mca" else "Azure",
    }
    rows: list[dict[str, Any]] = []
    billed = effective = Decimal(0)
    res_id = "/providers/Microsoft.Capacity/reservationOrders/ro-1/reservations/r-1"

    def add(row: dict[str, Any], b: Decimal, e: Decimal) -> None:
        nonlocal billed, effective
        rows.append({**base, **row})
        billed += b
        effective += e

    for d in range(days):
        day = (first + timedelta(days=d)).strftime("%m/%d/%Y")
        for i, (size, meter, price, subcat) in enumerate(_VMS):
            team = ["ml", "web", "data"][i]
            qty = Decimal(str(round(rng.uniform(4, 24), 4)))
            p = (Decimal(str(price)) * fx).quantize(Decimal("0.0001"))
            rid = (
                f"/subscriptions/0000000{i}-1111-2222-3333-444455556666/resourceGroups/rg-{team}/providers/"
                f"Microsoft.Compute/virtualMachines/vm-{team}-{d % 2}"
            )
            common = {
                "date": day,
                "sub_id": f"0000000{i}-1111-2222-3333-444455556666",
                "sub_name": f"sub-{team}",
                "rg": f"rg-{team}",
                "loc": "EastUS",
                "product": f"Virtual Machines {subcat} - {meter} - US East",
                "cat": "Virtual Machines",
                "subcat": subcat,
                "meter_id": f"meter-{i}",
                "meter": meter,
                "uom": "1 Hour",
                "qty": qty,
                "svc": "Microsoft.Compute",
                "rid": rid,
                "tags": _tags(layout, {"team": team, "env": "prod"}),
                "info": json.dumps({"ServiceType": size, "VCPUs": 24}),
                "part": f"AAA-{i:05d}",
                "product_id": f"DZH318Z0BQ{i}P",
                "payg_price": p,
                "freq": "UsageBased",
            }
            if i == 0:  # A100 VM covered by a reservation
                amort = (qty * p * Decimal("0.62")).quantize(Decimal("0.000001"))
                cost = Decimal(0) if kind == "actual" else amort
                add(
                    {
                        **common,
                        "cost": cost,
                        "unit_price": p,
                        "eff_price": cost / qty if qty else 0,
                        "charge_type": "Usage",
                        "pm": "Reservation",
                        "res_id": res_id,
                        "res_name": "A100 1y",
                    },
                    Decimal(0),
                    cost,
                )
            elif i == 2:  # spot
                cost = (qty * p * Decimal("0.3")).quantize(Decimal("0.000001"))
                add(
                    {
                        **common,
                        "cost": cost,
                        "unit_price": p,
                        "eff_price": p * Decimal("0.3"),
                        "charge_type": "Usage",
                        "pm": "Spot",
                    },
                    cost,
                    cost,
                )
            else:
                cost = (qty * p).quantize(Decimal("0.000001"))
                add(
                    {
                        **common,
                        "cost": cost,
                        "unit_price": p,
                        "eff_price": p,
                        "charge_type": "Usage",
                        "pm": "OnDemand",
                    },
                    cost,
                    cost,
                )
        if kind == "amortized":  # part of the reservation went unused that day
            unused = (Decimal("2.5") * fx).quantize(Decimal("0.000001"))
            add(
                {
                    "date": day,
                    "cat": "Virtual Machines",
                    "meter": "NC24ads A100 v4",
                    "uom": "1 Hour",
                    "qty": Decimal("1.1"),
                    "cost": unused,
                    "charge_type": "UnusedReservation",
                    "pm": "Reservation",
                    "res_id": res_id,
                    "res_name": "A100 1y",
                    "freq": "UsageBased",
                    "loc": "EastUS",
                },
                Decimal(0),
                unused,
            )
        storage = (Decimal(str(round(rng.uniform(1, 3), 4))) * fx).quantize(Decimal("0.000001"))
        add(
            {
                "date": day,
                "sub_id": "00000001-1111-2222-3333-444455556666",
                "sub_name": "sub-web",
                "rg": "rg-web",
                "loc": "EastUS",
                "cat": "Storage",
                "subcat": "Premium SSD Managed Disks",
                "meter": "P30 LRS Disk",
                "uom": "1/Month",
                "qty": Decimal("0.0333"),
                "cost": storage,
                "charge_type": "Usage",
                "pm": "OnDemand",
                "svc": "Microsoft.Compute",
                "freq": "UsageBased",
                "tags": "",
                "rid": "/subscriptions/00000001-1111-2222-3333-444455556666/resourceGroups/rg-web/providers/"
                "Microsoft.Compute/disks/disk-1",
            },
            storage,
            storage,
        )
    purchase = (Decimal("1850.00") * fx).quantize(Decimal("0.01"))
    add(
        {
            "date": first.strftime("%m/%d/%Y"),
            "cat": "Virtual Machines",
            "meter": "NC24ads A100 v4",
            "product": "Reserved VM Instance, NC24ads A100 v4, US East, 1 Year",
            "uom": "1 Hour",
            "qty": Decimal(1),
            "cost": purchase,
            "charge_type": "Purchase",
            "pm": "Reservation",
            "res_id": res_id,
            "res_name": "A100 1y",
            "freq": "Recurring",
        },
        purchase,
        Decimal(0),
    )  # FOCUS: commitment purchase has no EffectiveCost
    refund = (Decimal("-120.00") * fx).quantize(Decimal("0.01"))
    add(
        {
            "date": (first + timedelta(days=1)).strftime("%m/%d/%Y"),
            "cat": "Virtual Machines",
            "meter": "D8s v5",
            "product": "Reserved VM Instance, D8s v5, US East, 1 Year (exchange)",
            "uom": "1 Hour",
            "qty": Decimal(1),
            "cost": refund,
            "charge_type": "Refund",
            "pm": "Reservation",
            "freq": "OneTime",
            "res_id": "/providers/Microsoft.Capacity/reservationOrders/ro-0/reservations/r-0",
            "res_name": "D8s old",
        },
        refund,
        Decimal(0),
    )
    return AzureSample(
        layout=layout,
        kind=kind,
        period=period,
        rows=rows,
        billed_total=billed,
        effective_total=effective,
        currency=currency,
    )


FOCUS_HEADER = (
    "AvailabilityZone,BilledCost,BillingAccountId,BillingAccountName,BillingAccountType,BillingCurrency,"
    "BillingPeriodEnd,BillingPeriodStart,ChargeCategory,ChargeClass,ChargeDescription,ChargeFrequency,"
    "ChargePeriodEnd,ChargePeriodStart,CommitmentDiscountCategory,CommitmentDiscountId,CommitmentDiscountName,"
    "CommitmentDiscountStatus,CommitmentDiscountType,ConsumedQuantity,ConsumedUnit,ContractedCost,"
    "ContractedUnitPrice,EffectiveCost,InvoiceIssuerName,ListCost,ListUnitPrice,PricingCategory,PricingQuantity,"
    "PricingUnit,ProviderName,PublisherName,RegionId,RegionName,ResourceId,ResourceName,ResourceType,"
    "ServiceCategory,ServiceName,SkuId,SkuPriceId,SubAccountId,SubAccountName,SubAccountType,Tags,"
    "x_SkuMeterCategory,x_SkuDetails"
).split(",")


def focus_csv_bytes(sample: AzureSample) -> bytes:
    """The amortized sample as Microsoft's FOCUS (1.0) cost export writes it (ISO dates, JSON tags)."""
    if sample.kind != "amortized":
        raise ValueError("build the FOCUS sample from an amortized sample (it carries both costs)")
    y, m = (int(x) for x in sample.period.split("-"))
    start = f"{y:04d}-{m:02d}-01T00:00:00Z"
    end = f"{y + (m == 12):04d}-{m % 12 + 1:02d}-01T00:00:00Z"
    buf = io.StringIO()
    w = csv.DictWriter(buf, FOCUS_HEADER, lineterminator="\n")
    w.writeheader()
    for r in sample.rows:
        ct = r["charge_type"].lower()
        covered = (ct == "usage" and r.get("pm") == "Reservation") or ct.startswith("unused")
        billed = Decimal(0) if covered else r["cost"]
        effective = Decimal(0) if ct in ("purchase", "refund") else r["cost"]
        mm, dd, yy = r["date"].split("/")
        tags = r.get("tags") or ""
        w.writerow(
            {
                "BilledCost": billed,
                "EffectiveCost": effective,
                "ListCost": r["cost"],
                "ContractedCost": r["cost"],
                "BillingAccountId": r["account_id"],
                "BillingAccountName": r["account_name"],
                "BillingAccountType": "Billing Account",
                "BillingCurrency": r["currency"],
                "BillingPeriodStart": start,
                "BillingPeriodEnd": end,
                "ChargeCategory": {
                    "usage": "Usage",
                    "unusedreservation": "Usage",
                    "purchase": "Purchase",
                    "refund": "Purchase",
                }[ct],
                "ChargeClass": "Correction" if ct == "refund" else "",
                "ChargeDescription": r.get("meter") or "",
                "ChargeFrequency": "Usage-Based" if "usage" in ct else "One-Time",
                "ChargePeriodStart": f"{yy}-{mm}-{dd}T00:00:00Z",
                "ChargePeriodEnd": (date(int(yy), int(mm), int(dd)) + timedelta(days=1)).strftime(
                    "%Y-%m-%dT00:00:00Z"
                ),
                "CommitmentDiscountId": r.get("res_id") or "",
                "CommitmentDiscountName": r.get("res_name") or "",
                "CommitmentDiscountCategory": "Usage" if r.get("res_id") else "",
                "CommitmentDiscountType": "Reservation" if r.get("res_id") else "",
                "CommitmentDiscountStatus": "Unused"
                if ct.startswith("unused")
                else ("Used" if covered else ""),
                "ConsumedQuantity": r.get("qty") if ct == "usage" else "",
                "ConsumedUnit": r.get("uom") if ct == "usage" else "",
                "InvoiceIssuerName": "Microsoft",
                "ProviderName": "Microsoft",
                "PublisherName": "Microsoft",
                "PricingCategory": {"Reservation": "Committed", "Spot": "Dynamic"}.get(
                    r.get("pm") or "", "Standard"
                ),
                "PricingQuantity": r.get("qty"),
                "PricingUnit": {"1 Hour": "Hours", "1/Month": "Months"}.get(r.get("uom") or "", r.get("uom")),
                "RegionId": (r.get("loc") or "").lower(),
                "RegionName": "East US" if r.get("loc") else "",
                "ResourceId": (r.get("rid") or "").lower(),
                "ServiceCategory": "Compute" if r.get("cat") == "Virtual Machines" else "Storage",
                "ServiceName": r.get("cat"),
                "SubAccountId": r.get("sub_id") or "",
                "SubAccountName": r.get("sub_name") or "",
                "SubAccountType": "Subscription" if r.get("sub_id") else "",
                "Tags": "{" + tags + "}" if tags and not tags.startswith("{") else tags,
                "x_SkuMeterCategory": r.get("cat"),
                "x_SkuDetails": r.get("info") or "",
            }
        )
    return buf.getvalue().encode()


def manifest(
    *,
    export_name: str,
    run_id: str,
    submitted: str,
    blobs: list[tuple[str, int, int]],
    export_type: str = "AmortizedCost",
    start: str = "2026-10-01",
    end: str = "2026-10-31",
) -> dict[str, Any]:
    """A Cost Management export manifest.json (manifestVersion 2024-04-01 shape).
    blobs: (blobName, byteCount, dataRowCount)."""
    return {
        "manifestVersion": "2024-04-01",
        "byteCount": sum(b[1] for b in blobs),
        "blobCount": len(blobs),
        "dataRowCount": sum(b[2] for b in blobs),
        "exportConfig": {
            "exportName": export_name,
            "resourceId": f"/providers/Microsoft.Billing/billingAccounts/8611537/"
            f"providers/Microsoft.CostManagement/exports/{export_name}",
            "dataVersion": "2021-10-01",
            "apiVersion": "2023-07-01-preview",
            "type": export_type,
            "timeFrame": "MonthToDate",
            "granularity": "Daily",
        },
        "deliveryConfig": {
            "partitionData": True,
            "dataOverwriteBehavior": "CreateNewReport",
            "fileFormat": "Csv",
            "compressionMode": "gzip",
            "containerUri": "/subscriptions/x/storageAccounts/finops",
            "rootFolderPath": "exports",
        },
        "runInfo": {
            "executionType": "Scheduled",
            "submittedTime": submitted,
            "runId": run_id,
            "startDate": f"{start}T00:00:00",
            "endDate": f"{end}T00:00:00",
        },
        "blobs": [{"blobName": n, "byteCount": size, "dataRowCount": rows} for n, size, rows in blobs],
    }
