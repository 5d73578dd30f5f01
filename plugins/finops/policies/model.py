"""Policy YAML schema (pydantic). A bad file fails with `PolicyError` naming file + key path.

A policy file holds `policies: [...]`. Two kinds:
- `tags`: required tags (allowed values or a regex), keys normalised (`Team`, `team`,
  `user:team` are one key), violations recorded in `tag_compliance`;
- `idle`: GPU utilisation (and optionally CPU / network) below thresholds for N hours.
  Missing or partial metrics never count as idle.
Safety knobs live here so that a policy cannot be written unsafely: terminate is refused
unless the scope is Lambda Cloud only and `allow_terminate: true`; every policy has a cap.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import time
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from finops.exceptions import ConfigError

Provider = Literal["aws", "gcp", "azure", "lambda"]
ActionKind = Literal["report", "notify", "mark", "stop", "terminate"]
_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


class PolicyError(ConfigError):
    """A policy file problem, phrased as `file: policies[i].key: reason`."""


def normalise_key(key: str) -> str:
    """Tag key identity: case-insensitive, `user:` (AWS cost-allocation) prefix dropped,
    `-` / `:` / space / `.` read as `_`. So `Team`, `team`, `user:team`, `cost-center` ~ `cost_center`."""
    k = key.strip().casefold()
    if k.startswith("user:"):
        k = k[5:]
    return re.sub(r"[\s.:\-]+", "_", k)


def spellings(tags: Mapping[str, str], key: str) -> list[str]:
    """The keys in `tags` that are `key` under normalise_key (`Finops-Idle-Marked`,
    `finops_idle_marked` ...), or [key]. A mark is read by its normalised key, so removing it
    must remove every spelling, or a hand-written one would outlive its grace period."""
    want = normalise_key(key)
    return [k for k in tags if normalise_key(k) == want] or [key]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TagRule(_Model):
    key: str
    aliases: list[str] = []
    allowed: list[str] | None = Field(default=None, description="allowed values (case-insensitive)")
    pattern: str | None = Field(default=None, description="regex the whole value must match")

    @field_validator("pattern")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise ValueError(f"not a valid regex: {e}") from None
        return v

    @model_validator(mode="after")
    def _one_check(self) -> TagRule:
        if self.allowed is not None and self.pattern is not None:
            raise ValueError("give either allowed or pattern, not both")
        return self

    def keys(self) -> set[str]:
        return {normalise_key(self.key), *(normalise_key(a) for a in self.aliases)}


class OwnerTag(_Model):
    key: str = "owner"
    aliases: list[str] = ["team", "created_by"]

    def keys(self) -> list[str]:
        return [normalise_key(self.key), *(normalise_key(a) for a in self.aliases)]


class Scope(_Model):
    providers: list[Provider] = ["aws", "gcp", "azure", "lambda"]
    accounts: list[str] = Field(default=[], description="empty -> every account")
    regions: list[str] = Field(default=[], description="empty -> every region")


class Exemptions(_Model):
    tag: str | None = Field(default="finops:exempt", description="key, or key=value; present -> exempt")
    name_patterns: list[str] = Field(default=[], description="fnmatch globs on the resource name")
    accounts: list[str] = []


class IdleRule(_Model):
    hours: float = Field(gt=0, le=24 * 14)
    gpu_util_below: float = Field(gt=0, le=100, description="percent")
    cpu_util_below: float | None = Field(default=None, gt=0, le=100)
    network_below_bytes_per_s: float | None = Field(default=None, gt=0)
    aggregate: Literal["max", "p95", "mean"] = "max"
    period_minutes: int = Field(default=5, ge=1, le=60)
    min_coverage: float = Field(
        default=0.9, gt=0, le=1, description="fraction of periods that must have data"
    )
    max_staleness_minutes: int = Field(default=30, ge=1)


class OffHours(_Model):
    """Actions only fire inside these local-time windows (e.g. nights and weekends)."""

    timezone: str = "UTC"
    days: list[str] = list(_DAYS)
    start: time = time(19, 0)
    end: time = time(7, 0)

    @field_validator("timezone")
    @classmethod
    def _tz(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {v!r}") from None
        return v

    @field_validator("days")
    @classmethod
    def _days(cls, v: list[str]) -> list[str]:
        out = [d.strip().lower()[:3] for d in v]
        bad = [d for d, o in zip(v, out, strict=True) if o not in _DAYS]
        if bad:
            raise ValueError(f"unknown day(s) {bad}; use mon..sun")
        return out


class MetricNames(_Model):
    """Where a cloud publishes GPU / CPU / network figures (configurable per deployment)."""

    gpu_namespace: str = "CWAgent"
    gpu_metric: str = "nvidia_smi_utilization_gpu"
    gpu_instance_dimension: str = "InstanceId"
    cpu_metric: str = "CPUUtilization"
    gcp_gpu_metric: str = "agent.googleapis.com/gpu/utilization"
    gcp_cpu_metric: str = "compute.googleapis.com/instance/cpu/utilization"
    azure_gpu_metric: str = "GPU Utilization"
    azure_cpu_metric: str = "Percentage CPU"


class Policy(_Model):
    name: str
    kind: Literal["tags", "idle"]
    description: str = ""
    scope: Scope = Scope()
    exemptions: Exemptions = Exemptions()
    required_tags: list[TagRule] = []
    idle: IdleRule | None = None
    metrics: MetricNames = MetricNames()
    min_age_hours: float = Field(default=1.0, ge=0)
    action: ActionKind = "report"
    allow_terminate: bool = False
    grace_hours: float = Field(default=24.0, ge=0)
    max_actions_per_run: int = Field(
        default=10,
        ge=0,
        le=1000,
        description="most mark / stop / terminate actions a run may plan (over it the run aborts before acting); "
        "runs of the policy that overlap in time share it (finops.policies.engine: The cap)",
    )
    off_hours: OffHours | None = None
    owner_tag: OwnerTag = OwnerTag()
    act_without_owner: bool = Field(default=False, description="stop even when nobody could be notified")
    opt_in_tag: str | None = Field(
        default=None,
        description="key, or key=value: when set, a violating resource without it is reported, never marked, "
        "stopped or counted against max_actions_per_run (include/iam lets the package tag and stop "
        "only instances carrying finops:auto-stop=enabled)",
    )
    mark_tag: str = "finops-idle-marked"

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be 1-63 chars of a-z, 0-9, '_' or '-'")
        return v

    @field_validator("mark_tag")
    @classmethod
    def _mark(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9_-]{0,62}", v):
            raise ValueError("must be lowercase a-z0-9_- (valid as a GCP label key too)")
        return v

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        """Mark key per kind (an idle mark must not be lifted by a tags policy); a stop policy
        with no explicit providers covers the clouds that can stop (not Lambda)."""
        if isinstance(data, dict) and "mark_tag" not in data and data.get("kind") == "tags":
            data = {**data, "mark_tag": "finops-tags-marked"}
        if isinstance(data, dict) and data.get("action") == "stop":
            scope = data.get("scope") or {}
            if isinstance(scope, dict) and "providers" not in scope:
                data = {**data, "scope": {**scope, "providers": ["aws", "gcp", "azure"]}}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Policy:
        if self.kind == "tags" and not self.required_tags:
            raise ValueError("a tags policy needs required_tags")
        if self.kind == "idle" and self.idle is None:
            raise ValueError("an idle policy needs an idle rule")
        if self.kind == "tags" and self.action == "stop":
            raise ValueError(
                "tags policies may report, notify or mark (terminate: Lambda only, opted in); never stop"
            )
        if self.action == "terminate":
            if not self.allow_terminate:
                raise ValueError("action terminate needs allow_terminate: true (explicit opt-in)")
            if set(self.scope.providers) != {"lambda"}:
                raise ValueError(
                    "terminate is only for Lambda Cloud (it cannot stop); scope.providers must be [lambda]"
                )
        elif self.allow_terminate:
            raise ValueError("allow_terminate is only meaningful with action: terminate")
        if self.action == "stop" and "lambda" in self.scope.providers:
            raise ValueError("Lambda Cloud instances cannot be stopped; drop lambda from scope.providers")
        return self


class Target(_Model):
    """Where to look: one cloud account (+ regions). Credentials come from the Airflow connection."""

    name: str
    provider: Provider
    conn_id: str | None = None
    account: str | None = Field(
        default=None, description="AWS account id (else STS), GCP project, Azure subscription"
    )
    regions: list[str] = ["us-east-1"]
    base_url: str | None = Field(default=None, description="API root override (GCP compute/ARM/Lambda)")
    monitoring_url: str | None = Field(default=None, description="GCP Cloud Monitoring root override")
    gpu_metric_namespace: str | None = Field(
        default=None, description="Azure Monitor namespace of the GPU metric"
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be 1-63 chars of a-z, 0-9, '_' or '-'")
        return v

    @model_validator(mode="after")
    def _account(self) -> Target:
        if self.provider in ("gcp", "azure") and not self.account:
            raise ValueError(f"{self.provider} targets need account (GCP project / Azure subscription id)")
        return self


class PolicyFile(_Model):
    version: int = 1
    targets: list[Target] = []
    policies: list[Policy] = []


def _fmt_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def parse_file(data: Any, origin: str = "policies.yaml") -> PolicyFile:
    if not isinstance(data, dict):
        raise PolicyError(f"{origin}: (root): expected a mapping with `policies` and/or `targets` lists")
    try:
        return PolicyFile.model_validate(data)
    except ValidationError as e:
        lines = [f"{origin}: {_fmt_loc(err['loc'])}: {err['msg']}" for err in e.errors()]
        raise PolicyError("\n".join(lines)) from None


def parse_policies(data: Any, origin: str = "policies.yaml") -> list[Policy]:
    return list(parse_file(data, origin).policies)


def load_policy_file(path: str | Path) -> PolicyFile:
    from finops.config import load_yaml

    p = Path(path)
    return parse_file(load_yaml(p, PolicyError), origin=str(p))


def load_all(directory: str | Path) -> tuple[list[Policy], list[Target]]:
    """Every `*.yaml` / `*.yml` in a folder; policy and target names unique across files."""
    d = Path(directory)
    if not d.is_dir():
        raise PolicyError(f"{d}: policies folder not found (policies_dir in finops.yaml)")
    policies: list[Policy] = []
    targets: list[Target] = []
    seen: dict[str, str] = {}
    for f in sorted([*d.glob("*.yaml"), *d.glob("*.yml")]):
        pf = load_policy_file(f)
        for kind, items in (("policy", pf.policies), ("target", pf.targets)):
            for item in items:
                key = f"{kind}:{item.name}"
                if key in seen:
                    raise PolicyError(f"{f}: {kind} name {item.name!r} already defined in {seen[key]}")
                seen[key] = str(f)
        policies += pf.policies
        targets += pf.targets
    marks: dict[str, str] = {}
    for pol in policies:
        if pol.action in ("mark", "stop", "terminate"):
            if pol.mark_tag in marks:
                raise PolicyError(
                    f"{d}: policies {marks[pol.mark_tag]!r} and {pol.name!r} both use mark_tag {pol.mark_tag!r}; "
                    "each marking policy needs its own (one would lift the other's marks)"
                )
            marks[pol.mark_tag] = pol.name
    return policies, targets


def load_policies(directory: str | Path) -> list[Policy]:
    return load_all(directory)[0]
