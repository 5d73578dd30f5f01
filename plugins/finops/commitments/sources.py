"""Commitment end dates fetched from the providers' APIs (the cost exports of Azure and GCP
carry none), through Airflow connections (finops.connections), parsed by
finops.commitments.inventory:

- Azure: Reservation Order - List (`GET /providers/Microsoft.Capacity/reservationOrders`) and
  Savings Plan Order - List (`GET /providers/Microsoft.BillingBenefits/savingsPlanOrders`),
  both `value[]` pages chained by an absolute `nextLink`.
- GCP: `regionCommitments.aggregatedList` (`GET /compute/v1/projects/{p}/aggregated/commitments`):
  `items` maps each region scope to `{commitments: [...]}` (or a `warning` when it has none),
  pages chained by `nextPageToken`.
- GCP spend-based CUDs: Google's CUD metadata export in BigQuery (`cud_subscriptions_export`,
  a daily snapshot per subscription), read through the billing source's BigQuery client
  (finops.sources.gcp_bigquery.bq_client: the connection's credentials or its emulator).

A source that fails (refused, unreachable, bad answer) is recorded and skipped: the inventory
keeps the end dates it had (finops.yaml, the CUR, an earlier fetch)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from finops.commitments import inventory as inv
from finops.http_client import HttpClient, HttpError

if TYPE_CHECKING:
    from finops.commitments.settings import CommitmentsSettings, EndDateSource

log = logging.getLogger(__name__)

ARM = "https://management.azure.com"
COMPUTE = "https://compute.googleapis.com"
RESERVATIONS_API_VERSION = "2022-11-01"
SAVINGS_PLANS_API_VERSION = "2022-11-01"
MAX_PAGES = 1000  # a server that never stops paging is an error, not a long run


class EndDateSourceError(HttpError):
    pass


class _Client(HttpClient):
    error = EndDateSourceError


def _pages_by_link(client: HttpClient, path: str, params: dict[str, str]) -> Iterator[dict[str, Any]]:
    """ARM list pages: the next page is the absolute `nextLink` (carrying its own query)."""
    url: str | None = path
    query: dict[str, str] | None = params
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = client.get(url or path, params=query) or {}
        yield page
        url, query = page.get("nextLink") or None, None
        if not url:
            return
        if url in seen:
            raise EndDateSourceError(f"{path}: nextLink repeats a page already read")
        seen.add(url)
    raise EndDateSourceError(f"{path}: more than {MAX_PAGES} pages")


def azure_end_dates(client: HttpClient) -> list[inv.InventoryItem]:
    """Every reservation and savings plan the credentials can see, with its end date."""
    items: list[inv.InventoryItem] = []
    for page in _pages_by_link(
        client, "providers/Microsoft.Capacity/reservationOrders", {"api-version": RESERVATIONS_API_VERSION}
    ):
        items += inv.azure_reservation_orders(page)
    for page in _pages_by_link(
        client,
        "providers/Microsoft.BillingBenefits/savingsPlanOrders",
        {"api-version": SAVINGS_PLANS_API_VERSION},
    ):
        items += inv.azure_savings_plan_orders(page)
    return items


def gcp_end_dates(client: HttpClient, project: str) -> list[inv.InventoryItem]:
    """Every commitment of `project` in every region (aggregatedList), with its end date."""
    path = f"compute/v1/projects/{quote(project, safe=':')}/aggregated/commitments"
    params = {"maxResults": "500"}
    items: list[inv.InventoryItem] = []
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = client.get(path, params=params) or {}
        scoped = (page.get("items") or {}).values()
        items += inv.gcp_commitments({"items": [c for s in scoped for c in s.get("commitments") or []]})
        token = page.get("nextPageToken")
        if not token:
            return items
        if token in seen:
            raise EndDateSourceError(f"{path}: nextPageToken repeats a page already read")
        seen.add(token)
        params = {**params, "pageToken": token}
    raise EndDateSourceError(f"{path}: more than {MAX_PAGES} pages")


# Google's reference spells the amount RECORD `commitent_amount` ({unit, value}); either spelling
# (and `amount` for `value`) is read, whichever the table has.
_CUD_EXPORT_FIELDS = {
    "instance_id": ("subscription.instance_id",),
    "product": ("cud_product.display_name",),
    "model": ("consumption_model.description",),
    "display_name": ("subscription.display_name",),
    "region": ("region",),
    "amount_value": (
        "commitent_amount.value", "commitment_amount.value", "commitent_amount.amount", "commitment_amount.amount",
    ),
    "amount_unit": ("commitent_amount.unit", "commitment_amount.unit"),
    "term": ("term",),
    "start_time": ("start_time",),
    "end_time": ("end_time",),
    "state": ("state",),
}  # fmt: skip


def _paths(fields: Any, prefix: str = "") -> set[str]:
    out: set[str] = set()
    for f in fields:
        out.add(prefix + f.name)
        out |= _paths(f.fields or (), f"{prefix}{f.name}.")
    return out


def gcp_cud_export_end_dates(client: Any, table: str) -> list[inv.InventoryItem]:
    """Spend-based CUDs from the CUD metadata export `table` (`project.dataset.table`, checked
    by the settings: identifiers cannot be bound). The table holds a snapshot a day and no
    snapshot time, so per subscription the latest is the row with the latest end_time
    (`Expired` before `Active` on the same end: a state only moves that way)."""
    have = _paths(client.get_table(table).schema)
    for need in ("subscription.instance_id", "end_time"):
        if need not in have:
            raise EndDateSourceError(f"{table}: no column {need}: not a cud_subscriptions_export table")
    cols = []
    for alias, candidates in _CUD_EXPORT_FIELDS.items():
        col = next((c for c in candidates if c in have), None)
        cols.append(f"{col or 'NULL'} AS {alias}")
    sql = (
        f"SELECT {', '.join(cols)} FROM `{table}` "
        "WHERE subscription.instance_id IS NOT NULL AND end_time IS NOT NULL "
        "QUALIFY ROW_NUMBER() OVER (PARTITION BY subscription.instance_id "
        "ORDER BY end_time DESC, IF(state = 'Expired', 0, 1), start_time DESC) = 1"
    )
    return inv.gcp_cud_subscriptions(dict(r.items()) for r in client.query(sql).result())


def client_for(source: EndDateSource) -> tuple[HttpClient, str | None]:
    """(client, GCP project) from the source's Airflow connection: `azure` -> ARM tokens,
    `google_cloud_platform` -> Google tokens (and its project), `http` -> its host as the
    base URL and its password as the bearer token (a gateway in front of the API). No
    connection: no token, only for a local base_url (settings enforce it)."""
    from finops import connections

    default = ARM if source.provider == "azure" else COMPUTE
    base = source.base_url or default
    if not source.conn_id:
        return _Client(base), source.project
    from airflow.sdk import BaseHook

    conn = BaseHook.get_connection(source.conn_id)
    session = connections.http_session(source.conn_id)
    project = source.project
    if conn.conn_type in ("http", "https"):
        from finops.prices.conn import resolve

        ep = resolve(source.conn_id, base, keep_path=False)
        return _Client(ep.base_url, token=ep.api_key, session=session), project
    if source.provider == "gcp":
        creds, conn_project = connections.gcp_credentials(source.conn_id)
        token = connections.refreshing_token(creds, session)
        return _Client(base, token=token, session=session), project or conn_project
    return _Client(base, token=connections.azure_token(source.conn_id), session=session), project


@dataclass
class FetchResult:
    stored: dict[str, int] = field(default_factory=dict)  # source -> commitments stored
    failed: dict[str, str] = field(default_factory=dict)  # source -> why


def source_name(s: EndDateSource) -> str:
    parts = (s.provider, s.conn_id or s.base_url or "", s.project or "", s.cud_export_table or "")
    return ":".join(x for x in parts if x)


def fetch_end_dates(wh: Any, settings: CommitmentsSettings) -> FetchResult:
    """Fetch every configured source and store what it lists in commitment_inventory. A
    source that fails is recorded in `failed` (and logged) and stores nothing: the end dates
    already there stand."""
    res = FetchResult()
    for src in settings.end_date_sources:
        name = source_name(src)
        try:
            if src.cud_export_table:
                from finops.sources.gcp_bigquery import bq_client

                items = gcp_cud_export_end_dates(
                    bq_client(src.conn_id or "", src.project), src.cud_export_table
                )
                res.stored[name] = inv.store(wh, items)
                continue
            client, project = client_for(src)
            if src.provider == "azure":
                items = azure_end_dates(client)
            else:
                if not project:
                    raise ValueError(
                        "commitments.end_date_sources: a gcp source needs project (the connection names none)"
                    )
                items = gcp_end_dates(client, project)
            res.stored[name] = inv.store(wh, items)
        except Exception as e:  # noqa: BLE001 - one failing API must not hide the others' dates
            log.exception(
                "commitment end dates from %s not read; the inventory keeps its previous dates", name
            )
            res.failed[name] = f"{type(e).__name__}: {e}"[:500]
    return res
