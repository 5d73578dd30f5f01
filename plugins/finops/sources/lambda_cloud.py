"""Lambda Cloud: poll the public API, keep instance lifetimes in the warehouse, and hand the
period's billable intervals to the spine (Lambda has no billing export).

HTTP goes through finops.http_client to the host of HTTP connection `conn_id` (e.g.
https://cloud.lambda.ai; a bare host gets the connection's schema, else https), API key in
the connection *password*, sent as a Bearer token. 429 (honouring Retry-After) and 5xx are
retried with exponential backoff; other errors raise at once. The lifetime / gap rule itself
is pure: finops.focus.lambda_cloud.

Each DAG run is one poll: `plan_batches` polls, folds the poll into
`lambda_instance_lifetimes` (+ a `lambda_polls` row), then writes the billing period's
intervals (clipped to the period) to FINOPS_HOME/raw/lambda/<source>/<period>/.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from finops.batch import RawBatch
from finops.focus.lambda_cloud import DEFAULT_MAX_GAP, Lifetime, billable_interval, observe
from finops.http_client import HttpClient, HttpError, RetrySettings
from finops.paths import subdir
from finops.periods import period_bounds

if TYPE_CHECKING:
    from finops.config import LambdaSource
    from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)
LIFETIMES = "lambda_instance_lifetimes"
DEFAULT_BASE = "https://cloud.lambda.ai"
_COLS = (
    "source",
    "instance_id",
    "name",
    "instance_type",
    "region",
    "price_cents_per_hour",
    "first_seen",
    "last_seen",
    "ended_at",
    "status",
    "updated_at",
)


class LambdaApiError(HttpError):
    pass


class LambdaApi(HttpClient):
    """The Lambda Cloud API on connection `conn_id`, through finops.http_client (429 / 5xx retried
    with backoff, Retry-After honoured). The key is read here and only ever sent as a header."""

    error = LambdaApiError
    retryable_error = LambdaApiError

    def __init__(
        self,
        conn_id: str,
        *,
        max_attempts: int = 5,
        base_delay: float = 1.0,
        max_delay: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from finops.connections import http_session
        from finops.prices.conn import resolve

        ep = resolve(conn_id, DEFAULT_BASE, keep_path=False)
        key = ep.api_key or ""
        super().__init__(
            ep.base_url,
            token=lambda: key,
            sleep=sleep,
            session=http_session(conn_id),
            settings=RetrySettings(max_attempts, base_delay, max_delay, max_delay, 30.0),
        )

    def instances(self) -> list[dict[str, Any]]:
        return list(self.get("/api/v1/instances").get("data", []))

    def instance_types(self) -> dict[str, Any]:
        return dict(self.get("/api/v1/instance-types").get("data", {}))


# ------------------------------------------------------------------ warehouse state
_LIFETIME_COLS = (
    "instance_id, name, instance_type, region, price_cents_per_hour, first_seen, last_seen, ended_at, status"
)


def _lifetime(r: tuple) -> Lifetime:
    # first_seen and last_seen are NOT NULL columns; only ended_at may be NULL (still running)
    return Lifetime(r[0], r[1], r[2], r[3], int(r[4]), _utc(r[5]), _utc(r[6]), _utc(r[7]), r[8])


def load_open(wh: Warehouse, source: str) -> dict[str, Lifetime]:
    rows = wh.query(
        f"SELECT {_LIFETIME_COLS} FROM {LIFETIMES} WHERE source = ? AND ended_at IS NULL", [source]
    )
    return {r[0]: _lifetime(r) for r in rows}


def load_known(wh: Warehouse, source: str, listed: list[str]) -> dict[str, Lifetime]:
    """The open lifetimes plus the closed ones of instances this poll lists. An instance missed by
    one listing and seen again must fold into its stored lifetime (observe reopens or ignores it):
    starting afresh would upsert over the row and drop every hour already billed."""
    known = load_open(wh, source)
    ids = sorted({i for i in listed if i not in known})
    for k in range(0, len(ids), 500):
        chunk = ids[k : k + 500]
        rows = wh.query(
            f"SELECT {_LIFETIME_COLS} FROM {LIFETIMES} WHERE source = ? AND ended_at IS NOT NULL "
            f"AND instance_id IN ({', '.join('?' * len(chunk))})",
            [source, *chunk],
        )
        known.update({r[0]: _lifetime(r) for r in rows})
    return known


@overload
def _utc(ts: datetime) -> datetime: ...
@overload
def _utc(ts: None) -> None: ...
def _utc(ts: datetime | None) -> datetime | None:
    return None if ts is None else (ts if ts.tzinfo else ts.replace(tzinfo=UTC))


@overload
def _naive(ts: datetime) -> datetime: ...
@overload
def _naive(ts: datetime | None) -> datetime | None: ...
def _naive(ts: datetime | None) -> datetime | None:
    return None if ts is None else ts.astimezone(UTC).replace(tzinfo=None)


def save(wh: Warehouse, source: str, changed: dict[str, Lifetime], polled_at: datetime, count: int) -> None:
    import pyarrow as pa

    now = _naive(datetime.now(UTC))
    if changed:
        rows = [
            {
                "source": source,
                "instance_id": lt.instance_id,
                "name": lt.name,
                "instance_type": lt.instance_type,
                "region": lt.region,
                "price_cents_per_hour": lt.price_cents_per_hour,
                "first_seen": _naive(lt.first_seen),
                "last_seen": _naive(lt.last_seen),
                "ended_at": _naive(lt.ended_at),
                "status": lt.status,
                "updated_at": now,
            }
            for lt in changed.values()
        ]
        schema = pa.schema(
            [
                ("source", pa.string()),
                ("instance_id", pa.string()),
                ("name", pa.string()),
                ("instance_type", pa.string()),
                ("region", pa.string()),
                ("price_cents_per_hour", pa.int32()),
                ("first_seen", pa.timestamp("us")),
                ("last_seen", pa.timestamp("us")),
                ("ended_at", pa.timestamp("us")),
                ("status", pa.string()),
                ("updated_at", pa.timestamp("us")),
            ]
        )
        wh.upsert_arrow(LIFETIMES, pa.Table.from_pylist(rows, schema=schema), keys=["source", "instance_id"])
    # a poll at an instant already recorded (a replay, a re-run) is recorded once, not refused
    polls = pa.table(
        {
            "source": [source],
            "polled_at": pa.array([_naive(polled_at)], pa.timestamp("us")),
            "instance_count": pa.array([count], pa.int32()),
        }
    )
    wh.insert_arrow("lambda_polls", polls, dedup_keys=["source", "polled_at"])


def with_prices(instances: list[dict[str, Any]], api: LambdaApi) -> list[dict[str, Any]]:
    """Instances whose `instance_type` carries its `price_cents_per_hour`. Lambda's API schema gives an
    instance's `instance_type` as name + description only (the price is documented on
    /instance-types), and listings without it are seen in the wild: such an instance would be billed
    at 0. Its price is then taken from /instance-types (one call per poll, only when needed); a type
    that list does not know stops the poll with the instance and type named, never a silent $0."""
    missing = [
        i
        for i in instances
        if (i.get("instance_type") or {}).get("price_cents_per_hour") is None
        and i.get("status") != "terminated"
    ]
    if not missing:
        return instances
    catalog = api.instance_types()
    out = []
    for inst in instances:
        itype = inst.get("instance_type") or {}
        if itype.get("price_cents_per_hour") is None and inst.get("status") != "terminated":
            name = itype.get("name")
            listed = (catalog.get(name or "") or {}).get("instance_type") or {}
            if listed.get("price_cents_per_hour") is None:
                raise LambdaApiError(
                    f"instance {inst.get('id')}: type {name!r} has no price_cents_per_hour in /instances and "
                    "/instance-types does not list it; cannot bill it (check the type name, or wait for "
                    "Lambda to list it again)"
                )
            inst = {
                **inst,
                "instance_type": {**itype, "price_cents_per_hour": listed["price_cents_per_hour"]},
            }
        out.append(inst)
    return out


def poll_once(
    wh: Warehouse,
    src: LambdaSource,
    api: LambdaApi,
    polled_at: datetime | None = None,
    max_gap: timedelta = DEFAULT_MAX_GAP,
    *,
    record: bool = True,
) -> dict[str, Lifetime]:
    """One poll folded into the warehouse; returns the lifetimes it changed. With record=False
    (a dry run) nothing is written: the changes are only returned."""
    instances = with_prices(api.instances(), api)
    at = polled_at or datetime.now(UTC)
    known = load_known(wh, src.name, [str(i["id"]) for i in instances])
    changed = observe(known, instances, at, max_gap)
    if record:
        save(wh, src.name, changed, at, len(instances))
    log.info(
        "%s: polled %d instance(s), %d lifetime(s) changed%s",
        src.name,
        len(instances),
        len(changed),
        "" if record else " (dry run: not recorded)",
    )
    return changed


def period_intervals(
    wh: Warehouse, src: LambdaSource, period: str, overlay: dict[str, Lifetime] | None = None
) -> list[dict[str, Any]]:
    """Billable intervals overlapping the period, clipped to it (naive UTC). `overlay`: lifetimes
    that replace the stored ones of the same instance (a dry run's unrecorded poll)."""
    start, end = period_bounds(period)
    rows = wh.query(
        f"SELECT {_LIFETIME_COLS} FROM {LIFETIMES} WHERE source = ? AND first_seen < ? "
        "AND COALESCE(ended_at, last_seen) > ?",
        [src.name, end, start],
    )
    lifetimes = {r[0]: _lifetime(r) for r in rows} | (overlay or {})
    out = []
    for iid in sorted(lifetimes):
        lt = lifetimes[iid]
        b0, b1 = (_naive(t) for t in billable_interval(lt))
        b0, b1 = max(b0, start), min(b1, end)
        if b1 > b0:
            out.append(
                {
                    "instance_id": iid,
                    "name": lt.name,
                    "instance_type": lt.instance_type,
                    "region": lt.region,
                    "price_cents_per_hour": lt.price_cents_per_hour,
                    "bill_start": b0,
                    "bill_end": b1,
                    "account_name": src.account_name,
                }
            )
    return out


def write_intervals(src: LambdaSource, period: str, rows: list[dict[str, Any]]) -> tuple[Path, str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    fingerprint = hashlib.sha256(json.dumps(rows, default=str, sort_keys=True).encode()).hexdigest()[:16]
    out = subdir("raw") / "lambda" / src.name / period / f"lifetimes-{fingerprint}.parquet"
    out.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema(
        [
            ("instance_id", pa.string()),
            ("name", pa.string()),
            ("instance_type", pa.string()),
            ("region", pa.string()),
            ("price_cents_per_hour", pa.int32()),
            ("bill_start", pa.timestamp("us")),
            ("bill_end", pa.timestamp("us")),
            ("account_name", pa.string()),
        ]
    )
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), out)
    return out, fingerprint


def converter_for(src: LambdaSource) -> Any:
    from finops.focus.lambda_cloud import CONVERTER

    return CONVERTER


def plan_batches(
    src: LambdaSource,
    billing_period: str,
    *,
    api: LambdaApi | None = None,
    wh: Warehouse | None = None,
    record: bool = True,
) -> list[RawBatch]:
    """Poll now, then hand the period's intervals to the spine ([] when nothing ran). A dry run
    (record=False) polls too, but writes nothing: the poll only overlays the stored lifetimes."""
    from finops.warehouse import connect

    own = wh is None
    wh = wh or connect()
    try:
        changed = poll_once(wh, src, api or LambdaApi(src.conn_id), record=record)
        rows = period_intervals(wh, src, billing_period, overlay=None if record else changed)
    finally:
        if own:
            wh.close()
    if not rows:
        return []
    path, fingerprint = write_intervals(src, billing_period, rows)
    return [
        RawBatch(
            source=src.name,
            provider="lambda",
            billing_period=billing_period,
            files=[path],
            fingerprint=f"lifetimes:{fingerprint}",
            currency_hint="USD",
        )
    ]
