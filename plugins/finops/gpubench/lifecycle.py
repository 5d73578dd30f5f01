"""One benchmark's life: plan -> launch -> (deferrable wait) -> collect -> terminate, and the
reaper. Every step audits to `policy_actions`, every failure lands in `gpu_benchmark_runs`
and raises an alert; terminate finds instances by tag, so it needs nothing from earlier steps.

Launchers, the warehouse and the upload-URL signer are passed in (built from Airflow
connections by the DAG tasks), so this runs against moto / local HTTP servers in tests.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from finops.alerts.events import AlertEvent, emit
from finops.exceptions import ConfigError, FinopsError
from finops.gpubench import audit, bootstrap, payload, store
from finops.gpubench.launchers.base import (
    ENDING,
    Instance,
    Launcher,
    LaunchError,
    LaunchSpec,
    TerminateError,
    adoptable,
    bench_run_id,
    iso,
)
from finops.gpubench.payload import PayloadStore
from finops.gpubench.settings import BenchSettings, Target
from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)
DAG_ID = "finops_gpu_benchmark"

Presign = Callable[[str, int], str]  # (results uri, expires_in_s) -> https URL the instance PUTs to


class CloudCleanupError(FinopsError, RuntimeError):
    """The instances are gone, but the run's bundle could not be deleted from object storage."""


class CollectError(FinopsError, RuntimeError):
    """The results object is missing, unreadable, an error report, or not a valid document."""


