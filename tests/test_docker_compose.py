"""docker-compose.yaml: the Airflow 3 CeleryExecutor topology, everything it refers to exists in
the repo, and a real Compose refuses to render it without each secret (no Docker engine needed)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
TOPOLOGY = {
    "postgres",
    "redis",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
    "airflow-worker",
    "airflow-init",
}


def _compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yaml").read_text())


def test_services_and_commands():
    c = _compose()
    assert TOPOLOGY <= set(c["services"]), set(c["services"])
    cmds = {name: svc.get("command") for name, svc in c["services"].items()}
    assert cmds["airflow-apiserver"] == "api-server"
    assert cmds["airflow-scheduler"] == "scheduler"
    assert cmds["airflow-dag-processor"] == "dag-processor"
    assert cmds["airflow-triggerer"] == "triggerer"
    assert cmds["airflow-worker"] == "celery worker"


def test_celery_executor_wiring():
    c = _compose()
    env = c["services"]["airflow-worker"]["environment"]
    assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert env["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://")
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql")
    # Every Airflow service is built from this repo's Dockerfile with the package installed.
    for name in TOPOLOGY - {"postgres", "redis"}:
        assert c["services"][name]["build"] == ".", name


def test_referenced_paths_exist():
    c = _compose()
    assert (REPO / "Dockerfile").exists()
    for name, svc in c["services"].items():
        for vol in svc.get("volumes", []):
            host = vol.split(":")[0]
            if host.startswith("./") and host != "./logs":  # logs/ is created at run time
                assert (REPO / host).exists(), f"{name}: {host} missing"
    text = (REPO / "Dockerfile").read_text()
    for line in text.splitlines():
        if line.startswith("COPY"):
            for part in line.split()[1:-1]:
                if not part.startswith("--"):
                    assert (REPO / part).exists(), f"Dockerfile COPY source {part} missing"


def test_no_secrets_in_compose_beyond_local_defaults():
    text = (REPO / "docker-compose.yaml").read_text()
    assert "AKIA" not in text and "xoxb-" not in text and "hooks.slack.com" not in text


def test_pools_created_match_the_pools_the_dags_use():
    c = _compose()
    env = c["x-airflow-common"]["environment"]
    init = "\n".join(c["services"]["airflow-init"]["command"])
    for var, pool in env.items():
        if var.startswith(("FINOPS_BILLING_POOL", "FINOPS_PRICES_POOL")):
            assert f"airflow pools set {pool} " in init, f"{var}={pool} is never created"


# Secrets every Airflow component needs: compose must stop with a message when one is missing
# (`${VAR:?message}`), never start with an empty or well-known default.
REQUIRED_SECRETS = {
    "AIRFLOW__CORE__FERNET_KEY": "AIRFLOW_FERNET_KEY",
    "AIRFLOW__API_AUTH__JWT_SECRET": "AIRFLOW_JWT_SECRET",
}
_REQUIRED = re.compile(r"^\$\{(?P<var>[A-Z0-9_]+):\?(?P<msg>[^}]+)\}$")
_REFERENCE = re.compile(r"(?<!\$)\$\{(?P<var>[A-Z0-9_]+)(?P<op>:?[-?+])?(?P<arg>[^}]*)\}")


def _airflow_services(c: dict) -> dict:
    return {n: s for n, s in c["services"].items() if s.get("build") == "."}


def test_secrets_are_required_in_every_airflow_service():
    c = _compose()
    for name, svc in _airflow_services(c).items():
        env = svc["environment"]
        for key, var in REQUIRED_SECRETS.items():
            m = _REQUIRED.match(str(env.get(key, "")))
            assert m and m["var"] == var, f"{name}: {key}={env.get(key)!r} is not ${{{var}:?...}}"
            assert "docs/deploy.md" in m["msg"], f"{name}: {key}: the message should say where to look"


def test_no_secret_has_a_default():
    """A `${VAR:-x}` or `${VAR-x}` on a key, secret, password or token would start the stack with
    a value anyone can read here. `$${VAR}` is the shell's, not compose's."""
    text = (REPO / "docker-compose.yaml").read_text()
    assert "change-me" not in text
    for m in _REFERENCE.finditer(text):
        if any(w in m["var"] for w in ("KEY", "SECRET", "PASSWORD", "TOKEN")):
            assert m["op"] == ":?", f"{m[0]}: a secret must be required, not defaulted"


def test_auth_manager_is_fab_with_a_required_admin_password():
    c = _compose()
    for name, svc in _airflow_services(c).items():
        path = svc["environment"]["AIRFLOW__CORE__AUTH_MANAGER"]
        assert path == "airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager", name
    # The class path names a class of the installed (locked) FAB provider; read, not imported
    # (importing Flask-AppBuilder costs seconds and proves nothing more about the path).
    module, _, cls = path.rpartition(".")
    dist = importlib.metadata.distribution("apache-airflow-providers-fab")  # the `fab` extra
    source = Path(str(dist.locate_file(module.replace(".", "/") + ".py")))
    tree = ast.parse(source.read_text())
    assert cls in {n.name for n in tree.body if isinstance(n, ast.ClassDef)}, f"{module} has no {cls}"
    init = c["services"]["airflow-init"]
    m = _REQUIRED.match(init["environment"]["_AIRFLOW_WWW_USER_PASSWORD"])
    assert m and m["var"] == "AIRFLOW_ADMIN_PASSWORD"
    script = "\n".join(init["command"])
    assert "airflow users create --role Admin" in script
    assert script.index("airflow db migrate") < script.index("airflow users create")


# A real Compose renders the file: the `docker compose` plugin where the Docker CLI has it, else
# Debian's docker-compose (`make test` installs it; scripts/ensure_compose.sh). Neither needs a
# Docker engine to interpolate and validate a file.
SECRET_VARS = ("AIRFLOW_FERNET_KEY", "AIRFLOW_JWT_SECRET", "AIRFLOW_ADMIN_PASSWORD")


def _compose_cmd() -> list[str]:
    import shutil
    import subprocess

    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return ["docker", "compose"]
    exe = shutil.which("docker-compose")
    assert exe, "Docker Compose is missing: run `make compose` (scripts/ensure_compose.sh)"
    return [exe]


def _render(tmp_path: Path, env: dict[str, str]):
    """`compose config` in a clean environment with an empty env file, so neither this
    machine's variables nor a developer's .env beside the file can fill a secret in."""
    import os
    import subprocess

    empty = tmp_path / "empty.env"
    empty.write_text("")
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return subprocess.run(
        [*_compose_cmd(), "--env-file", str(empty), "-f", str(REPO / "docker-compose.yaml"), "config"],
        capture_output=True,
        text=True,
        env={**base, **env},
        cwd=tmp_path,
        timeout=120,
        check=False,
    )


def test_compose_refuses_to_render_without_each_secret(tmp_path):
    full = {v: f"value-of-{v.lower()}" for v in SECRET_VARS}
    for missing in SECRET_VARS:
        res = _render(tmp_path, {k: v for k, v in full.items() if k != missing})
        assert res.returncode != 0, f"compose rendered without {missing}"
        assert f"set {missing}, see docs/deploy.md" in res.stderr, res.stderr[-2000:]


def test_compose_renders_with_the_secrets_set(tmp_path):
    full = {v: f"value-of-{v.lower()}" for v in SECRET_VARS}
    res = _render(tmp_path, full)
    assert res.returncode == 0, res.stderr[-2000:]
    rendered = yaml.safe_load(res.stdout)
    assert TOPOLOGY <= set(rendered["services"])
    for name, svc in rendered["services"].items():
        if name in ("postgres", "redis"):
            continue
        env = svc["environment"]
        assert env["AIRFLOW__CORE__FERNET_KEY"] == full["AIRFLOW_FERNET_KEY"], name
        assert env["AIRFLOW__API_AUTH__JWT_SECRET"] == full["AIRFLOW_JWT_SECRET"], name
    init_env = rendered["services"]["airflow-init"]["environment"]
    assert init_env["_AIRFLOW_WWW_USER_PASSWORD"] == full["AIRFLOW_ADMIN_PASSWORD"]
