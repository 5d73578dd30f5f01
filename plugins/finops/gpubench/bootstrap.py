"""User data / startup scripts for benchmark instances: the standalone suite travels inside
the script (a base64 tar.gz of finops/gpubench's torch-only modules), so a stock deep-learning
image needs nothing from us but python + torch + curl.

The instance: arms a hard power-off after the TTL (`shutdown -P +TTL`; on EC2 with
InstanceInitiatedShutdownBehavior=terminate that terminates it), runs the suite under a
timeout, PUTs the JSON to a pre-signed URL (or the cloud's CLI), and powers off at once.
"""

from __future__ import annotations

import ast
import base64
import io
import shlex
import tarfile
from pathlib import Path

from finops.paths import include_dir

STANDALONE = ("__init__.py", "__main__.py", "suite.py", "facts.py", "kernels.py", "profiles.py", "schema.py",
              "timing.py", "train.py")
# shipped only to runs that ask for serving (`--serving`, or `--sections` naming it): with them the
# script outgrows EC2's user data (about 22 KiB), so they go where the limit is larger (GCP
# metadata 256 KiB, Azure customData 64 KiB) until the payload travels another way on AWS
SERVING_MODULES = ("serving.py", "serving_config.py", "latency.py")
TEMPLATE = "bootstrap.sh.tmpl"
# EC2 user data is capped at 16 KiB before base64; keep a margin.
USER_DATA_LIMIT = 16 * 1024


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
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
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


def bench_payload(serving: bool = False) -> str:
    """base64 of a tar.gz holding finops/__init__.py (empty) + the standalone bench modules
    (+ the serving ones when asked)."""
    here = Path(__file__).parent
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=9) as tar:
        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))

        add("finops/__init__.py", b"")
        for mod in STANDALONE + (SERVING_MODULES if serving else ()):
            add(f"finops/gpubench/{mod}", _minify((here / mod).read_text()).encode())
    return base64.b64encode(buf.getvalue()).decode()


def render(
    *,
    upload: str,
    ttl_minutes: int,
    bench_args: list[str],
    context: dict[str, str],
) -> str:
    """The bootstrap shell script. `upload` is a shell snippet reading the result from $OUT."""
    tmpl = (include_dir() / "bench" / TEMPLATE).read_text()
    args = [*bench_args, *(f"--context={k}={v}" for k, v in sorted(context.items()))]
    # suite timeout: leave 3 minutes of the TTL for boot + upload
    timeout_s = max(ttl_minutes * 60 - 180, 60)
    script = (
        tmpl.replace("@@TTL_MINUTES@@", str(int(ttl_minutes)))
        .replace("@@TIMEOUT_S@@", str(timeout_s))
        .replace("@@BENCH_ARGS@@", " ".join(shlex.quote(a) for a in args))
        .replace("@@UPLOAD@@", upload)
        .replace("@@PAYLOAD@@", bench_payload(wants_serving(args)))
    )
    return script


def presigned_put_upload(url: str, extra_headers: dict[str, str] | None = None) -> str:
    """Upload snippet: curl PUT of $OUT to a pre-signed URL (S3, GCS signed URL, Azure SAS)."""
    headers = " ".join(f"-H {shlex.quote(f'{k}: {v}')}" for k, v in (extra_headers or {}).items())
    return (f"curl -fsS --retry 5 --retry-all-errors -X PUT {headers} "
            f"-H 'Content-Type: application/json' --upload-file \"$OUT\" {shlex.quote(url)}")