def plan(
    settings: BenchSettings, only: list[str] | None = None, max_instances: int | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Targets to run (as dicts, for mapping) and the keys dropped by the cap. Unknown keys raise."""
    targets = settings.targets
    if only:
        known = {t.key for t in targets}
        unknown = sorted(set(only) - known)
        if unknown:
            raise ConfigError(f"unknown benchmark targets {unknown}; configured: {sorted(known)}")
        targets = [t for t in targets if t.key in only]
    cap = settings.max_instances if max_instances is None else min(max_instances, settings.max_instances)
    chosen, dropped = targets[:cap], [t.key for t in targets[cap:]]
    if dropped:
        log.warning("cap of %d instances per run: not launching %s", cap, dropped)
    return [t.model_dump() | {"key": t.key} for t in chosen], dropped


def results_uri(settings: BenchSettings, bid: str) -> str:
    if not settings.results_bucket:
        raise ConfigError(
            "benchmarks.results_bucket is not set: S3 results need a bucket (or give the target "
            "a results_base)"
        )
    return f"s3://{settings.results_bucket}/{settings.results_prefix}/{bid}.json"


def upload_snippet(uri: str, presign: Presign | None, expires_in_s: int) -> str:
    """How the instance uploads $OUT: a pre-signed PUT (S3) or the cloud's own identity."""
    if uri.startswith("s3://"):
        if presign is None:
            raise ValueError("an s3:// results URI needs a presign function")
        return bootstrap.presigned_put_upload(presign(uri, expires_in_s))
    if uri.startswith("gs://"):
        return f'gcloud storage cp "$OUT" {uri}'
    # Azure Blob with the VM's managed identity: token from IMDS, then a Put Blob.
    return (
        "TOKEN=$(curl -fsS -H Metadata:true 'http://169.254.169.254/metadata/identity/oauth2/token"
        "?api-version=2018-02-01&resource=https://storage.azure.com/' | python3 -c "
        "'import json,sys; print(json.load(sys.stdin)[\"access_token\"])') && "
        "curl -fsS --retry 5 -X PUT -H \"Authorization: Bearer $TOKEN\" -H 'x-ms-version: 2021-08-06' "
        f"-H 'x-ms-blob-type: BlockBlob' --upload-file \"$OUT\" '{uri}'"
    )


@dataclass
class Launched:
    """What launch hands to wait / collect / terminate (XCom-safe via as_dict)."""

    bench_run_id: str
    target: dict[str, Any]
    results_uri: str
    expires_at: str
    dry_run: bool
    instance_ids: list[str] = field(default_factory=list)
    launched_at: str = ""
    user_data_bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def prepare(
    settings: BenchSettings,
    target: dict[str, Any],
    dag_run_id: str,
    *,
    dag_id: str = DAG_ID,
    now: datetime | None = None,
    results_base: str | None = None,
) -> dict[str, Any]:
    """Pure: the bench run id, expiry and results URI of one target in one DAG run."""
    now = now or datetime.now(UTC)
    bid = bench_run_id(dag_id, dag_run_id, target["key"])
    results_base = results_base or target.get("results_base")
    uri = f"{results_base.rstrip('/')}/{bid}.json" if results_base else results_uri(settings, bid)
    expires = now + timedelta(minutes=settings.ttl_minutes)
    return {
        "bench_run_id": bid,
        "dag_id": dag_id,
        "dag_run_id": dag_run_id,
        "target": target,
        "results_uri": uri,
        "expires_at": iso(expires),
        "prepared_at": iso(now),
    }


def launch(
    prepared: dict[str, Any],
    settings: BenchSettings,
    launcher: Launcher | None,
    *,
    dry_run: bool,
    wh: Warehouse | None,
    presign: Presign | None,
    payloads: PayloadStore | None = None,
) -> dict[str, Any]:
    """Render the bootstrap, launch (unless dry-run), audit. On failure: audited, recorded, alerted, raised
    (the launcher already terminated anything it created; teardown double-checks by tag). A bundle
    too big for the cloud's user data goes to `payloads` first (see payload.py); a failed launch
    deletes it, as teardown and the reaper do."""
    t = prepared["target"]
    bid = prepared["bench_run_id"]
    expires = datetime.fromisoformat(prepared["expires_at"].replace("Z", "+00:00"))
    ttl_s = settings.ttl_minutes * 60
    context = {
        "bench_run_id": bid,
        "provider": t["provider"],
        "region": t["region"],
        "instance_type": t["instance_type"],
        "pricing_model": t["pricing_model"],
    }
    staged = payload.stage(
        provider=t["provider"],
        bench_run_id=bid,
        upload=upload_snippet(prepared["results_uri"], presign, ttl_s + 600)
        if not dry_run
        else "echo dry-run: no upload",
        ttl_minutes=settings.ttl_minutes,
        bench_args=settings.suite_args(),
        context=context,
        bucket=settings.results_bucket,
        prefix=settings.results_prefix,
        store=payloads,
        dry_run=dry_run,
    )
    user_data = staged.user_data
    out = Launched(
        bid,
        t,
        prepared["results_uri"],
        prepared["expires_at"],
        dry_run,
        launched_at=iso(datetime.now(UTC)),
        user_data_bytes=len(user_data.encode()),
    )
    evidence = {
        "target": t["key"],
        "expires_at": prepared["expires_at"],
        "user_data_bytes": out.user_data_bytes,
        "results_uri": prepared["results_uri"],
    } | staged.evidence()
    if dry_run:
        audit.record(
            wh,
            run_id=prepared["dag_run_id"],
            provider=t["provider"],
            region=t["region"],
            resource_id=bid,
            action="launch",
            result="dry_run",
            dry_run=True,
            reason=f"would launch {t['instance_type']} ({t['pricing_model']})",
            evidence=evidence,
        )
        if wh is not None:
            store.record_run(
                wh, bench_run_id=bid, dag_run_id=prepared["dag_run_id"], target=t, status="dry_run"
            )
        return out.as_dict()
    if launcher is None:
        raise ValueError("launch without dry-run needs a launcher")
    cleanup_rows: dict[str, str] = {}  # instance id -> the pending row of its cleanup terminate

    def before_cleanup(ids: list[str]) -> None:
        """A failed call created instances the launcher is about to end: each termination is on
        record (pending) before the call, like every other, so a kill right after it leaves a row
        that teardown's retry settles, never a termination without one."""
        for iid in ids:
            cleanup_rows[iid] = audit.intent(
                wh,
                run_id=prepared["dag_run_id"],
                provider=t["provider"],
                region=t["region"],
                resource_id=iid,
                action="terminate",
                reason=f"cleanup after failed launch of bench run {bid}",
                evidence={"bench_run_id": bid},
            )

    spec = LaunchSpec(
        bid,
        prepared["dag_id"],
        prepared["dag_run_id"],
        t["region"],
        t["instance_type"],
        t["pricing_model"],
        user_data,
        expires,
        settings.ttl_minutes,
        before_cleanup=before_cleanup,
    )
    adopted = _reconcile_launch(wh, prepared, launcher)
    if adopted:  # a killed try's launch created them, and its row now says so: not launched again
        out.instance_ids = adopted
        return out.as_dict()
    aid = audit.intent(
        wh,
        run_id=prepared["dag_run_id"],
        provider=t["provider"],
        region=t["region"],
        resource_id=bid,
        action="launch",
        reason=f"launching {t['instance_type']}",
        evidence=evidence,
    )
    try:
        out.instance_ids = launcher.launch(spec)
    except Exception as e:
        cleaned = getattr(e, "cleaned", False)
        found = list(getattr(e, "found", []))
        if staged.uploaded:  # the instance is gone (or will fail its fetch): its bundle goes too
            evidence["payload_cleanup"] = payload.drop(payloads, bid) or "deleted"
        # the failed call may have created instances that the cleanup then ended: each one is a
        # launch and a termination that policy_actions must show, by instance id
        for iid in getattr(e, "terminated", []):
            if iid in cleanup_rows:
                audit.settle(wh, cleanup_rows.pop(iid), "ok")
                continue
            audit.record(
                wh,
                run_id=prepared["dag_run_id"],
                provider=t["provider"],
                region=t["region"],
                resource_id=iid,
                action="terminate",
                result="ok",
                dry_run=False,
                reason=f"cleanup after failed launch of bench run {bid}",
                evidence={"bench_run_id": bid},
            )
        for row in cleanup_rows.values():  # asked for, but the terminate call failed
            audit.settle(wh, row, "failed", reason=f"cleanup terminate failed: {e}"[:500])
        report_failure(
            wh,
            prepared,
            "failed",
            f"launch: {e}",
            kind="launch",
            audit_action="launch",
            evidence=evidence | {"cleaned": cleaned, "instance_ids": found},
            action_id=aid,
        )
        raise
    audit.settle(
        wh,
        aid,
        "ok",
        reason=f"launched {out.instance_ids}",
        evidence=evidence | {"instance_ids": out.instance_ids},
    )
    return out.as_dict()


def _reconcile_launch(wh: Warehouse | None, prepared: dict[str, Any], launcher: Launcher) -> list[str]:
    """A retried launch settles the launch row a killed try left pending: the bench run's
    instances (by tag) exist -> the call made them (`done`), else it took no effect. Returns the
    instances to adopt (never launched twice, never on a second row)."""
    rows = audit.pending(wh, "launch", run_id=prepared["dag_run_id"], bench_run_id=prepared["bench_run_id"])
    if not rows:
        return []
    bid = prepared["bench_run_id"]
    found: list[Instance] = launcher.find(bid)
    mine = adoptable(found, bid)
    audit.reconcile(
        wh,
        rows,
        lambda p: ", ".join(f"{i.instance_id} {i.state}" for i in found) or None,
        by_run=f"a retry of {prepared['dag_run_id']}",
    )
    return mine


def report_failure(
    wh: Warehouse | None,
    prepared: dict[str, Any],
    status: str,
    error: str,
    *,
    kind: str,
    audit_action: str | None = None,
    evidence: dict[str, Any] | None = None,
    action_id: str | None = None,
) -> None:
    """Record a failed step: gpu_benchmark_runs row, audit row (for cloud actions; the intent
    row `action_id` when the call had one) and an alert."""
    t = prepared["target"]
    bid = prepared["bench_run_id"]
    log.error("benchmark %s (%s) %s: %s", bid, t["key"], status, error)
    if audit_action and action_id:
        audit.settle(wh, action_id, "failed", reason=error, evidence=evidence)
    elif audit_action:
        audit.record(
            wh,
            run_id=prepared.get("dag_run_id", ""),
            provider=t["provider"],
            region=t["region"],
            resource_id=bid,
            action=audit_action,
            result="failed",
            dry_run=False,
            reason=error[:1000],
            evidence=evidence,
        )
    if wh is not None:
        store.record_run(
            wh,
            bench_run_id=bid,
            dag_run_id=prepared.get("dag_run_id"),
            target=t,
            status=status,
            errors=[error],
            instance_ids=prepared.get("instance_ids"),
            results_uri=prepared.get("results_uri"),
        )
    emit(
        AlertEvent(
            kind=f"benchmark_{kind}_failed",
            title=f"GPU benchmark {t['key']}: {kind} {status}",
            severity="warning",
            summary=error[:2000],
            facts={"bench_run_id": bid, "target": t["key"]},
            dedup_key=f"bench:{bid}:{kind}",
        )
    )


def collect(launched: dict[str, Any], read: Callable[[str], str], wh: Warehouse) -> int:
    """Read the results object, validate and store it. Returns metric rows stored."""
    uri = launched["results_uri"]
    try:
        text = read(uri)
        doc = json.loads(text)
        if isinstance(doc, dict) and "error" in doc and "results" not in doc:
            raise CollectError(f"instance reported: {doc['error']}")
        device = doc.get("device") if isinstance(doc, dict) else None
        if isinstance(device, dict) and device.get("type") != "cuda":
            # a GPU instance's figures measured on its CPU would be priced as the GPU's ($/TFLOP-h x1000)
            raise CollectError(
                f"the suite ran on {device.get('type')!r} ({device.get('name')}), not a CUDA GPU"
            )
        n = store.store_result(
            wh,
            bench_run_id=launched["bench_run_id"],
            dag_run_id=launched.get("dag_run_id"),
            target=launched["target"],
            doc=doc,
            instance_ids=launched.get("instance_ids"),
            results_uri=uri,
            launched_at=datetime.fromisoformat(launched["launched_at"].replace("Z", "+00:00"))
            if launched.get("launched_at")
            else None,
        )
    except Exception as e:
        report_failure(wh, launched, "failed", f"collect {uri}: {type(e).__name__}: {e}", kind="collect")
        raise CollectError(f"collect {uri}: {type(e).__name__}: {e}") from e
    return n


@dataclass
class TerminateReport:
    bench_run_id: str
    terminated: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    polls: int = 0
    dry_run: bool = False
    would_terminate: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def terminate(
    prepared: dict[str, Any],
    launcher: Launcher,
    *,
    dry_run: bool,
    wh: Warehouse | None,
    timeout_s: float = 600.0,
    poll_s: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
    payloads: PayloadStore | None = None,
) -> TerminateReport:
    """Find the run's instances by tag, terminate them and poll until they are gone. A failing
    terminate call is retried (exponential backoff) until `timeout_s`; then TerminateError.
    The run's fetched bundle (if any) is deleted first; a failed delete is retried once the
    instances are gone and then fails the teardown (its retry deletes it)."""
    t = prepared["target"]
    bid = prepared["bench_run_id"]
    rep = TerminateReport(bid, dry_run=dry_run)
    deadline = time.monotonic() + timeout_s
    backoff = poll_s
    asked: set[str] = set()
    intents: dict[str, str] = {}  # instance id -> its pending row, settled when the call returns
    run_id = prepared.get("dag_run_id", "")
    payload_err = None
    if not dry_run:
        _reconcile_terminate(wh, prepared, launcher)
        payload_err = payload.drop(payloads, bid)
        if payload_err:
            rep.errors.append(payload_err)
    while True:
        rep.polls += 1
        try:
            alive = launcher.find(bid)
        except Exception as e:  # noqa: BLE001 - listing is retried like terminating
            rep.errors.append(f"find: {type(e).__name__}: {e}")
            alive = None
        if alive is not None and not alive:
            break
        if alive and dry_run:
            rep.would_terminate = [i.instance_id for i in alive]
            for i in alive:
                audit.record(
                    wh,
                    run_id=prepared.get("dag_run_id", ""),
                    provider=t["provider"],
                    region=t["region"],
                    resource_id=i.instance_id,
                    action="terminate",
                    result="dry_run",
                    dry_run=True,
                    reason=f"would terminate bench run {bid}",
                )
            return rep
        todo = [i.instance_id for i in alive or [] if i.state not in ENDING]
        if todo:
            for iid in todo:  # on record before the call; one row per instance, however many tries
                if iid not in asked and iid not in intents:
                    intents[iid] = audit.intent(
                        wh,
                        run_id=run_id,
                        provider=t["provider"],
                        region=t["region"],
                        resource_id=iid,
                        action="terminate",
                        reason=f"teardown of bench run {bid}",
                        evidence={"bench_run_id": bid},
                    )
            try:
                launcher.terminate(todo)
                for iid in todo:
                    if iid not in asked:
                        asked.add(iid)
                        rep.terminated.append(iid)
                        audit.settle(wh, intents.pop(iid), "ok")
                backoff = poll_s
            except Exception as e:  # noqa: BLE001 - retried with backoff until the deadline
                rep.errors.append(f"terminate {todo}: {type(e).__name__}: {e}")
                log.warning("terminate %s failed (%s); retrying in %.1fs", todo, e, backoff)
                backoff = min(backoff * 2, 60.0)
        if time.monotonic() >= deadline:
            left = [i.instance_id for i in alive or []]
            msg = f"instances {left} of bench run {bid} still alive after {timeout_s:.0f}s: {rep.errors[-3:]}"
            for iid in left or [bid]:
                if iid in intents:
                    audit.settle(wh, intents.pop(iid), "failed", reason=msg)
                else:
                    audit.record(
                        wh,
                        run_id=run_id,
                        provider=t["provider"],
                        region=t["region"],
                        resource_id=iid,
                        action="terminate",
                        result="failed",
                        dry_run=False,
                        reason=msg[:1000],
                        evidence={"bench_run_id": bid},
                    )
            for aid in intents.values():  # asked, the calls failed, and it is gone: by whom unknown
                audit.settle(
                    wh,
                    aid,
                    f"outcome unknown: the terminate calls failed, then the instance was gone; {msg}"[:500],
                    status=audit.UNKNOWN,
                )
            emit(
                AlertEvent(
                    kind="benchmark_instance_left_running",
                    severity="critical",
                    title=f"GPU benchmark {t['key']}: instance still running after teardown",
                    summary=msg,
                    facts={"bench_run_id": bid, "instances": left},
                    dedup_key=f"bench:{bid}:terminate",
                )
            )
            raise TerminateError(msg)
        sleep(backoff)
    for aid in intents.values():  # every call for it failed, yet it is gone: ended, by whom unknown
        audit.settle(
            wh,
            aid,
            f"outcome unknown: the terminate calls failed ({rep.errors[-1][:200]}), "
            "then the instance was gone",
            status=audit.UNKNOWN,
        )
    if rep.errors:
        log.warning("bench run %s terminated after %d error(s): %s", bid, len(rep.errors), rep.errors)
    if payload_err and (payload_err := payload.drop(payloads, bid)):
        raise CloudCleanupError(f"bench run {bid}: instances gone, bundle left: {payload_err}")
    return rep


def _reconcile_terminate(wh: Warehouse | None, prepared: dict[str, Any], launcher: Launcher) -> None:
    """A retried teardown settles the terminate rows a killed try of it left pending, by the
    instances' state now (gone / ending: unknown; untouched: not attempted, terminated now)."""
    rows = audit.pending(
        wh, "terminate", run_id=prepared.get("dag_run_id", ""), bench_run_id=prepared["bench_run_id"]
    )
    if rows:
        states = {i.instance_id: i.state for i in launcher.find(prepared["bench_run_id"])}
        audit.reconcile(
            wh,
            rows,
            lambda p: states.get(p.resource_id),
            by_run=f"a retry of the teardown of {prepared['bench_run_id']}",
        )


def reap(
    launchers: list[Launcher],
    *,
    dry_run: bool,
    wh: Warehouse | None,
    run_id: str,
    now: datetime | None = None,
    cap: int = 50,
    clean_live_launches: bool = False,
    payloads: PayloadStore | None = None,
    payload_max_age: timedelta = timedelta(hours=24),
) -> dict[str, Any]:
    """Terminate every tagged benchmark instance past its expiry, on every cloud given.
    Instances without an expiry tag are left alone (not ours to judge) and reported.

    With `clean_live_launches` (the scheduled safety net), a dry run still terminates an expired
    instance whose bench run `policy_actions` shows was launched for real (a manual live run
    while benchmarks.dry_run keeps the scheduled reaper dry): this package started it, so ending
    it is the cleanup it promised, not a surprise; Azure (stopped, still allocated) and Lambda
    (powered off, still billed) do not end themselves. A dry run asked for by hand ends nothing.

    Fetched bundles (`payloads`) older than `payload_max_age` (the TTL: no instance can still
    need one) are deleted whenever the reaper acts for real."""
    now = now or datetime.now(UTC)
    report: dict[str, Any] = {
        "expired": [],
        "terminated": [],
        "errors": [],
        "kept": 0,
        "dry_run": dry_run,
        "capped": [],
        "ending": [],
    }
    live_runs = _live_launches(wh) if dry_run and clean_live_launches else set()
    listed: list[tuple[Launcher, list[Instance]]] = []
    for ln in launchers:
        try:
            listed.append((ln, ln.find()))
        except Exception as e:  # noqa: BLE001 - one cloud failing must not spare the others
            report["errors"].append(f"{ln.provider}: list: {e}")
    # one reaper at a time acts (the DAG runs one at a time; the lock also keeps a hand-run
    # reap out): a row pending when the lock is taken belongs to a try that is gone
    with _reaper_lock(wh):
        _reap_listed(
            listed,
            report,
            wh=wh,
            run_id=run_id,
            dry_run=dry_run,
            live_runs=live_runs,
            now=now,
            cap=cap,
            payloads=payloads,
        )
    if payloads is not None and (not dry_run or live_runs):
        try:
            report["payloads_deleted"] = payloads.sweep(now - payload_max_age)
        except Exception as e:  # noqa: BLE001 - reported like a failed termination
            report["errors"].append(f"payload sweep: {type(e).__name__}: {e}")
    if report["errors"] or report["capped"]:
        emit(
            AlertEvent(
                kind="benchmark_reaper_incomplete",
                severity="critical",
                title="GPU benchmark reaper could not terminate every expired instance",
                summary="; ".join(report["errors"])[:2000],
                facts={"errors": len(report["errors"]), "capped": len(report["capped"])},
                dedup_key="bench:reaper",
            )
        )
    return report


@contextmanager
def _reaper_lock(wh: Warehouse | None) -> Iterator[None]:
    """The warehouse's lock on the reaper's audit rows (an advisory lock on PostgreSQL, released
    if the session dies; DuckDB's file lock keeps other processes out already)."""
    if wh is None:
        yield
        return
    with wh.partition_lock("policy_actions", {"policy": f"{audit.POLICY}:reap"}):
        yield


def _reap_listed(
    listed: list[tuple[Launcher, list[Instance]]],
    report: dict[str, Any],
    *,
    wh: Warehouse | None,
    run_id: str,
    dry_run: bool,
    live_runs: set[str],
    now: datetime,
    cap: int,
    payloads: PayloadStore | None,
) -> None:
    """Settle what killed tries left, then terminate the expired instances within the cap."""
    if not dry_run or live_runs:
        report["reconciled"] = _reconcile_reaps(wh, listed, run_id)
    # the cap belongs to the DAG run, not to one try: a retry (same run_id) gets what is left
    spent = _reaped_by(wh, run_id)
    report["spent_by_earlier_tries"] = spent
    seen: set[tuple[str, str]] = set()
    for ln, found in listed:
        # launchers overlap (Lambda lists every region, GCP a whole project, Azure a resource
        # group): decide each instance once, or it is reaped, audited and capped twice
        found = [i for i in found if (i.provider, i.instance_id) not in seen]
        seen.update((i.provider, i.instance_id) for i in found)
        expired = [i for i in found if i.expired(now)]
        report["kept"] += len(found) - len(expired)
        for i in expired:
            key = f"{i.provider}:{i.region}:{i.instance_id}"
            report["expired"].append(key)
            if i.state in ENDING:
                # already being terminated (by an earlier attempt of this run -- the task retries when
                # another cloud failed -- or by the benchmark's teardown): asking again would audit a
                # second reap of the same instance and spend the cap on it
                report["ending"].append(key)
                continue
            if spent + len(report["terminated"]) >= cap:
                report["capped"].append(key)
                continue
            reason = (
                f"bench run {i.bench_run_id} expired at {iso(i.expires_at)}" if i.expires_at else "expired"
            )
            if dry_run and i.bench_run_id in live_runs:
                reason += "; launched live by this package, so reaped even in a dry run"
            elif dry_run:
                audit.record(
                    wh,
                    run_id=run_id,
                    provider=i.provider,
                    region=i.region,
                    resource_id=i.instance_id,
                    action="reap",
                    result="dry_run",
                    dry_run=True,
                    reason=reason,
                    kind="benchmark_reaper",
                )
                continue
            # on record (pending) before the call: a try killed between the call and its outcome
            # leaves a row the next try settles, and that counts against this run's cap
            aid = audit.intent(
                wh,
                run_id=run_id,
                provider=i.provider,
                region=i.region,
                resource_id=i.instance_id,
                action="reap",
                reason=reason,
                kind="benchmark_reaper",
                evidence={"bench_run_id": i.bench_run_id},
            )
            try:
                ln.terminate([i.instance_id])
                report["terminated"].append(key)
                audit.settle(wh, aid, "ok")
                if i.bench_run_id and (err := payload.drop(payloads, i.bench_run_id)):
                    report["errors"].append(err)
            except Exception as e:  # noqa: BLE001 - reported below, next hour retries
                report["errors"].append(f"{key}: {e}")
                audit.settle(wh, aid, "failed", reason=str(e))


def _reaped_by(wh: Warehouse | None, run_id: str) -> int:
    """Instances this reaper run terminated in earlier tries (audited `reap`, live): done, or
    possibly done (a try killed between the call and its outcome)."""
    if wh is None:
        return 0
    rows = wh.query(
        "SELECT count(*) FROM policy_actions WHERE policy = ? AND run_id = ? AND action = 'reap' "
        "AND dry_run = ? AND ((status = ? AND result = 'ok') OR status IN (?, ?))",
        [audit.POLICY, run_id, False, audit.DONE, audit.PENDING, audit.UNKNOWN],
    )
    return int(rows[0][0])


def _reconcile_reaps(
    wh: Warehouse | None, listed: list[tuple[Launcher, list[Instance]]], run_id: str
) -> list[str]:
    """Settle the `reap` rows a killed reaper try left pending (any run: the DAG runs one at a
    time), by each instance's state in this try's listing. A row of a cloud that could not be
    listed now stays pending for a later try."""
    states: dict[tuple[str, str], str] = {}
    clouds = set()
    for ln, found in listed:
        clouds.add(ln.provider)
        states.update({(i.provider, i.instance_id): i.state for i in found})
    rows = [p for p in audit.pending(wh, "reap") if p.provider in clouds]
    done = audit.reconcile(
        wh, rows, lambda p: states.get((p.provider, p.resource_id)), by_run=f"reaper run {run_id}"
    )
    if any(status == audit.UNKNOWN for _, status, _ in done):
        emit(
            AlertEvent(
                kind="benchmark_reap_outcome_unknown",
                severity="warning",
                title="GPU benchmark reaper: terminations with no recorded outcome",
                summary="; ".join(f"{p.resource_id}: {r}" for p, _, r in done)[:2000],
                facts={"instances": ", ".join(p.resource_id for p, _, _ in done)},
                dedup_key=f"bench:reaper:unknown:{run_id}",
            )
        )
    return [f"{p.provider}:{p.resource_id}: {status}" for p, status, _ in done]


def _live_launches(wh: Warehouse | None) -> set[str]:
    """Bench run ids with a live (not dry-run) launch in the audit log, whatever its result: a
    failed launch may have left an instance its own cleanup could not end."""
    if wh is None:
        return set()
    rows = wh.query(
        "SELECT DISTINCT resource_id FROM policy_actions WHERE policy = ? AND action = 'launch' "
        "AND dry_run = ?",
        [audit.POLICY, False],
    )
    return {r[0] for r in rows}


__all__ = [
    "CollectError",
    "LaunchError",
    "Target",
    "collect",
    "launch",
    "plan",
    "prepare",
    "reap",
    "terminate",
]
