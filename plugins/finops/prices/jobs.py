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
  detected by the price presence (instance_availability has the per-AZ offerings).

Specs (instance_catalog) come from the providers' spec APIs on every run: AWS
describe_instance_types, GCP Compute machineTypes + acceleratorTypes (with `gcp.project`),
Azure Resource SKUs (with `azure.subscription_id`), Lambda instance-types. Where a spec call is
refused or not configured, the static table in gpu_models answers instead (source `static`).
The same answers say where each type is offered (instance_availability), and a GPU they list
that no rule classifies is drift: logged, kept in the catalog without a model, and alerted once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import requests

from finops.exceptions import ConfigError
from finops.prices import (
    aws,
    azure,
    azure_skus,
    capacity_blocks,
    commit_rates,
    commit_store,
    gcp,
    gcp_compute,
    lambda_cloud,
    store,
)
from finops.prices.catalog import log_drift, static_entries
from finops.prices.conn import gcp_auth, resolve
from finops.prices.http import HttpClient, PriceSourceError
from finops.prices.records import PROVIDERS, CatalogEntry, Offering, PriceRecord, TypeMatch, utcnow
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
    return gcp_compute.check_series(value)


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
            try:
                check(v)
            except ValueError as e:  # a typo in the run's Params: a retry cannot fix it
                raise ConfigError(str(e)) from None
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
        raise ConfigError(f"provider must be one of all, {', '.join(PROVIDERS)}; got {provider!r}")
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


def report_drift(provider: str, catalog: list[CatalogEntry]) -> list[CatalogEntry]:
    """Log every GPU type no rule classifies and alert once per set of them (the dedup key
    names the set: a new unknown type alerts again, the same set does not)."""
    found = log_drift(catalog)
    if not found:
        return found
    from finops.alerts.events import AlertEvent, emit

    types = [e.instance_type for e in found]
    emit(
        AlertEvent(
            kind="gpu_catalog_drift",
            title=f"{provider}: {len(found)} GPU instance type(s) the catalog cannot classify",
            severity="warning",
            summary="The provider's spec API lists these GPU types; no rule in finops.prices.gpu_models "
            "names their GPU, so they have no per-GPU price until one does.",
            facts={
                e.instance_type: f"{e.gpu_count or '?'} x {e.gpu_name or 'unnamed GPU'}" for e in found[:20]
            },
            dedup_key=f"gpu_catalog_drift:{provider}:" + ",".join(types)[:400],
        )
    )
    return found


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
    n_avail = store.replace_availability(wh, provider, snap.offerings, run_id)
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
    n_rates = commit_store.replace_rates(wh, provider, snap.rate_products, snap.regions, snap.rates)
    return {
        **inserted,
        "seen": len(snap.prices),
        "instance_catalog": n_cat,
        "availability": n_avail,
        "commitment_rates": n_rates,
    }


