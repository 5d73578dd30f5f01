"""finops.yaml `jobs:` section: the providers training jobs launch through (each with its
Airflow connection), the default one, the default checkpoint URI, and caps every job runs
under. Validated when the file loads: a bad key or value fails naming it
(`jobs.providers.gpu-east.regon: Extra inputs are not permitted`).

    jobs:
      default_provider: aws-main
      default_checkpoint_uri: s3://ml-checkpoints/jobs   # a job without one: <this>/<job id>
      dry_run: true                                      # operators launch nothing unless told
      caps: {max_budget_usd: 500, max_attempts: 20, max_spot_preemptions: 5}
      providers:
        aws-main: {kind: aws, conn_id: aws_jobs, region: us-east-1, image_id: ami-0abc}
        box: {kind: local, work_dir: /data/jobs}

An operator or `@training_job` names a provider by its key; the checkpoint default is per job
id (stable across retries of one task, distinct across runs), so no two jobs resume from each
other's checkpoints. Pure: no Airflow import.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from finops.exceptions import ConfigError

_KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Provider(_Model):
    python: str = "python3"


class LocalProviderSettings(_Model):
    kind: Literal["local"]
    work_dir: str
    extra_env: dict[str, str] = {}
    machines: list[str] | None = None

    @field_validator("work_dir")
    @classmethod
    def _abs(cls, v: str) -> str:
        if not v.startswith("/"):
            raise ValueError("must be an absolute path")
        return v


class AwsProviderSettings(_Provider):
    kind: Literal["aws"]
    conn_id: str | None = None  # None: the instance / worker default credentials
    region: str
    image_id: str
    subnet_id: str | None = None
    security_group_ids: list[str] | None = None
    key_name: str | None = None
    instance_profile_arn: str | None = None


class GcpProviderSettings(_Provider):
    kind: Literal["gcp"]
    conn_id: str | None = None  # None: the instance / worker default credentials
    project: str
    image: str
    zones: list[str] | None = None
    service_account: str | None = None
    accelerator_type: str | None = None
    gpu_count: int = Field(default=1, ge=1, le=16)
    root_volume_gib: int = Field(default=200, ge=10, le=65536)
    max_run_hours: float = Field(default=72.0, gt=0, le=24 * 30)
    base_url: str | None = None


class AzureProviderSettings(_Provider):
    kind: Literal["azure"]
    conn_id: str | None = None  # None: the instance / worker default credentials
    subscription_id: str
    resource_group: str
    subnet_id: str
    ssh_public_key: str
    image_reference: dict[str, str] = {}
    identity_id: str | None = None
    root_volume_gib: int = Field(default=200, ge=10, le=65536)
    create_wait_s: float = Field(default=120, gt=0)
    poll_s: float = Field(default=5, gt=0)
    base_url: str | None = None


class LambdaProviderSettings(_Provider):
    kind: Literal["lambda"]
    conn_id: str | None = None  # None: the instance / worker default credentials
    ssh_key_name: str
    base_url: str | None = None


ProviderSettings = Annotated[
    LocalProviderSettings | AwsProviderSettings | GcpProviderSettings | AzureProviderSettings
    | LambdaProviderSettings,
    Field(discriminator="kind"),
]  # fmt: skip


class JobCaps(_Model):
    """Limits over every job's own: a spec asking for more fails naming the cap."""

    max_budget_usd: Decimal | None = Field(
        default=None, gt=0, description="also the budget of a job without one"
    )
    max_attempts: int = Field(default=20, ge=1, le=1000)
    max_spot_preemptions: int | None = Field(default=None, ge=0, le=1000)

    @field_validator("max_budget_usd", mode="before")
    @classmethod
    def _exact(cls, v: Any) -> Any:
        return Decimal(repr(v)) if isinstance(v, float) else v  # YAML 12.30 is a float


class JobsSettings(_Model):
    providers: dict[str, ProviderSettings] = {}
    default_provider: str | None = None
    default_checkpoint_uri: str | None = None
    dry_run: bool = True
    poll_s: float = Field(default=30.0, ge=1, le=3600)
    caps: JobCaps = JobCaps()

    @field_validator("providers")
    @classmethod
    def _keys(cls, v: dict[str, Any]) -> dict[str, Any]:
        for k in v:
            if not _KEY.match(k):
                raise ValueError(f"provider name {k!r}: 1-63 chars of a-z, 0-9, '_' or '-'")
        return v

    @field_validator("default_checkpoint_uri")
    @classmethod
    def _uri(cls, v: str | None) -> str | None:
        if v is None:
            return v
        from finops.jobs.spec import _check_uri  # lazily: spec imports finops.config

        return _check_uri(v)

    @model_validator(mode="after")
    def _default_known(self) -> JobsSettings:
        if self.default_provider is not None and self.default_provider not in self.providers:
            known = ", ".join(sorted(self.providers)) or "(none configured)"
            raise ValueError(f"default_provider {self.default_provider!r} is not in providers: {known}")
        return self

    # -- applying the section to one job ---------------------------------------------------

    def provider_config(self, value: dict[str, Any] | str | None) -> dict[str, Any] | None:
        """The provider mapping for `finops.jobs.executor.provider_from_config`: a mapping as
        given, a configured provider by name, the default provider for None (None when there
        is no default: the caller's own fallback applies)."""
        if isinstance(value, dict):
            return value
        name = value if value is not None else self.default_provider
        if name is None:
            return None
        if name not in self.providers:
            known = ", ".join(sorted(self.providers)) or "(none configured)"
            raise ConfigError(f"jobs.providers: no provider named {name!r}; configured: {known}")
        return self.providers[name].model_dump(exclude_none=True)

    def apply(self, data: dict[str, Any], job_id: str) -> dict[str, Any]:
        """A job spec mapping with this section's defaults filled in and its caps checked
        (before the spec itself is validated, so every message names a key)."""
        from finops.jobs.spec import JobSpecError

        out = dict(data)
        if not out.get("checkpoint_uri") and self.default_checkpoint_uri:
            out["checkpoint_uri"] = f"{self.default_checkpoint_uri}/{job_id}"
        cap = self.caps.max_budget_usd
        if cap is not None:
            if out.get("budget_usd") is None:
                out["budget_usd"] = cap
            else:
                try:
                    asked = Decimal(repr(out["budget_usd"]) if isinstance(out["budget_usd"], float)
                                    else str(out["budget_usd"]))  # fmt: skip
                except ArithmeticError:
                    asked = None  # not a number: the spec's own validation names it
                if asked is not None and asked > cap:
                    raise JobSpecError(f"budget_usd: {asked} is over jobs.caps.max_budget_usd ({cap})")
        preempt = self.caps.max_spot_preemptions
        if preempt is not None:
            asked_p = out.get("max_spot_preemptions")
            if asked_p is None:
                out["max_spot_preemptions"] = preempt
            elif isinstance(asked_p, int) and asked_p > preempt:
                raise JobSpecError(
                    f"max_spot_preemptions: {asked_p} is over jobs.caps.max_spot_preemptions ({preempt})"
                )
        return out


def parse_jobs_settings(data: Any) -> JobsSettings:
    """The section on its own (tests, tools); finops.config validates it with the file."""
    return JobsSettings.model_validate(data or {})
