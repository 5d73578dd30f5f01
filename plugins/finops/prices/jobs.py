"""One price job = fetch one provider (and region) and store it. The DAG maps these; tests and
the CLI call them directly with their own clients / warehouse.

The warehouse is opened only around reads and writes, never across network calls: the
embedded DuckDB admits one writer, and mapped tasks run side by side.

Withdrawn prices. Each job stamps the items its answer listed and the scope that answer is
authoritative for (store.record_listing); the latest views leave out an item that a newer
covering fetch no longer lists. The scope is what the job asked for (its region(s) and its
families, so a Param-narrowed backfill judges nothing outside them), and an answer is evidence
only when it holds at least one item (an empty one is more likely a glitch or a format change
than a provider withdrawing everything). Per stream:
- Azure Retail Prices (spot and on-demand): the region's full paged listing, filtered by the
  armSkuName prefixes: authoritative for region x prefixes.
- GCP Billing Catalog (spot and on-demand): the full global SKU listing, composed into the known
  shapes of the requested series: authoritative for regions x series (a region dropped from a
  SKU's serviceRegions withdraws the shapes priced with it).
- Lambda instance-types: the full listing of every type: authoritative for all of them.
- AWS on-demand (Pricing API): asked for every type describe_instance_types lists in the region
  for the families (plus any type seen in spot history): authoritative for region x families.
- AWS spot (describe_spot_price_history): changes within a window. AWS documents "the effective
  price as of the start time" only for calls with both StartTime and EndTime, so a market absent
  from a window is not taken as gone. A spot market counts as listed while its instance type is
  still offered in the region (describe_instance_types, region-scoped) or when it has a point in
  the window; it is withdrawn when the type leaves the region. One AZ dropping a type is not
  detected (that would take describe_instance_type_offerings per AZ).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from finops.prices import aws, azure, gcp, lambda_cloud, store
from finops.prices.conn import gcp_headers, resolve
from finops.prices.gpu_models import KNOWN_INSTANCES, gpu_from_instance_name, known_instance
from finops.prices.http import HttpClient
from finops.prices.records import PROVIDERS, CatalogEntry, PriceRecord, TypeMatch, utcnow
from finops.prices.settings import PricesSettings

if TYPE_CHECKING:
    from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)

WhFactory = Callable[[], AbstractContextManager["Warehouse"]]
SPOT_STREAM = "spot_history"


@contextmanager
def default_wh() -> Iterator[Warehouse]:
    from finops.warehouse import connect

    wh = connect()
    try:
        yield wh
    finally:
        wh.close()


def _ok(check: Callable[[str], Any], value: str) -> bool:
    try:
        check(value)
    except ValueError:
        return False
    return True


def _aws_family(value: str) -> str:
    return aws.type_pattern(value)


def _gcp_series(value: str) -> str:
    known = {t.split("-", 1)[0] for (p, t) in KNOWN_INSTANCES if p == "gcp"}
    if value not in known:
        raise ValueError(
            f"not a GCP GPU machine series with known shapes ({', '.join(sorted(known))}): {value!r}"
        )
    return value


def _azure_prefix(value: str) -> str:
    if not (isinstance(value, str) and value.startswith("Standard_") and value.replace("_", "").isalnum()):
        raise ValueError(f"not an Azure armSkuName prefix: {value!r}")
    return value


def _pick(
    given: list[str] | None, configured: list[str], check: Callable[[str], Any], strict: bool
) -> list[str]:
    """The override list, validated: strictly (a bad name fails the plan) when the run names one
    provider; with provider=all the names that belong to another cloud are left out."""
    if not given:
        return list(configured)
    if strict:
        for v in given:
            check(v)
        return list(given)
    return [v for v in given if _ok(check, v)]


def plan_jobs(
    settings: PricesSettings,
    provider: str = "all",
    regions: list[str] | None = None,
    families: list[str] | None = None,
    lookback_days: int | None = None,
    strict: bool | None = None,
) -> list[dict[str, Any]]:
    """The jobs for a run: one per AWS / Azure region, one for GCP (its catalog is global), one for
    Lambda. `regions` / `families` override the configured ones (manual backfills). Names are
    validated here so a typo fails the planning task, not a mapped fetch; with provider "all"
    (or strict=False) names that fit another cloud are skipped, and a provider left with no
    region or family to fetch is skipped too."""
    if provider != "all" and provider not in PROVIDERS:
        raise ValueError(f"provider must be one of all, {', '.join(PROVIDERS)}; got {provider!r}")
    want = PROVIDERS if provider == "all" else (provider,)
    strict = provider != "all" if strict is None else strict
    jobs: list[dict[str, Any]] = []
    if "aws" in want and settings.aws.enabled:
        fams = _pick(families, settings.aws.instance_families, _aws_family, strict)
        for r in _pick(regions, settings.aws.regions, aws.check_region, strict) if fams else []:
            jobs.append({"provider": "aws", "region": r, "families": fams, "lookback_days": lookback_days})
    if "azure" in want and settings.azure.enabled:
        fams = _pick(families, settings.azure.instance_families, _azure_prefix, strict)
        for r in _pick(regions, settings.azure.regions, azure.region_filter, strict) if fams else []:
            jobs.append({"provider": "azure", "region": r, "families": fams})
    if "gcp" in want and settings.gcp.enabled:
        fams = _pick(families, settings.gcp.instance_families, _gcp_series, strict)
        regs = _pick(regions, settings.gcp.regions, gcp.check_region, strict)
        if fams and regs:
            jobs.append({"provider": "gcp", "region": ",".join(regs), "regions": regs, "families": fams})
    if "lambda" in want and settings.lambda_cloud.enabled:
        jobs.append({"provider": "lambda", "region": "global"})
    return jobs


def _static_catalog(provider: str, types: set[str]) -> list[CatalogEntry]:
    out = []
    for t in sorted(types):
        spec = known_instance(provider, t)
        if spec:
            out.append(
                CatalogEntry(
                    provider,
                    t,
                    spec.gpu_model,
                    spec.gpu_count,
                    spec.gpu_memory_gib,
                    spec.vcpus,
                    spec.memory_gib,
                    spec.interconnect,
                    source="static",
                )
            )
        elif model := gpu_from_instance_name(provider, t):
            out.append(CatalogEntry(provider, t, model, None, None, None, None, None, source="name"))
    return out


Scope = tuple[TypeMatch, str]  # (type_match, type_pattern) of store.Coverage


def _coverage(
    provider: str, regions: list[str], models: set[str], scope: list[Scope]
) -> list[store.Coverage]:
    return [
        store.Coverage(provider, region, model, type_match=match, type_pattern=pattern)
        for region in regions
        for model in sorted(models)
        for match, pattern in scope
    ]


def _store_snapshot(
    wh: Warehouse, provider: str, snap: Snapshot, started: datetime, run_id: str | None
) -> dict[str, int]:
    inserted = store.append_prices(wh, snap.prices, mode="changes")
    n_cat = store.upsert_catalog(wh, snap.catalog)
    models = set(store.TABLES) if snap.prices else set()  # one listing answers for spot and on-demand
    store.record_listing(
        wh,
        provider,
        map(store.presence_key, snap.prices),
        _coverage(provider, snap.regions, models, snap.scope),
        started,
        run_id,
    )
    store.log_fetch(wh, provider, snap.regions, snap.source, len(snap.prices), sum(inserted.values()), run_id)
    return {**inserted, "seen": len(snap.prices), "instance_catalog": n_cat}


def run_aws(
    job: dict[str, Any],
    settings: PricesSettings,
    wh_factory: WhFactory = default_wh,
    ec2: Any = None,
    pricing: Any = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    cfg = settings.aws
    region, families = job["region"], list(job["families"])
    if ec2 is None or pricing is None:
        ec2, pricing = aws.clients(cfg.conn_id, region, cfg.pricing_region)
    now = utcnow()
    lookback = job.get("lookback_days")
    with wh_factory() as wh:
        marks = {f: store.get_watermark(wh, "aws", region, SPOT_STREAM, f) for f in families}
    spot: list[PriceRecord] = []
    newest: dict[str, Any] = {}
    for fam in families:
        start = (
            marks[fam]
            if (marks[fam] is not None and not lookback)
            else now - timedelta(days=lookback or cfg.lookback_days)
        )
        hist = aws.fetch_spot_history(ec2, region, fam, start)
        spot += hist.records
        newest[fam] = hist.max_timestamp
    catalog = aws.fetch_instance_types(ec2, families)
    ondemand = aws.fetch_ondemand(
        pricing, region, {c.instance_type for c in catalog} | {r.instance_type for r in spot}
    )
    scores = []
    if cfg.placement_scores:
        for itype in cfg.placement_instance_types:
            if any(itype.startswith(f + ".") or itype == f for f in families):
                scores += aws.fetch_placement_scores(ec2, [region], itype, cfg.placement_target_capacity)
    with wh_factory() as wh:
        n_spot = store.append_prices(wh, spot, mode="points")
        n_od = store.append_prices(wh, ondemand, mode="changes")
        n_cat = store.upsert_catalog(wh, catalog)
        n_scores = store.append_placement_scores(wh, scores)
        for fam, ts in newest.items():
            if ts is not None:
                store.set_watermark(wh, "aws", region, SPOT_STREAM, fam, ts)
        # spot history is no listing: a stored market counts as listed while its type is offered
        offered = {c.instance_type for c in catalog}
        markets = [k for k in store.stored_items(wh, "aws", region, "spot") if k[3] in offered]
        evidence = {"ondemand": ondemand, "spot": catalog}
        store.record_listing(
            wh,
            "aws",
            [*map(store.presence_key, spot + ondemand), *markets],
            _coverage(
                "aws", [region], {m for m, e in evidence.items() if e}, [aws.type_scope(f) for f in families]
            ),
            now,
            run_id,
        )
        inserted = n_spot["spot_prices"] + n_od["ondemand_prices"]
        store.log_fetch(wh, "aws", [region], "aws", len(spot) + len(ondemand), inserted, run_id)
    return {
        "provider": "aws",
        "region": region,
        "spot_seen": len(spot),
        "spot_prices": n_spot["spot_prices"],
        "ondemand_prices": n_od["ondemand_prices"],
        "instance_catalog": n_cat,
        "placement_scores": n_scores,
    }


def _client(settings: PricesSettings, **kw: Any) -> HttpClient:
    return HttpClient(settings.http, **kw)


@dataclass
class Snapshot:
    """What one provider's price fetch returns: full snapshots of its regions (azure, gcp, lambda),
    authoritative for the instance types `scope` matches."""

    regions: list[str]
    source: str
    prices: list[PriceRecord]
    catalog: list[CatalogEntry]
    scope: list[Scope]


Fetch = Callable[[dict[str, Any], PricesSettings, HttpClient | None], Snapshot]


def _snapshot_runner(provider: str, fetch: Fetch) -> Callable[..., dict[str, Any]]:
    """A job runner: fetch over the network first, then open the warehouse only to store."""

    def run(
        job: dict[str, Any],
        settings: PricesSettings,
        wh_factory: WhFactory = default_wh,
        client: HttpClient | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]:
        started = utcnow()
        snap = fetch(job, settings, client)
        with wh_factory() as wh:
            out = _store_snapshot(wh, provider, snap, started, run_id)
        return {"provider": provider, "region": job.get("region", "global"), **out}

    run.__name__ = run.__qualname__ = f"run_{provider}"
    return run


def _fetch_azure(job: dict[str, Any], settings: PricesSettings, client: HttpClient | None) -> Snapshot:
    cfg = settings.azure
    ep = resolve(cfg.conn_id, cfg.base_url)
    prices = azure.fetch_region(
        client or _client(settings),
        ep.base_url,
        job["region"],
        job["families"],
        cfg.api_version,
        cfg.currency,
        settings.http.max_pages,
    )
    catalog = _static_catalog("azure", {p.instance_type for p in prices})
    return Snapshot([job["region"]], azure.SOURCE, prices, catalog, [("prefix", f) for f in job["families"]])


def _fetch_gcp(job: dict[str, Any], settings: PricesSettings, client: HttpClient | None) -> Snapshot:
    cfg = settings.gcp
    ep = resolve(cfg.conn_id, cfg.base_url, keep_path=False)
    client = client or _client(settings, headers=gcp_headers(cfg.conn_id, ep.api_key))
    prices = gcp.fetch(
        client,
        ep.base_url,
        job["regions"],
        job["families"],
        cfg.service_id,
        cfg.currency,
        settings.http.max_pages,
    )
    catalog = _static_catalog("gcp", {p.instance_type for p in prices})
    return Snapshot(
        job["regions"], gcp.SOURCE, prices, catalog, [("prefix", f"{f}-") for f in job["families"]]
    )


def _fetch_lambda(job: dict[str, Any], settings: PricesSettings, client: HttpClient | None) -> Snapshot:
    cfg = settings.lambda_cloud
    ep = resolve(cfg.conn_id, cfg.base_url, keep_path=False)
    if client is None:
        if not ep.api_key:
            raise ValueError(
                f"connection {cfg.conn_id!r} has no password: put the Lambda Cloud API key there"
            )
        if cfg.auth == "basic":
            client = _client(settings, auth=(ep.api_key, ""))
        else:
            client = _client(settings, headers={"Authorization": f"Bearer {ep.api_key}"})
    prices, catalog = lambda_cloud.fetch(client, ep.base_url)
    return Snapshot(["global"], lambda_cloud.SOURCE, prices, catalog, [("prefix", "")])


run_azure = _snapshot_runner("azure", _fetch_azure)
run_gcp = _snapshot_runner("gcp", _fetch_gcp)
run_lambda = _snapshot_runner("lambda", _fetch_lambda)


RUNNERS: dict[str, Callable[..., dict[str, Any]]] = {
    "aws": run_aws,
    "azure": run_azure,
    "gcp": run_gcp,
    "lambda": run_lambda,
}


def run_job(
    job: dict[str, Any],
    settings: PricesSettings,
    wh_factory: WhFactory = default_wh,
    run_id: str | None = None,
) -> dict[str, Any]:
    result = RUNNERS[job["provider"]](job, settings, wh_factory, run_id=run_id)
    log.info("prices %s %s: %s", job["provider"], job.get("region"), result)
    return result