def run_aws(
    job: dict[str, Any],
    settings: PricesSettings,
    wh_factory: WhFactory = default_wh,
    ec2: Any = None,
    pricing: Any = None,
    run_id: str | None = None,
    savingsplans: Any = None,
) -> dict[str, Any]:
    """Spot history, on-demand prices, specs, placement scores; with `commitment_rates` the RI
    terms and Compute Savings Plans rates (a savingsplans client is made from the connection
    when the EC2 / Pricing clients are; callers passing theirs pass it too), and the Capacity
    Block offerings of `capacity_blocks` (described, never bought)."""
    cfg = settings.aws
    region, families = job["region"], list(job["families"])
    if ec2 is None or pricing is None:
        ec2, pricing = aws.clients(cfg.conn_id, region, cfg.pricing_region)
        if cfg.commitment_rates:
            savingsplans = aws.savingsplans_client(cfg.conn_id)
    now = utcnow()
    lookback = job.get("lookback_days")
    with wh_factory() as wh:
        marks = {f: store.get_watermark(wh, "aws", region, SPOT_STREAM, f) for f in families}
    spot: list[PriceRecord] = []
    newest: dict[str, Any] = {}
    for fam in families:
        mark = marks[fam]
        start = (
            mark
            if (mark is not None and not lookback)
            else now - timedelta(days=lookback or cfg.lookback_days)
        )
        hist = aws.fetch_spot_history(ec2, region, fam, start)
        spot += hist.records
        newest[fam] = hist.max_timestamp
    catalog, offers = _aws_specs(ec2, region, families)
    docs: list[Any] | None = [] if cfg.commitment_rates else None
    ondemand = aws.fetch_ondemand(
        pricing, region, {c.instance_type for c in catalog} | {r.instance_type for r in spot}, docs
    )
    rates, rate_products = _aws_rates(ondemand, docs, savingsplans, region, settings)
    blocks = _aws_capacity_blocks(ec2, region, settings)
    scores = []
    if cfg.placement_scores:
        for itype in cfg.placement_instance_types:
            if any(itype.startswith(f + ".") or itype == f for f in families):
                scores += aws.fetch_placement_scores(ec2, [region], itype, cfg.placement_target_capacity)
    with wh_factory() as wh:
        n_spot = store.append_prices(wh, spot, mode="points")
        n_od = store.append_prices(wh, ondemand, mode="changes")
        n_cat = store.upsert_catalog(wh, catalog)
        n_avail = store.replace_availability(wh, "aws", offers, run_id)
        n_scores = store.append_placement_scores(wh, scores)
        for fam, ts in newest.items():
            if ts is not None:
                store.set_watermark(wh, "aws", region, SPOT_STREAM, fam, ts)
        # spot history is no listing: a stored market counts as listed while its type is offered
        offered = {c.instance_type for c in catalog if c.source != "static"}
        markets = [k for k in store.stored_items(wh, "aws", region, "spot") if k[3] in offered]
        evidence = {"ondemand": ondemand, "spot": [c for c in catalog if c.source != "static"]}
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
        n_rates = commit_store.replace_rates(wh, "aws", rate_products, [region], rates)
        n_blocks = None if blocks is None else commit_store.replace_capacity_blocks(wh, region, blocks)
    return {
        "provider": "aws",
        "region": region,
        "spot_seen": len(spot),
        "spot_prices": n_spot["spot_prices"],
        "ondemand_prices": n_od["ondemand_prices"],
        "instance_catalog": n_cat,
        "availability": n_avail,
        "drift": len(report_drift("aws", catalog)),
        "placement_scores": n_scores,
        "commitment_rates": n_rates,
        "capacity_blocks": n_blocks,
    }


def _aws_rates(
    ondemand: list[PriceRecord],
    docs: list[Any] | None,
    savingsplans: Any,
    region: str,
    settings: PricesSettings,
) -> tuple[list[commit_rates.CommitmentRate], list[str]]:
    """RI rates from the on-demand answers' Reserved terms; Compute Savings Plans rates when a
    client is there. A refused Savings Plans call leaves the stored rates as they were."""
    from botocore.exceptions import BotoCoreError, ClientError

    if docs is None:
        return [], []
    rates = [r for rec, doc in zip(ondemand, docs, strict=True) for r in commit_rates.aws_reserved(doc, rec)]
    products = ["reserved_instance"]
    if savingsplans is not None:
        try:
            rates += commit_rates.fetch_savings_plan_rates(
                savingsplans, region, ondemand, settings.http.max_pages
            )
            products.append("savings_plan")
        except (ClientError, BotoCoreError) as e:
            log.warning("Savings Plans offering rates refused for %s (%s): stored rates kept", region, e)
    return rates, products


