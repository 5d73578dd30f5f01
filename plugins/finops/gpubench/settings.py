"""The `benchmarks:` section of finops.yaml, validated here (config.py keeps it a plain dict).

```yaml
benchmarks:
  dry_run: true                       # scheduled runs; a manual run takes the dry_run Param
  results_conn_id: aws_default        # S3 connection the DAG reads results with
  results_bucket: finops-bench-results  # also holds bundles too big for a cloud's user data
  results_prefix: gpu-benchmarks
  serving: true                       # the serving section runs every week; false: training only
  max_instances: 4                    # cap: targets launched per DAG run
  max_running: 8                      # cap: tagged benchmark instances alive at once, per cloud (AWS: per region)
  ttl_minutes: 45                     # hard TTL: the instance powers itself off (and terminates)
  wait_timeout_minutes: 50            # the deferrable wait gives up after this
  quick: false
  targets:
    - {provider: aws, region: us-east-1, instance_type: p5.48xlarge, pricing_model: spot,
       image_id: ami-0123456789abcdef0, subnet_id: subnet-..., security_group_ids: [sg-...]}
    - {provider: lambda, region: us-west-1, instance_type: gpu_1x_h100_sxm5, ssh_key_name: ops}
```
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from finops.exceptions import ConfigError

Provider = Literal["aws", "gcp", "azure", "lambda"]
_SAFE = re.compile(r"^[A-Za-z0-9/][A-Za-z0-9._:/-]{0,510}$")


class BenchSettingsError(ConfigError):
    """A bad `benchmarks:` section, phrased as `benchmarks.path: reason`."""


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Target(_M):
    """One (provider, region, instance type, pricing model) to benchmark, plus launch details."""

    provider: Provider
    region: str
    instance_type: str
    pricing_model: Literal["ondemand", "spot"] = "ondemand"
    conn_id: str | None = (
        None  # default per provider: aws_default, google_cloud_default, azure_default, lambda_cloud_default
    )
    gpu_model: str | None = None  # for reports before the first result arrives
    gpu_count: int = Field(default=1, ge=1, le=64)
    price_per_hour: float | None = Field(
        default=None, ge=0, description="fallback when the price tables are empty"
    )
    # aws (subnet_id is also the Azure subnet resource id)
    image_id: str | None = None
    subnet_id: str | None = None
    security_group_ids: list[str] = []
    key_name: str | None = None
    root_volume_gib: int = Field(default=200, ge=8, le=16384)
    # gcp
    project: str | None = None
    zone: str | None = None
    image: str | None = None  # e.g. projects/deeplearning-platform-release/global/images/family/...
    service_account: str | None = None
    accelerator_type: str | None = None  # N1 + attached GPUs; A2/A3/G2 carry theirs
    # azure
    subscription_id: str | None = None
    resource_group: str | None = None
    image_reference: dict[str, str] = {}  # publisher / offer / sku / version
    identity_id: str | None = None  # user-assigned identity allowed to write the results blob
    ssh_public_key: str | None = None  # a PUBLIC key (Azure requires one for Linux VMs)
    # lambda
    ssh_key_name: str | None = None
    # where this target's results land: default S3 (pre-signed PUT); or gs://bucket/prefix,
    # https://<account>.blob.core.windows.net/<container>/prefix with results_conn_id to read them
    results_base: str | None = None
    results_conn_id: str | None = None

    @field_validator("region", "instance_type", "image_id", "subnet_id", "zone", "project", "resource_group")
    @classmethod
    def _safe(cls, v: str | None) -> str | None:
        if v is not None and not _SAFE.match(v):
            raise ValueError("unexpected characters")
        return v

    @model_validator(mode="after")
    def _per_provider(self) -> Target:
        need = {
            "aws": ["image_id"],
            "gcp": ["project", "zone", "image"],
            "azure": ["subscription_id", "resource_group", "subnet_id", "ssh_public_key"],
            "lambda": ["ssh_key_name"],
        }[self.provider]
        missing = [k for k in need if not getattr(self, k)]
        if missing:
            raise ValueError(f"{self.provider} target needs {', '.join(missing)}")
        return self

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.region}/{self.instance_type}/{self.pricing_model}"

    @property
    def connection(self) -> str:
        return (
            self.conn_id
            or {
                "aws": "aws_default",
                "gcp": "google_cloud_default",
                "azure": "azure_default",
                "lambda": "lambda_cloud_default",
            }[self.provider]
        )


class BenchSettings(_M):
    dry_run: bool = Field(default=True, description="scheduled runs launch for real only when false")
    results_conn_id: str = "aws_default"
    # S3 results, and bundles too big for a cloud's user data (payload.py); null: neither
    results_bucket: str | None = "finops-bench-results"
    results_prefix: str = "gpu-benchmarks"
    max_instances: int = Field(default=4, ge=0, le=64)
    max_running: int = Field(default=8, ge=1, le=256)
    ttl_minutes: int = Field(default=45, ge=5, le=24 * 60)
    wait_timeout_minutes: float = Field(default=50, gt=0, le=24 * 60)
    terminate_timeout_s: int = Field(default=600, ge=1, le=3600)
    quick: bool = False
    serving: bool = Field(default=True, description="add the serving section (--serving) to every run")
    bench_args: list[str] = []
    targets: list[Target] = []

    @field_validator("results_prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        return v.strip("/")

    @model_validator(mode="after")
    def _unique(self) -> BenchSettings:
        keys = [t.key for t in self.targets]
        dup = {k for k in keys if keys.count(k) > 1}
        if dup:
            raise ValueError(f"targets listed twice: {sorted(dup)}")
        return self

    def suite_args(self) -> list[str]:
        """The suite's command line on every instance. --device=cuda: on an instance whose torch
        sees no GPU the suite must fail (exit 2 -> error document), not report CPU figures as the GPU's."""
        from finops.gpubench.bootstrap import wants_serving

        wants = wants_serving(self.bench_args)
        return [
            "--device=cuda",
            *(["--quick"] if self.quick else []),
            *(["--serving"] if self.serving and not wants else []),
            *self.bench_args,
        ]

    def target(self, key: str) -> Target:
        for t in self.targets:
            if t.key == key:
                return t
        raise BenchSettingsError(f"benchmarks.targets: no target {key!r}")


def parse_settings(data: dict[str, Any] | None) -> BenchSettings:
    try:
        return BenchSettings.model_validate(data or {})
    except ValidationError as e:
        lines = []
        for err in e.errors():
            loc = ".".join(str(p) for p in err["loc"])
            lines.append(f"benchmarks.{loc}: {err['msg']}")
        raise BenchSettingsError("\n".join(lines)) from None


def get_settings() -> BenchSettings:
    from finops.config import get_config

    return parse_settings(get_config().benchmarks)
