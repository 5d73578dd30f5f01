"""The job spec: what a training job runs, how much work it is, and the limits it runs under.

Validated like finops.yaml (pydantic, `extra="forbid"`): a bad spec raises `JobSpecError`
with one `path.to.key: reason` line per problem. Names end up in cloud tags, file paths and
log lines, so every user string that is not free text has a narrow alphabet.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from finops.exceptions import ConfigError

Precision = Literal["fp32", "amp_bf16", "amp_fp16"]
Priority = Literal["critical", "normal", "opportunistic"]
Cloud = Literal["aws", "gcp", "azure", "lambda", "local"]
PRECISIONS: tuple[str, ...] = ("fp32", "amp_bf16", "amp_fp16")

# Tag values (AWS 256, GCP labels 63 of [a-z0-9_-]): the GCP label alphabet fits every cloud.
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_REGION = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_GPU_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,39}$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# An OCI reference: registry/path:tag or @sha256:digest; no spaces, no shell metacharacters.
_IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]{0,254}$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_KEY_PART = re.compile(r"^[A-Za-z0-9._=-]{1,128}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _fmt_loc(loc: tuple[Any, ...]) -> str:
    """The key-path format of finops.yaml errors (own copy: finops.config validates the `jobs:`
    section with this module, so importing it back would make a loop)."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


class JobSpecError(ConfigError):
    """A job spec problem, phrased as `path.to.key: reason`."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _name(v: str) -> str:
    if not _NAME.match(v):
        raise ValueError("must be 1-63 chars of a-z, 0-9, '_' or '-', starting with a letter or digit")
    return v


def _no_control(v: str, what: str) -> str:
    if _CONTROL.search(v):
        raise ValueError(f"{what} must not contain control, line-break or bidi characters")
    return v


def _check_argv(argv: list[str], empty: str) -> list[str]:
    if not argv or not argv[0]:
        raise ValueError(empty)
    for a in argv:
        _no_control(a, "arguments")
    return argv


def _check_pattern(v: str | None, pattern: re.Pattern[str], reason: str) -> str | None:
    if v is not None and not pattern.match(v):
        raise ValueError(reason)
    return v


class RunSpec(_Model):
    """What runs on the instance: an argv list (never a shell string) or a Python module."""

    command: list[str] | None = Field(default=None, description="argv, run without a shell")
    module: str | None = Field(default=None, description="python -m <module>")
    args: list[str] = []
    image: str | None = Field(default=None, description="container image, when the launcher runs one")
    bootstrap: list[list[str]] = Field(default=[], description="argv lists run once before the job")

    @field_validator("command")
    @classmethod
    def _argv(cls, v: list[str] | None) -> list[str] | None:
        return v if v is None else _check_argv(v, "must name a program as its first item")

    @field_validator("args")
    @classmethod
    def _args(cls, v: list[str]) -> list[str]:
        for a in v:  # may be empty (a dumped spec has args: []), never a control character
            _no_control(a, "arguments")
        return v

    @field_validator("bootstrap")
    @classmethod
    def _bootstrap(cls, v: list[list[str]]) -> list[list[str]]:
        return [_check_argv(argv, "each bootstrap step is an argv list naming a program first") for argv in v]

    @field_validator("module")
    @classmethod
    def _module(cls, v: str | None) -> str | None:
        return _check_pattern(v, _MODULE, "must be a dotted Python module name (letters, digits, '_', '.')")

    @field_validator("image")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        return _check_pattern(
            v, _IMAGE, "must be an image reference like registry/name:tag (a-z, 0-9, . _ / : @ -)"
        )

    @model_validator(mode="after")
    def _one(self) -> RunSpec:
        if (self.command is None) == (self.module is None):
            raise ValueError("give exactly one of `command` (an argv list) or `module`")
        return self


class StepTime(_Model):
    """One step time the user measured on a GPU model at a precision."""

    gpu_model: str
    precision: Precision
    step_ms: float = Field(gt=0, le=3_600_000)

    @field_validator("gpu_model")
    @classmethod
    def _gpu(cls, v: str) -> str:
        if not _GPU_MODEL.match(v):
            raise ValueError("must be a GPU model name like 'H100' or 'A10G' (letters, digits, space . _ -)")
        return v


class StepProfile(_Model):
    """How a step is measured: the weekly benchmark's training step (`benchmark`), or step times
    the user measured on their own model (`measured`), which then win for those GPU models."""

    benchmark: str | None = Field(default=None, description="a benchmark profile name, e.g. cuda-full")
    measured: list[StepTime] = []
    # Ratio of one job step to one benchmark step; only used with `benchmark`.
    benchmark_steps_per_step: float = Field(default=1.0, gt=0, le=1e6)

    @field_validator("benchmark")
    @classmethod
    def _bench(cls, v: str | None) -> str | None:
        if v is not None:
            _name(v)
        return v

    @model_validator(mode="after")
    def _some(self) -> StepProfile:
        if self.benchmark is None and not self.measured:
            raise ValueError("give `benchmark` (a profile name) or `measured` step times, or both")
        seen: set[tuple[str, str]] = set()
        for t in self.measured:
            key = (t.gpu_model.lower(), t.precision)
            if key in seen:
                raise ValueError(f"measured: {t.gpu_model} / {t.precision} is given twice")
            seen.add(key)
        return self

    def step_ms(self, gpu_model: str | None, precision: str) -> float | None:
        """The user's own figure for this GPU model and precision, if they measured one."""
        if gpu_model is None:
            return None
        for t in self.measured:
            if t.gpu_model.lower() == gpu_model.lower() and t.precision == precision:
                return t.step_ms
        return None