def _aws_capacity_blocks(
    ec2: Any, region: str, settings: PricesSettings
) -> list[capacity_blocks.CapacityBlockOffering] | None:
    """The configured Capacity Block offerings (describe only, nothing is bought); None when
    none are configured or the call is refused (the stored offerings are then kept)."""
    from botocore.exceptions import BotoCoreError, ClientError

    cfg = settings.aws.capacity_blocks
    if not cfg.instance_types:
        return None
    try:
        return capacity_blocks.fetch_offerings(
            ec2, region, cfg.instance_types, cfg.instance_count, cfg.duration_hours, cfg.window_days
        )
    except (ClientError, BotoCoreError) as e:
        log.warning("describe_capacity_block_offerings refused in %s (%s): stored offerings kept", region, e)
        return None


def _aws_specs(ec2: Any, region: str, families: list[str]) -> tuple[list[CatalogEntry], list[Offering]]:
    """describe_instance_types + describe_instance_type_offerings; the static table when the
    first is refused (its entries never count as evidence that a spot market still exists)."""
    from botocore.exceptions import ClientError

    try:
        catalog = aws.fetch_instance_types(ec2, families)
    except ClientError as e:
        log.warning("describe_instance_types refused in %s (%s): specs from the static table", region, e)
        catalog = aws.static_instance_types(families)
    try:
        offers = aws.fetch_offerings(ec2, region, [c.instance_type for c in catalog])
    except ClientError as e:
        log.warning(
            "describe_instance_type_offerings refused in %s (%s): availability not updated", region, e
        )
        offers = []
    return catalog, offers


def _client(settings: PricesSettings, conn_id: str | None, **kw: Any) -> HttpClient:
    """A price API client sending through connection `conn_id`'s transport (proxies, CA bundle)."""
    from finops.connections import http_session

    return HttpClient(settings.http, session=http_session(conn_id), **kw)


@dataclass
class Snapshot:
    """What one provider's price fetch returns: full snapshots of its regions (azure, gcp, lambda),
    authoritative for the instance types `scope` matches."""

    regions: list[str]
    source: str
    prices: list[PriceRecord]
    catalog: list[CatalogEntry]
    scope: list[Scope]
    offerings: list[Offering] = field(default_factory=list)
    rates: list[commit_rates.CommitmentRate] = field(default_factory=list)
    rate_products: list[str] = field(default_factory=list)  # what `rates` answers for


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
        out["drift"] = len(report_drift(provider, snap.catalog))
        return {"provider": provider, "region": job.get("region", "global"), **out}

    run.__name__ = run.__qualname__ = f"run_{provider}"
    return run


def _fetch_azure(job: dict[str, Any], settings: PricesSettings, client: HttpClient | None) -> Snapshot:
    cfg = settings.azure
    ep = resolve(cfg.conn_id, cfg.base_url)
    raw: list[dict[str, Any]] | None = [] if cfg.commitment_rates else None
    prices = azure.fetch_region(
        client or _client(settings, cfg.conn_id),
        ep.base_url,
        job["region"],
        job["families"],
        cfg.api_version,
        cfg.currency,
        settings.http.max_pages,
        raw,
    )
    catalog, offers = _azure_specs(job, settings, client)
    known = {c.instance_type.casefold() for c in catalog}
    catalog += static_entries(
        "azure", {p.instance_type for p in prices if p.instance_type.casefold() not in known}
    )
    rates, products = _azure_rates(job, settings, client, ep.base_url, prices, raw)
    return Snapshot(
        [job["region"]],
        azure.SOURCE,
        prices,
        catalog,
        [("prefix", f) for f in job["families"]],
        offers,
        rates,
        products,
    )


