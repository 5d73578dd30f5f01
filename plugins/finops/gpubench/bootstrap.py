"""User data / startup scripts for benchmark instances: the standalone suite travels inside
the script (a base64 tar.gz of finops/gpubench's torch-only modules), so a stock deep-learning
image needs nothing from us but python + torch + curl. When that script would outgrow the
cloud's startup-script limit (`USER_DATA_LIMITS`), the bundle is fetched instead (`fetch_step`,
staged by payload.py).

The instance: arms a hard power-off after the TTL (`shutdown -P +TTL`; on EC2 with
InstanceInitiatedShutdownBehavior=terminate that terminates it), runs the suite under a
timeout, PUTs the JSON to a pre-signed URL (or the cloud's CLI), and powers off at once.
"""

from __future__ import annotations

import ast
import base64
import gzip
import hashlib
import io
import re
import shlex
import tarfile
from pathlib import Path

from finops.paths import include_dir

STANDALONE = (
    "__init__.py",
    "__main__.py",
    "suite.py",
    "facts.py",
    "kernels.py",
    "profiles.py",
    "schema.py",
    "timing.py",
    "train.py",
)
# shipped only to runs with the serving section (the weekly default, see settings.serving): with
# them the script outgrows EC2's user data, so the bundle travels through object storage there
# (see payload.py)
SERVING_MODULES = ("serving.py", "serving_config.py", "latency.py")
TEMPLATE = "bootstrap.sh.tmpl"
# What each cloud accepts as a startup script, in bytes of the script itself (every limit is on
# the raw text, not its base64): EC2 user data 16 KB "in raw form, before it is base64-encoded";
# a Compute Engine metadata value (startup-script) <= 262144 bytes; Azure customData is decoded to
# a binary array of at most 65535 bytes. Lambda Cloud documents no limit for `user_data`: it is
# held to EC2's, the smallest known, rather than to a guess.
USER_DATA_LIMITS = {"aws": 16 * 1024, "gcp": 256 * 1024, "azure": 65535, "lambda": 16 * 1024}
USER_DATA_LIMIT = USER_DATA_LIMITS["aws"]


def _minify(source: str) -> str:
    """Drop comments, docstrings and function annotations (same code, smaller user data: under
    `from __future__ import annotations` a signature's annotations are strings nothing reads;
    class-level ones stay, dataclasses need them)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.returns = None
            a = node.args
            for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
                if arg is not None:
                    arg.annotation = None
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.unparse(tree) + "\n"


def wants_serving(bench_args: list[str]) -> bool:
    """Does this command line run the serving section?"""
    for a in bench_args:
        if a == "--serving":
            return True
        if a.startswith("--sections=") and "serving" in a.split("=", 1)[1].split(","):
            return True
    return False


def bundle(serving: bool = False) -> bytes:
    """A tar.gz holding finops/__init__.py (empty) + the standalone bench modules (+ the serving
    ones when asked). Deterministic (fixed mtimes, gzip without a timestamp): the same source
    gives the same bytes, so a retried launch re-uploads the very object its instance checks."""
    here = Path(__file__).parent
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))

        add("finops/__init__.py", b"")
        for mod in STANDALONE + (SERVING_MODULES if serving else ()):
            add(f"finops/gpubench/{mod}", _minify((here / mod).read_text()).encode())
    return gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)


def bench_payload(serving: bool = False) -> str:
    """base64 of `bundle()`, as the inline step carries it."""
    return base64.b64encode(bundle(serving)).decode()


def inline_step(data: bytes) -> str:
    """Payload step: the bundle inside the script itself."""
    return (
        f"echo '{base64.b64encode(data).decode()}' | base64 -d | tar -xz -C \"$WORK\" "
        "|| PAYLOAD_ERR='the inline payload did not unpack'"
    )


def fetch_step(url: str, sha256: str) -> str:
    """Payload step: curl the bundle from a pre-signed GET URL (no cloud CLI needed), refuse it
    unless its SHA-256 is the one rendered here, then unpack. Any failure sets PAYLOAD_ERR, which
    the script uploads as its error document instead of running anything."""
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise ValueError(f"not a hex SHA-256: {sha256!r}")
    return "\n".join(
        [
            'B="$WORK/bench.tar.gz"',
            # every error is retried (the network may come up after the script starts); tests lower it
            f'if ! curl -fsS --retry "${{FINOPS_FETCH_RETRIES:-5}}" --retry-all-errors --connect-timeout 10 '
            f'--max-time 300 -o "$B" {shlex.quote(url)}; then',
            "  PAYLOAD_ERR='payload download failed'",
            f"elif ! echo '{sha256}  '\"$B\" | sha256sum -c --status -; then",
            "  PAYLOAD_ERR='payload SHA-256 mismatch: not run'",
            'elif ! tar -xzf "$B" -C "$WORK"; then',
            "  PAYLOAD_ERR='the fetched payload did not unpack'",
            "fi",
            'rm -f "$B"',
        ]
    )


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def limit(provider: str) -> int:
    """The provider's startup-script limit in bytes (unknown providers: the smallest known)."""
    return USER_DATA_LIMITS.get(provider, min(USER_DATA_LIMITS.values()))


def render(
    *,
    upload: str,
    ttl_minutes: int,
    bench_args: list[str],
    context: dict[str, str],
    payload_step: str | None = None,
) -> str:
    """The bootstrap shell script. `upload` is a shell snippet reading the result from $OUT;
    `payload_step` puts the package in $WORK (default: the bundle inline, `inline_step`)."""
    tmpl = (include_dir() / "bench" / TEMPLATE).read_text()
    args = [*bench_args, *(f"--context={k}={v}" for k, v in sorted(context.items()))]
    # suite timeout: leave 3 minutes of the TTL for boot + upload
    timeout_s = max(ttl_minutes * 60 - 180, 60)
    values = {
        "TTL_MINUTES": str(int(ttl_minutes)),
        "TIMEOUT_S": str(timeout_s),
        "BENCH_ARGS": " ".join(shlex.quote(a) for a in args),
        "UPLOAD": upload,
        "PAYLOAD_STEP": payload_step
        if payload_step is not None
        else inline_step(bundle(wants_serving(args))),
    }
    # one pass: a value that happens to contain @@NAME@@ (a context string) is never expanded
    return re.sub(r"@@([A-Z_]+)@@", lambda m: values[m.group(1)], tmpl)


def presigned_put_upload(url: str, extra_headers: dict[str, str] | None = None) -> str:
    """Upload snippet: curl PUT of $OUT to a pre-signed URL (S3, GCS signed URL, Azure SAS)."""
    headers = " ".join(f"-H {shlex.quote(f'{k}: {v}')}" for k, v in (extra_headers or {}).items())
    return (
        f"curl -fsS --retry 5 --retry-all-errors -X PUT {headers} "
        f"-H 'Content-Type: application/json' --upload-file \"$OUT\" {shlex.quote(url)}"
    )