def _check_uri(v: str) -> str:
    """s3://bucket/prefix, gs://bucket/prefix, az://container/prefix or an absolute local path;
    no '..' or '.' segments, no control characters, no empty segments."""
    _no_control(v, "the checkpoint URI")
    if "://" in v:
        scheme, _, rest = v.partition("://")
        if scheme not in ("s3", "gs", "az"):
            raise ValueError("scheme must be s3://, gs:// or az:// (or give an absolute local path)")
        bucket, _, prefix = rest.partition("/")
        if not _BUCKET.match(bucket) or ".." in bucket:
            raise ValueError("bucket / container must be 3-63 chars of a-z, 0-9, '.', '-'")
        parts = prefix.rstrip("/").split("/") if prefix.strip("/") else []
    elif v.startswith("/"):
        parts = v.rstrip("/").split("/")[1:] if v != "/" else []
        if not parts:
            raise ValueError("a local checkpoint path must name a directory, not /")
    else:
        raise ValueError("must be s3://, gs://, az:// or an absolute local path")
    for p in parts:
        if p in ("", ".", "..") or not _KEY_PART.match(p):
            raise ValueError(
                f"path segment {p!r} is not allowed: use letters, digits, '.', '_', '=', '-' (no '..', no '//')"
            )
    return v.rstrip("/")


class JobSpec(_Model):
    name: str
    team: str
    project: str
    run: RunSpec
    steps: int = Field(gt=0, le=10**12, description="work, in steps of the step profile")
    step_profile: StepProfile
    min_gpu_memory_gib: float = Field(default=0, ge=0, le=4096)
    # Memory the model needs under mixed precision; smaller GPUs qualify when it fits.
    min_gpu_memory_gib_amp: float | None = Field(default=None, ge=0, le=4096)
    precisions: list[Precision] = Field(default=["fp32"], min_length=1)
    priority: Priority = "normal"
    deadline: AwareDatetime | None = None
    budget_usd: Decimal | None = Field(default=None, gt=0, max_digits=28, decimal_places=10)
    checkpoint_uri: str
    checkpoint_every_steps: int | None = Field(default=None, gt=0)
    checkpoint_every_minutes: float | None = Field(default=30.0, gt=0, le=24 * 60)
    max_spot_preemptions: int = Field(default=3, ge=0, le=1000)
    clouds: list[Cloud] = Field(default=[], description="empty: any")
    regions: list[str] = Field(default=[], description="empty: any")

    @field_validator("name", "team", "project")
    @classmethod
    def _names(cls, v: str) -> str:
        return _name(v)

    @field_validator("regions")
    @classmethod
    def _regions(cls, v: list[str]) -> list[str]:
        for r in v:
            if not _REGION.match(r):
                raise ValueError(f"{r!r} is not a region name (a-z, 0-9, '-', e.g. us-east-1)")
        return v

    @field_validator("precisions", "clouds")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("lists each value at most once")
        return v

    @field_validator("budget_usd", mode="before")
    @classmethod
    def _budget(cls, v: Any) -> Any:
        # YAML reads 12.30 as a float; its repr is the shortest exact decimal the user wrote.
        if isinstance(v, float):
            return Decimal(repr(v))
        return v

    @field_validator("checkpoint_uri")
    @classmethod
    def _uri(cls, v: str) -> str:
        return _check_uri(v)

    @model_validator(mode="after")
    def _consistent(self) -> JobSpec:
        if self.min_gpu_memory_gib_amp is not None and self.min_gpu_memory_gib_amp > self.min_gpu_memory_gib:
            raise ValueError("min_gpu_memory_gib_amp cannot exceed min_gpu_memory_gib (AMP needs less)")
        if self.checkpoint_every_steps is None and self.checkpoint_every_minutes is None:
            raise ValueError(
                "set checkpoint_every_steps or checkpoint_every_minutes: a spot job needs checkpoints"
            )
        return self

    def memory_needed_gib(self, precision: str) -> float:
        if precision != "fp32" and self.min_gpu_memory_gib_amp is not None:
            return self.min_gpu_memory_gib_amp
        return self.min_gpu_memory_gib

    def tags(self) -> dict[str, str]:
        """Tags every instance of this job carries (values already in the tag alphabet)."""
        return {"finops-job": self.name, "finops-team": self.team, "finops-project": self.project}


def parse_job_spec(data: Any, origin: str = "job spec") -> JobSpec:
    """Validate a mapping (from a DAG, a Params form or YAML) into a JobSpec, or raise
    JobSpecError with every problem as `origin: key.path: reason`."""
    if not isinstance(data, dict):
        raise JobSpecError(f"{origin}: (root): expected a mapping, got {type(data).__name__}")
    try:
        return JobSpec.model_validate(data)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            msg = err["msg"].removeprefix("Value error, ")
            lines.append(f"{origin}: {_fmt_loc(err['loc'])}: {msg}")
        raise JobSpecError("\n".join(lines)) from None
