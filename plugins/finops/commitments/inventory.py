"""Commitment inventory: each commitment's start and end dates, from where providers ship them.

- AWS: the CUR 2.0 columns `savings_plan_start_time` / `savings_plan_end_time` (on
  SavingsPlanRecurringFee lines) and `reservation_start_time` / `reservation_end_time` (RIFee
  lines), read from the raw delivery while it is loaded (`record_from_cur_files`, called by the
  billing DAG after the partition is committed): focus_costs has no end-date column.
- Azure: the Reservations API's reservation orders (`expiryDateTime`, `term`, `reservations[].id`)
  via `azure_reservation_orders`, the Billing Benefits API's savings plan orders via
  `azure_savings_plan_orders` (payloads as the APIs return them; fetched by
  finops.commitments.sources).
- GCP: the Compute API's commitments (`endTimestamp`, `plan`, `resources`) via `gcp_commitments`;
  their resources go to `commitment_resources` (migration 801), from which
  finops.commitments.gcp_attribution gives each commitment its share of the billed CUD fee.
  Spend-based CUDs: Google's CUD metadata export (`cud_subscriptions_export` in BigQuery) via
  `gcp_cud_subscriptions`.
- Anything else: `commitments.inventory` in finops.yaml.

Stored in `commitment_inventory` (migration 800), one row per (provider, commitment id), the
latest delivery winning."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from finops.commitments.gcp_attribution import CommitmentResource

log = logging.getLogger(__name__)

_AWS_SP = (
    "savings_plan_savings_plan_a_r_n",
    "savings_plan_start_time",
    "savings_plan_end_time",
    "savings_plan_offering_type",
    "savings_plan_region",
    "savings_plan_instance_type_family",
    "savings_plan_payment_option",
    "savings_plan_purchase_term",
)
_AWS_RI = (
    "reservation_reservation_a_r_n",
    "reservation_start_time",
    "reservation_end_time",
    "product_instance_type",
    "product_region_code",
    "pricing_purchase_option",
    "pricing_lease_contract_length",
)


@dataclass(frozen=True)
class InventoryItem:
    provider: str
    commitment_id: str
    end: date  # last day it applies (inclusive)
    start: date | None = None
    commitment_type: str = ""
    description: str = ""  # what it covers
    term: str = ""
    payment_option: str = ""
    source: str = ""  # where the dates came from
    resources: tuple[CommitmentResource, ...] = ()  # what it commits to (GCP Compute API)


def parse_time(value: Any) -> datetime | None:
    """ISO-8601 text (`2027-03-01T00:00:00Z`, `2027-03-01T00:00:00.000Z`, `2027-03-01`) or a
    datetime -> naive UTC datetime; blank -> None."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    if isinstance(value, date):
        return datetime.combine(value, datetime.min.time())
    text = str(value).strip().replace("Z", "+00:00")
    dt = datetime.fromisoformat(text)
    return dt.astimezone(UTC).replace(tzinfo=None) if dt.tzinfo else dt


def last_day(end: datetime) -> date:
    """An exclusive end instant -> the last day it still applies (an end at 00:00 means the
    day before)."""
    if end.time() == datetime.min.time():
        return date.fromordinal(end.date().toordinal() - 1)
    return end.date()


def aws_items(rows: Iterable[Mapping[str, Any]]) -> list[InventoryItem]:
    """Distinct Savings Plans / RIs from raw CUR 2.0 rows (dicts of the columns above)."""
    out: dict[str, InventoryItem] = {}
    for r in rows:
        sp, ri = r.get("savings_plan_savings_plan_a_r_n"), r.get("reservation_reservation_a_r_n")
        if sp and (end := parse_time(r.get("savings_plan_end_time"))):
            start = parse_time(r.get("savings_plan_start_time"))
            desc = " ".join(
                str(r.get(k))
                for k in (
                    "savings_plan_offering_type",
                    "savings_plan_instance_type_family",
                    "savings_plan_region",
                )
                if r.get(k)
            )
            out[sp] = InventoryItem(
                "aws",
                sp,
                last_day(end),
                start.date() if start else None,
                "Savings Plan",
                desc,
                str(r.get("savings_plan_purchase_term") or ""),
                str(r.get("savings_plan_payment_option") or ""),
                "cur2",
            )
        elif ri and (end := parse_time(r.get("reservation_end_time"))):
            start = parse_time(r.get("reservation_start_time"))
            desc = " ".join(
                str(r.get(k)) for k in ("product_instance_type", "product_region_code") if r.get(k)
            )
            out[ri] = InventoryItem(
                "aws",
                ri,
                last_day(end),
                start.date() if start else None,
                "Reserved Instance",
                desc,
                str(r.get("pricing_lease_contract_length") or ""),
                str(r.get("pricing_purchase_option") or ""),
                "cur2",
            )
    return sorted(out.values(), key=lambda i: i.commitment_id)


