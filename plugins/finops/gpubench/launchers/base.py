"""What every cloud launcher does, in one small protocol, plus the naming / tagging rules that
let teardown and the reaper find benchmark instances without any state of ours.

Every benchmark instance carries: finops:benchmark=true, finops:bench-run-id, finops:dag-id,
finops:run-id and finops:expires-at (UTC, ISO 8601). Clouds with stricter label rules (GCP)
get an encoded form (see gcp.py).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from finops.exceptions import CloudActionError

TAG_BENCH = "finops:benchmark"
TAG_RUN = "finops:bench-run-id"
TAG_DAG = "finops:dag-id"
TAG_DAG_RUN = "finops:run-id"
TAG_EXPIRES = "finops:expires-at"
NAME_PREFIX = "finops-bench-"
# The clouds' words for "termination already asked for, still listed": AWS shutting-down, Azure
# Deleting and Lambda terminating (launchers map Azure's to `terminating`). Never asked again,
# and never taken for a live instance of its run (a retried launch creates a new one).
ENDING = ("shutting-down", "terminating")

log = logging.getLogger(__name__)


class LaunchError(CloudActionError, RuntimeError):
    """Launching failed; `cleaned` says whether instances it may have created were terminated,
    `found` lists those the cleanup found and `terminated` those it asked the cloud to end (audited)."""

    def __init__(
        self,
        msg: str,
        cleaned: bool = True,
        found: list[str] | None = None,
        terminated: list[str] | None = None,
    ):
        super().__init__(msg)
        self.cleaned = cleaned
        self.found = list(found or [])
        self.terminated = list(terminated or [])


class CapReached(LaunchError):
    """Too many benchmark instances are alive already: refuse to launch another."""


class TerminateError(CloudActionError, RuntimeError):
    """Instances are still alive after the terminate timeout."""


@dataclass(frozen=True)
class LaunchSpec:
    bench_run_id: str
    dag_id: str
    dag_run_id: str
    region: str
    instance_type: str
    pricing_model: str
    user_data: str
    expires_at: datetime
    ttl_minutes: int
    # called with the ids a failed create left behind, right before they are terminated, so the
    # caller can put each termination on record first (finops.gpubench.lifecycle)
    before_cleanup: Callable[[list[str]], None] | None = field(default=None, compare=False, repr=False)

    def tags(self) -> dict[str, str]:
        return {
            TAG_BENCH: "true",
            TAG_RUN: self.bench_run_id,
            TAG_DAG: self.dag_id[:250],
            TAG_DAG_RUN: self.dag_run_id[:250],
            TAG_EXPIRES: iso(self.expires_at),
            "Name": NAME_PREFIX + self.bench_run_id,
        }


@dataclass(frozen=True)
class Instance:
    provider: str
    region: str
    instance_id: str
    state: str  # the cloud's own word: running, pending, terminated, active, booting ...
    bench_run_id: str | None = None
    expires_at: datetime | None = None
    tags: dict[str, str] = field(default_factory=dict)

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


def adoptable(alive: list[Instance], run_id: str) -> list[str]:
    """What a retried launch takes as its run's own: the run's instances that are not ending (a
    failed attempt's cleanup may be ending one; a new one is launched instead)."""
    return [i.instance_id for i in alive if i.bench_run_id == run_id and i.state not in ENDING]


class Launcher(Protocol):
    provider: str

    def launch(self, spec: LaunchSpec) -> list[str]:
        """Create the instance(s); on any error after creation, terminate them before raising."""

    def find(self, bench_run_id: str | None = None) -> list[Instance]:
        """Live (not yet gone) benchmark instances, all of them or one run's."""

    def terminate(self, instance_ids: list[str]) -> None:
        """Ask the cloud to terminate; returns once the request was accepted."""


def bench_run_id(dag_id: str, dag_run_id: str, target_key: str) -> str:
    """Deterministic per (DAG run, target): a retried launch reuses it (ClientToken / requestId)."""
    h = hashlib.sha256(f"{dag_id}|{dag_run_id}|{target_key}".encode()).hexdigest()
    return h[:20]


def iso(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(v: str | None) -> datetime | None:
    if not v:
        return None
    try:
        dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def launch_failed(launcher: Launcher, spec: LaunchSpec, error: BaseException, what: str) -> LaunchError:
    """The one cleanup path after a failed create, for every cloud: the call may have created
    the instance before failing (timeout, throttled reply), so find it by tag and terminate it
    before reporting. `cleaned=False` when that cleanup itself failed (teardown retries it)."""
    cleaned = True
    left: list[str] = []
    terminated: list[str] = []
    try:
        left = [i.instance_id for i in launcher.find(spec.bench_run_id)]
        if left:
            log.warning("%s for %s failed after creating %s: terminating", what, spec.bench_run_id, left)
            if spec.before_cleanup is not None:
                spec.before_cleanup(left)
            launcher.terminate(left)
            terminated = left
    except Exception as ce:  # noqa: BLE001 - report both; teardown retries the cleanup
        log.error("cleanup after failed %s for %s failed: %s", what, spec.bench_run_id, ce)
        cleaned = False
    return LaunchError(
        f"{what} for {spec.bench_run_id} failed: {error}", cleaned=cleaned, found=left, terminated=terminated
    )
