"""Interruption notices, read on the training host from the cloud's metadata service, turned
into a checkpoint-and-stop request before the instance goes away.

- AWS: IMDSv2 `spot/instance-action` (the two-minute spot interruption notice) and
  `events/recommendations/rebalance` (capacity is getting scarce: save now, keep going is not
  an option the planner relies on, so it stops too).
- GCP: `instance/preempted` turns TRUE when a spot / preemptible VM is being preempted.
- Azure: Scheduled Events with EventType `Preempt` (spot eviction, ~30 s notice).

Stdlib only (urllib), so nothing extra ships to the instance; no Airflow import.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable

AWS_IMDS = "http://169.254.169.254"
GCP_METADATA = "http://metadata.google.internal"
AZURE_IMDS = "http://169.254.169.254"
_TIMEOUT_S = 2.0

# A check returns a reason when the instance is about to be taken away, else None.
Check = Callable[[], "str | None"]


def _get(url: str, headers: dict[str, str], method: str = "GET") -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers=headers, method=method)  # noqa: S310 - fixed http endpoints
    try:
        with urllib.request.urlopen(req, timeout=_TIMEOUT_S) as resp:  # noqa: S310
            return resp.status, resp.read(1 << 16)
    except urllib.error.HTTPError as e:
        return e.code, b""


def aws_check(base: str = AWS_IMDS) -> Check:
    def check() -> str | None:
        status, token = _get(
            f"{base}/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": "300"}, "PUT"
        )
        if status != 200:
            return None
        auth = {"X-aws-ec2-metadata-token": token.decode()}
        status, body = _get(f"{base}/latest/meta-data/spot/instance-action", auth)
        if status == 200:
            action = json.loads(body or b"{}")
            return f"aws spot interruption notice: {action.get('action', '?')} at {action.get('time', '?')}"
        status, body = _get(f"{base}/latest/meta-data/events/recommendations/rebalance", auth)
        if status == 200:
            return f"aws rebalance recommendation at {json.loads(body or b'{}').get('noticeTime', '?')}"
        return None

    return check


def gcp_check(base: str = GCP_METADATA) -> Check:
    def check() -> str | None:
        status, body = _get(f"{base}/computeMetadata/v1/instance/preempted", {"Metadata-Flavor": "Google"})
        return "gcp preemption notice" if status == 200 and body.strip() == b"TRUE" else None

    return check


def azure_check(base: str = AZURE_IMDS) -> Check:
    def check() -> str | None:
        status, body = _get(f"{base}/metadata/scheduledevents?api-version=2020-07-01", {"Metadata": "true"})
        if status != 200:
            return None
        for ev in json.loads(body or b"{}").get("Events", []):
            if ev.get("EventType") == "Preempt":
                return f"azure eviction scheduled not before {ev.get('NotBefore', '?')}"
        return None

    return check


def watch(request_stop: Callable[[str], None], check: Check, interval_s: float = 5.0) -> threading.Event:
    """Poll `check` in a daemon thread; on a notice call `request_stop(reason)` (e.g.
    `Checkpointer.request_stop`) once and end. Set the returned event to stop watching.
    Metadata errors (a timeout, a refused connection) are not notices: polling goes on."""
    done = threading.Event()

    def loop() -> None:
        while not done.is_set():
            try:
                reason = check()
            except (OSError, ValueError):
                reason = None
            if reason:
                request_stop(reason)
                done.set()
                return
            done.wait(interval_s)

    threading.Thread(target=loop, name="finops-interruption-watch", daemon=True).start()
    return done


def check_for(provider: str) -> Check | None:
    """The notice check for a provider name (`FINOPS_PROVIDER` on the instance); None for the
    local provider and unknown names, where SIGTERM is the only notice."""
    return {"aws": aws_check, "gcp": gcp_check, "azure": azure_check}.get(provider, lambda: None)()