def aws_items_from_files(files: Sequence[Path]) -> list[InventoryItem]:
    """Read the raw CUR 2.0 parquet files of one delivery (DuckDB, only the columns present)."""
    import duckdb

    parquet = [str(f) for f in files if str(f).endswith(".parquet")]
    if not parquet:
        return []
    con = duckdb.connect()
    try:
        rel = con.read_parquet(parquet, union_by_name=True)
        have = set(rel.columns)
        rows: list[dict[str, Any]] = []
        for cols, key, fee in (
            (_AWS_SP, "savings_plan_end_time", "SavingsPlanRecurringFee"),
            (_AWS_RI, "reservation_end_time", "RIFee"),
        ):
            if key not in have or cols[0] not in have or "line_item_line_item_type" not in have:
                continue
            present = [c for c in cols if c in have]
            sel = ", ".join(f"CAST({c} AS VARCHAR) AS {c}" for c in present)
            q = (
                f"SELECT DISTINCT {sel} FROM rel WHERE line_item_line_item_type = ? "
                f"AND {key} IS NOT NULL AND CAST({key} AS VARCHAR) <> ''"
            )
            cur = con.execute(q, [fee])
            names = [d[0] for d in cur.description]
            rows.extend(dict(zip(names, r, strict=True)) for r in cur.fetchall())
        return aws_items(rows)
    finally:
        con.close()


def azure_reservation_orders(payload: Mapping[str, Any]) -> list[InventoryItem]:
    """Reservation orders as the Azure Reservations API lists them (`value[]` of
    ReservationOrderResponse): every reservation id of an order gets the order's expiry."""
    out = []
    for order in payload.get("value", []):
        p = order.get("properties", {})
        end = parse_time(p.get("expiryDateTime") or p.get("expiryDate"))
        if end is None:
            continue
        start = parse_time(p.get("benefitStartTime"))
        ids = [r.get("id") for r in p.get("reservations") or [] if r.get("id")] or [order.get("id")]
        for rid in ids:
            out.append(
                InventoryItem(
                    "azure",
                    str(rid).lower(),
                    end.date() if p.get("expiryDate") and not p.get("expiryDateTime") else last_day(end),
                    start.date() if start else None,
                    "Reservation",
                    str(p.get("displayName") or ""),
                    str(p.get("term") or ""),
                    str(p.get("billingPlan") or ""),
                    "azure-reservations-api",
                )
            )
    return out


def azure_savings_plan_orders(payload: Mapping[str, Any]) -> list[InventoryItem]:
    """Savings plan orders as the Billing Benefits API lists them (`value[]` of
    SavingsPlanOrderModel): every savings plan id of an order (`properties.savingsPlans[]`,
    plain strings) gets the order's `expiryDateTime`."""
    out = []
    for order in payload.get("value", []):
        p = order.get("properties", {})
        end = parse_time(p.get("expiryDateTime"))
        if end is None:
            continue
        start = parse_time(p.get("benefitStartTime"))
        ids = [str(i) for i in p.get("savingsPlans") or [] if i] or [str(order.get("id"))]
        for sid in ids:
            out.append(
                InventoryItem(
                    "azure",
                    sid.lower(),
                    last_day(end),
                    start.date() if start else None,
                    "Savings Plan",
                    str(p.get("displayName") or ""),
                    str(p.get("term") or ""),
                    str(p.get("billingPlan") or ""),
                    "azure-billing-benefits-api",
                )
            )
    return out


def gcp_commitments(payload: Mapping[str, Any]) -> list[InventoryItem]:
    """Commitments as the Compute API lists them (`items[]` with `endTimestamp`, `plan`,
    `type`, `resources[{type, amount, acceleratorType}]`); the id is the commitment's selfLink
    or name. A CANCELLED commitment (merged or split into others) no longer applies and is
    left out."""
    out = []
    for c in payload.get("items", []):
        end = parse_time(c.get("endTimestamp"))
        if end is None or c.get("status") == "CANCELLED":
            continue
        start = parse_time(c.get("startTimestamp"))
        res = ", ".join(_resource_text(r) for r in c.get("resources") or [])
        region = str(c.get("region") or "").rsplit("/", 1)[-1]
        cid = str(c.get("selfLink") or c.get("name"))
        first, last = (start.date() if start else None), last_day(end)
        out.append(
            InventoryItem(
                "gcp",
                cid,
                last,
                first,
                "Committed Use Discount",
                f"{res} {region}".strip(),
                str(c.get("plan") or ""),
                "monthly",
                "gcp-compute-api",
                tuple(
                    CommitmentResource(
                        cid,
                        region,
                        str(r.get("type") or "").upper(),
                        _amount(r.get("amount"), cid),
                        str(r.get("acceleratorType") or "").rsplit("/", 1)[-1],
                        str(c.get("type") or ""),
                        _project(cid),
                        first,
                        last,
                    )
                    for r in c.get("resources") or []
                    if r.get("type")
                ),
            )
        )
    return out