def _azure_rates(
    job: dict[str, Any],
    settings: PricesSettings,
    client: HttpClient | None,
    base_url: str,
    prices: list[PriceRecord],
    raw: list[dict[str, Any]] | None,
) -> tuple[list[commit_rates.CommitmentRate], list[str]]:
    """Savings plan rates from the Consumption items already listed; reservation prices from a
    second listing of the region (priceType Reservation). A failing second listing costs only
    the reservation rates."""
    if raw is None:
        return [], []
    cfg = settings.azure
    items, products = list(raw), ["savings_plan"]
    params = {"api-version": cfg.api_version, "$filter": commit_rates.azure_reservation_filter(job["region"])}
    if cfg.currency != "USD":
        params["currencyCode"] = f"'{cfg.currency}'"
    try:
        for page in azure.iter_pages(
            client or _client(settings, cfg.conn_id), base_url, params, settings.http.max_pages
        ):
            items += page
        products.append("reservation")
    except _SPEC_ERRORS as e:
        log.warning("Azure reservation prices refused for %s (%s): stored rates kept", job["region"], e)
    return commit_rates.azure_rates(items, prices), products


# A spec call that fails is no reason to lose the prices: the static table answers instead.
_SPEC_ERRORS = (PriceSourceError, requests.RequestException)


def _azure_specs(
    job: dict[str, Any], settings: PricesSettings, client: HttpClient | None
) -> tuple[list[CatalogEntry], list[Offering]]:
    cfg = settings.azure
    if not cfg.subscription_id:
        return [], []
    if client is None:
        if not cfg.arm_conn_id:
            raise ValueError("prices.azure.subscription_id is set but prices.azure.arm_conn_id is not")
        from finops.connections import azure_token

        try:
            token = azure_token(cfg.arm_conn_id)
            token()  # sign in now: a refused sign-in is a refused call, and the table answers
        except Exception as e:  # noqa: BLE001 - see above
            log.warning("Azure sign-in for Resource SKUs failed (%s): specs from the static table", e)
            return [], []
        client = _client(settings, cfg.arm_conn_id, token=token)
    try:
        return azure_skus.fetch_specs(
            client,
            cfg.arm_base_url,
            cfg.subscription_id,
            job["region"],
            job["families"],
            settings.http.max_pages,
        )
    except _SPEC_ERRORS as e:
        log.warning("Azure Resource SKUs refused for %s (%s): specs from the static table", job["region"], e)
        return [], []


def _fetch_gcp(job: dict[str, Any], settings: PricesSettings, client: HttpClient | None) -> Snapshot:
    cfg = settings.gcp
    ep = resolve(cfg.conn_id, cfg.base_url, keep_path=False)
    if client is None:
        headers, token = gcp_auth(cfg.conn_id, ep.api_key)
        client = _client(settings, cfg.conn_id, headers=headers, token=token)
    specs: list[CatalogEntry] | None = None
    offers: list[Offering] = []
    if cfg.project:
        # a connection host that overrides the Billing Catalog's (a proxy, a test server) serves both
        compute = ep.base_url if ep.base_url != cfg.base_url.rstrip("/") else cfg.compute_base_url
        try:
            specs, offers = gcp_compute.fetch_specs(
                client, compute, cfg.project, job["regions"], job["families"], settings.http.max_pages
            )
        except _SPEC_ERRORS as e:
            log.warning("GCP Compute machineTypes refused (%s): shapes from the static table", e)
    commits: list[dict[str, Any]] | None = [] if cfg.commitment_rates else None
    prices = gcp.fetch(
        client,
        ep.base_url,
        job["regions"],
        job["families"],
        cfg.service_id,
        cfg.currency,
        settings.http.max_pages,
        specs=specs,
        offered={(o.region, o.instance_type) for o in offers} if specs is not None else None,
        commits=commits,
    )
    if specs is None:
        catalog = static_entries("gcp", {p.instance_type for p in prices})
    else:
        catalog = specs
    rates = [] if commits is None else commit_rates.gcp_rates(commits, prices, job["families"], specs)
    return Snapshot(
        job["regions"],
        gcp.SOURCE,
        prices,
        catalog,
        [("prefix", f"{f}-") for f in job["families"]],
        offers,
        rates,
        ["resource_cud"] if commits else [],
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
            client = _client(settings, cfg.conn_id, auth=(ep.api_key, ""))
        else:
            client = _client(settings, cfg.conn_id, headers={"Authorization": f"Bearer {ep.api_key}"})
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
