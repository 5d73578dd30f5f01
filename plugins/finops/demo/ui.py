"""`make ui` (`python -m finops.demo.ui`): the Airflow UI with the FinOps view on the demo's
warehouse. It starts the real `airflow api-server` (the FinOps view is a plugin app it mounts
at /finops, behind the Airflow login) on FINOPS_HOME's SQLite metadata DB and warehouse, with
Airflow's SimpleAuthManager and one read-only demo user. Nothing else is needed to read the
view: no scheduler runs, so DAGs triggered from this UI stay queued (`make demo` runs them).

  python -m finops.demo.ui [--host 127.0.0.1] [--port 8080]      serve until Ctrl-C
  python -m finops.demo.ui --check [--screenshot FILE.png]        start, log in, fetch the
      FinOps pages over HTTP (and screenshot the view in headless Chromium), stop; exit 1 if
      any page fails or comes back empty

The tests' api-server fixture (tests/fixtures/ui.py) starts the server the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The demo's login (documented in the README): a local, read-only viewer on loopback.
DEMO_UI_USER, DEMO_UI_PASSWORD = "demo", "finops-demo"
SIMPLE_AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
CHROMIUM = "/usr/bin/chromium"
# the API pages the view's panels read; after `make demo` none of them may answer "empty"
API_PAGES = (
    "/finops/api/overview",
    "/finops/api/cost?dim=provider",
    "/finops/api/cost?dim=team",
    "/finops/api/showback",
    "/finops/api/anomalies",
    "/finops/api/policy-actions",
    "/finops/api/tag-compliance",
    "/finops/api/gpu/price-performance",
    "/finops/api/gpu/cheapest",
)


def api_server_env(
    base: dict[str, str],
    airflow_home: Path,
    finops_home: Path,
    url: str,
    user: str,
    password: str,
    role: str = "viewer",
) -> dict[str, str]:
    """Environment for an api-server on `airflow_home`'s SQLite metadata DB serving
    `finops_home`'s warehouse, SimpleAuthManager with `user` / `password` only (a passwords
    file in `airflow_home`) and a JWT secret of its own."""
    passwords = airflow_home / "ui-passwords.json"
    passwords.write_text(json.dumps({user: password}))
    passwords.chmod(0o600)
    env = dict(base)
    env.update(
        {
            "AIRFLOW_HOME": str(airflow_home),
            "FINOPS_HOME": str(finops_home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(airflow_home / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{user}:{role}",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__API__BASE_URL": url,
        }
    )
    env.pop("FINOPS_UI_AUTHORIZATION", None)
    return env


@contextlib.contextmanager
def api_server(
    env: dict[str, str], host: str, port: int, log_path: Path, timeout_s: float = 120
) -> Iterator[str]:
    """`airflow api-server` in its own process group until the block ends; yields its URL once
    it answers. Fails with the log's tail when it exits or does not answer in time."""
    url = f"http://{host}:{port}"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "airflow", "api-server", "--host", host, "--port", str(port), "-w", "1"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/api/v2/version", timeout=2):
                        break
                except OSError as e:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"airflow api-server did not start on {url}:\n{log_path.read_text()[-3000:]}"
                        ) from e
                    time.sleep(0.5)
            yield url
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def login(url: str, user: str, password: str) -> str:
    """A JWT from the auth manager's token endpoint (what the login page does)."""
    req = urllib.request.Request(
        f"{url}/auth/token",
        data=json.dumps({"username": user, "password": password}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return str(json.loads(r.read())["access_token"])


def _get(url: str, token: str | None, accept: str = "application/json") -> tuple[int, bytes]:
    headers = {"Accept": accept, **({"Authorization": f"Bearer {token}"} if token else {})}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def check_pages(url: str, user: str, password: str) -> tuple[list[str], list[str]]:
    """Fetch the view and its API pages as `user`: (lines to print, problems). A page must
    answer 200 and, where the demo filled it, hold rows; without a login it must refuse."""
    lines, problems = [], []
    status, _ = _get(f"{url}/finops/api/showback", None)
    if status != 401:
        problems.append(f"/finops/api/showback without a login answered {status}, not 401")
    token = login(url, user, password)
    status, body = _get(f"{url}/finops/", token, accept="text/html")
    lines.append(f"  GET /finops/ -> {status} ({len(body):,} bytes of HTML)")
    if status != 200 or b"<html" not in body.lower():
        problems.append(f"/finops/ answered {status}")
    for path in API_PAGES:
        status, body = _get(url + path, token)
        doc: Any = json.loads(body) if status == 200 else {}
        items = doc.get("items") if isinstance(doc, dict) else None
        lines.append(
            f"  GET {path} -> {status}" + (f", {len(items)} items" if isinstance(items, list) else "")
        )
        if status != 200 or (isinstance(doc, dict) and doc.get("empty") is True):
            problems.append(
                f"{path} answered {status}" + (f" empty: {doc.get('reason')}" if status == 200 else "")
            )
    return lines, problems


def screenshot(url: str, user: str, password: str, path: Path) -> None:
    """Log in through Airflow's login page in headless Chromium (Debian's, driven by
    Playwright) and capture the FinOps view inside the Airflow UI."""
    from playwright.sync_api import sync_playwright

    args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/finops/")
            page.wait_for_selector("input[name=username]", timeout=60_000)
            page.fill("input[name=username]", user)
            page.fill("input[name=password]", password)
            page.click("button[type=submit]")
            page.wait_for_url("**/finops/", timeout=60_000)
            page.wait_for_selector("body[data-ready=true]", timeout=60_000)
            page.screenshot(path=str(path), full_page=True)
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="make ui", description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default=os.environ.get("FINOPS_UI_HOST", "127.0.0.1"))
    ap.add_argument("--port", type=int, default=int(os.environ.get("FINOPS_UI_PORT", "8080")))
    ap.add_argument("--check", action="store_true", help="start, fetch the pages, stop")
    ap.add_argument("--screenshot", type=Path, help="with --check: a PNG of the view (needs chromium)")
    args = ap.parse_args(argv)

    from finops.demo.config import demo_config_path
    from finops.demo.run import prepare_airflow_env
    from finops.paths import finops_home, warehouse_path

    home = finops_home()
    if not warehouse_path().exists():
        print(
            f"error: no warehouse at {warehouse_path()}: run `make demo` first (same FINOPS_HOME)",
            file=sys.stderr,
        )
        return 2
    if demo_config_path(home).exists():
        os.environ.setdefault("FINOPS_CONFIG", str(demo_config_path(home)))
    af = prepare_airflow_env(home)
    url = f"http://{args.host}:{args.port}"
    env = api_server_env(dict(os.environ), af, home, url, DEMO_UI_USER, DEMO_UI_PASSWORD)
    log_path = af / "api-server.log"
    print(f"starting airflow api-server on {url} (FINOPS_HOME={home}; log {log_path})...", flush=True)
    try:
        with api_server(env, args.host, args.port, log_path):
            print(
                f"\n  FinOps view:  {url}/finops/   (inside the Airflow UI: {url}/plugin/finops)\n"
                f"  login:        {DEMO_UI_USER} / {DEMO_UI_PASSWORD}\n",
                flush=True,
            )
            if not args.check:
                print("Ctrl-C stops it.", flush=True)
                with contextlib.suppress(KeyboardInterrupt):
                    while True:
                        time.sleep(3600)
                return 0
            lines, problems = check_pages(url, DEMO_UI_USER, DEMO_UI_PASSWORD)
            print("\n".join(lines))
            if args.screenshot:
                screenshot(url, DEMO_UI_USER, DEMO_UI_PASSWORD, args.screenshot)
                print(f"  screenshot: {args.screenshot}")
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for p in problems:
        print(f"ui check FAILED: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