def gcp_cud_subscriptions(rows: Iterable[Mapping[str, Any]]) -> list[InventoryItem]:
    """Spend-based CUDs from Google's CUD metadata export (`cud_subscriptions_export`), one
    row per subscription as `sources.gcp_cud_export_end_dates` selects them (keys: instance_id,
    product, model, display_name, region, amount_value, amount_unit, term, start_time,
    end_time, state). The id is `gcp-spend-cud:<subscription.instance_id>`, the id the billing
    side gives a multiprice-model CUD (finops.commitments.gcp.new_spend_cud_rows). A row
    without an instance id or an end time is left out; a later row of the same id wins."""
    out: dict[str, InventoryItem] = {}
    for r in rows:
        sid, end = str(r.get("instance_id") or "").strip(), parse_time(r.get("end_time"))
        if not sid or end is None:
            continue
        start = parse_time(r.get("start_time"))
        amount = " ".join(_text(r[k]) for k in ("amount_value", "amount_unit") if r.get(k) is not None)
        what = " ".join(str(x) for x in (r.get("model") or r.get("product"), amount, r.get("region")) if x)
        name = str(r.get("display_name") or "")
        out[sid] = InventoryItem(
            "gcp",
            f"gcp-spend-cud:{sid}",
            last_day(end),
            start.date() if start else None,
            "Committed Use Discount",
            f"{what} ({name})" if name and what else what or name,
            str(r.get("term") or ""),
            "monthly",
            "gcp-cud-export",
        )
    return sorted(out.values(), key=lambda i: i.commitment_id)


def _text(v: Any) -> str:
    """A NUMERIC as BigQuery returns it (Decimal('10.000000000')) -> '10'."""
    if isinstance(v, Decimal):
        return format(v.normalize(), "f")
    return str(v)


def _resource_text(r: Mapping[str, Any]) -> str:
    acc = str(r.get("acceleratorType") or "").rsplit("/", 1)[-1]
    return f"{r.get('amount')} {acc or r.get('type')}"


def _amount(v: Any, cid: str) -> Decimal:
    """The API's int64 amounts come as JSON strings."""
    try:
        return Decimal(str(v if v is not None else 0))
    except InvalidOperation as e:
        raise ValueError(f"{cid}: resources[].amount {v!r} is not a number") from e


def _project(self_link: str) -> str:
    m = self_link.split("/projects/", 1)
    return m[1].split("/", 1)[0] if len(m) == 2 else ""


_UPSERT_COLS = (
    "provider",
    "commitment_id",
    "start_date",
    "end_date",
    "commitment_type",
    "description",
    "term",
    "payment_option",
    "source",
    "updated_at",
)


def store(wh: Any, items: Sequence[InventoryItem]) -> int:
    """Insert or replace these commitments' rows of commitment_inventory (one transaction)."""
    import pyarrow as pa

    if not items:
        return 0
    now = datetime.now(UTC).replace(tzinfo=None)
    latest = {(i.provider, i.commitment_id): i for i in items}  # one row per key
    cols: dict[str, list[Any]] = {c: [] for c in _UPSERT_COLS}
    for i in latest.values():
        for c, v in zip(
            _UPSERT_COLS,
            (
                i.provider,
                i.commitment_id,
                i.start,
                i.end,
                i.commitment_type,
                i.description,
                i.term,
                i.payment_option,
                i.source,
                now,
            ),
            strict=True,
        ):
            cols[c].append(v)
    types = {"start_date": pa.date32(), "end_date": pa.date32(), "updated_at": pa.timestamp("us")}
    table = pa.table({c: pa.array(v, types.get(c, pa.string())) for c, v in cols.items()})
    n = wh.upsert_arrow("commitment_inventory", table, ["provider", "commitment_id"])
    store_resources(wh, [r for i in latest.values() for r in i.resources], now)
    return n


def store_resources(wh: Any, resources: Sequence[CommitmentResource], now: datetime | None = None) -> int:
    """Insert or replace commitment_resources rows (one per commitment, type, accelerator)."""
    import pyarrow as pa

    rows: dict[tuple[str, str, str], CommitmentResource] = {}
    for r in resources:
        key = (r.commitment_id, r.resource_type, r.accelerator_type)
        prev = rows.get(key)  # a commitment listing one type twice commits to both amounts
        rows[key] = r if prev is None else replace(prev, amount=prev.amount + r.amount)
    if not rows:
        return 0
    now = now or datetime.now(UTC).replace(tzinfo=None)
    vals = list(rows.values())
    table = pa.table(
        {
            "provider": pa.array(["gcp"] * len(vals), pa.string()),
            "commitment_id": pa.array([r.commitment_id for r in vals], pa.string()),
            "resource_type": pa.array([r.resource_type for r in vals], pa.string()),
            "accelerator_type": pa.array([r.accelerator_type for r in vals], pa.string()),
            "amount": pa.array([r.amount for r in vals], pa.decimal128(38, 10)),
            "region": pa.array([r.region for r in vals], pa.string()),
            "project": pa.array([r.project or None for r in vals], pa.string()),
            "plan_type": pa.array([r.plan_type or None for r in vals], pa.string()),
            "updated_at": pa.array([now] * len(vals), pa.timestamp("us")),
        }
    )
    return wh.upsert_arrow(
        "commitment_resources", table, ["provider", "commitment_id", "resource_type", "accelerator_type"]
    )


def load_resources(wh: Any) -> list[CommitmentResource]:
    """Every stored GCP commitment resource with its commitment's start and end dates."""
    rows = wh.query(
        "SELECT r.commitment_id, r.region, r.resource_type, r.amount, r.accelerator_type, r.plan_type, "
        "r.project, i.start_date, i.end_date FROM commitment_resources r JOIN commitment_inventory i "
        "ON i.provider = r.provider AND i.commitment_id = r.commitment_id WHERE r.provider = 'gcp'"
    )
    return [
        CommitmentResource(
            r[0], r[1], r[2], Decimal(r[3]), r[4] or "", r[5] or "", r[6] or "",
            _d(r[7]) if r[7] else None, _d(r[8]),
        )
        for r in rows
    ]  # fmt: skip


def gcp_project_accounts(wh: Any, projects: Sequence[str]) -> dict[str, str]:
    """project id -> the billing account that pays it, from focus_costs (a project that moved
    accounts: the latest one)."""
    if not projects:
        return {}
    marks = ", ".join("?" for _ in projects)
    rows = wh.query(
        "SELECT sub_account_id, billing_account_id, MAX(charge_period_start) FROM focus_costs "
        f"WHERE x_provider = 'gcp' AND sub_account_id IN ({marks}) GROUP BY 1, 2 ORDER BY 3",
        list(projects),
    )
    return {r[0]: r[1] for r in rows}


def load(wh: Any) -> list[InventoryItem]:
    rows = wh.query(
        "SELECT provider, commitment_id, end_date, start_date, commitment_type, description, term, "
        "payment_option, source FROM commitment_inventory"
    )
    return [
        InventoryItem(
            r[0],
            r[1],
            _d(r[2]),
            _d(r[3]) if r[3] else None,
            r[4] or "",
            r[5] or "",
            r[6] or "",
            r[7] or "",
            r[8] or "",
        )  # fmt: skip
        for r in rows
    ]


def _d(v: Any) -> date:
    return v if isinstance(v, date) and not isinstance(v, datetime) else date.fromisoformat(str(v)[:10])


def record_from_cur_files(wh: Any, provider: str, files: Sequence[Path]) -> int | None:
    """After an AWS CUR 2.0 load: store the end dates its raw files carry. Derived data: a
    failure is logged and the load stands (the calendar keeps the previous dates)."""
    if provider != "aws":
        return None
    try:
        return store(wh, aws_items_from_files(files))
    except Exception:  # noqa: BLE001 - see docstring
        log.exception(
            "commitment end dates not read from this delivery; the calendar keeps the previous ones"
        )
        return None


def then_record_end_dates(
    then: Callable[[list[Path] | None], Any],
    wh: Any,
    provider: str,
    files: Sequence[Path],
    staged: list[Path] | None,
) -> None:
    """An ingest `after_load` hook: run `then` (the UI rollups), then record the delivery's
    commitment end dates (`record_from_cur_files`)."""
    then(staged)
    record_from_cur_files(wh, provider, files)


def attribute_api_commitments(wh: Any, rows: list[Any]) -> list[Any]:
    """GCP `gcp-cud:` day rows (finops.commitments.usage.Utilisation) split into the Compute
    API commitments that back them (finops.commitments.gcp_attribution.attribute), each paid
    by the billing account focus_costs shows for its project."""
    from finops.commitments.gcp_attribution import attribute

    resources = load_resources(wh)
    if not resources:
        return rows
    accounts = gcp_project_accounts(wh, sorted({r.project for r in resources if r.project}))
    return attribute(rows, resources, accounts)
