"""The production image installs requirements-runtime.lock only: the runtime closure of
pyproject.toml, with no test or lint tool in it, pinned to what the test suite ran against.

No Docker engine here, so the file the Dockerfile installs is what is checked."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
RUNTIME_LOCK = REPO / "requirements-runtime.lock"
DEV_LOCK = REPO / "requirements.lock"
# Test, lint and emulator tools: none may reach a production image, not even transitively.
TEST_TOOLS = {
    "pytest",
    "pytest-xdist",
    "pytest-timeout",
    "pytest-httpserver",
    "moto",
    "aiosmtpd",
    "hypothesis",
    "ruff",
    "playwright",
    "bqemulator",
    "gcp-storage-emulator",
    "coverage",
    "mypy",
    "responses",
    "testcontainers",
}
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)")


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        if m := _PIN.match(line):
            pins[canonicalize_name(m[1])] = m[2]
    return pins


def _via(path: Path) -> dict[str, set[str]]:
    """Package -> what pulled it in, from uv's `# via` annotations."""
    via: dict[str, set[str]] = {}
    current = None
    for line in path.read_text().splitlines():
        if m := _PIN.match(line):
            current = canonicalize_name(m[1])
            via[current] = set()
        elif current and line.startswith("    #"):
            who = line.strip("# ").removeprefix("via").strip()
            if who:
                via[current].add(who)
    return via


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _dockerfile() -> str:
    return (REPO / "Dockerfile").read_text()


def test_the_image_installs_the_runtime_lock_only():
    text = _dockerfile()
    installs = re.findall(r"pip install[^\n&]*?-r (\S+)", text)
    assert installs == ["/opt/finops/requirements-runtime.lock"], installs
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "requirements.lock" not in code.replace("requirements-runtime.lock", "")
    # The package itself goes in without resolving again (its dependencies are the lock's).
    assert "pip install --no-cache-dir --no-deps /opt/finops" in text


def test_no_test_tool_in_the_runtime_lock():
    # The names are spelled as the locks spell them: the dev lock does carry these tools.
    assert {"pytest", "moto", "playwright", "ruff", "bqemulator"} <= set(_pins(DEV_LOCK))
    pins = _pins(RUNTIME_LOCK)
    assert not TEST_TOOLS & set(pins), sorted(TEST_TOOLS & set(pins))
    # Every dev-extra package found here is there because a runtime package needs it.
    dev = {canonicalize_name(Requirement(r).name) for r in _project()["optional-dependencies"]["dev"]}
    via = _via(RUNTIME_LOCK)
    for name in dev & set(pins):
        assert via[name] - {"airflow-finops (pyproject.toml)", "-c requirements.lock"}, name


def test_runtime_lock_covers_core_celery_and_fab_within_their_specifiers():
    project = _project()
    pins = _pins(RUNTIME_LOCK)
    extras = project["optional-dependencies"]
    for spec in project["dependencies"] + extras["celery"] + extras["fab"]:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        assert name in pins, (
            f"{req.name} is a runtime dependency but not in requirements-runtime.lock: make lock"
        )
        assert req.specifier.contains(pins[name], prereleases=True), f"{req.name}=={pins[name]} breaks {spec}"


def test_runtime_pins_are_the_versions_the_tests_ran_against():
    dev = _pins(DEV_LOCK)
    for name, version in _pins(RUNTIME_LOCK).items():
        assert dev.get(name) == version, f"{name}: runtime {version}, dev lock {dev.get(name)}: make lock"


def test_airflow_pin_matches_the_base_image():
    m = re.search(r"^FROM apache/airflow:(\d+\.\d+\.\d+)-python(\d+\.\d+)", _dockerfile(), re.M)
    assert m, "Dockerfile does not start FROM an official apache/airflow image"
    pins = _pins(RUNTIME_LOCK)
    assert pins["apache-airflow"] == m[1] and pins["apache-airflow-core"] == m[1]


def test_declared_dependencies_are_the_used_ones():
    """pandas is not imported by the package (GX brings it where GX needs it); psycopg2 comes from
    the postgres provider, the package talks psycopg 3."""
    core = {canonicalize_name(Requirement(r).name) for r in _project()["dependencies"]}
    assert "pandas" not in core and "psycopg2-binary" not in core
    # A line scan, not ast: parsing the whole package costs seconds on a loaded machine.
    direct = re.compile(r"^\s*(?:import|from)\s+(pandas|psycopg2)\b", re.M)
    used = {
        f"{p.relative_to(REPO)}: {m[1]}"
        for p in (REPO / "plugins" / "finops").rglob("*.py")
        for m in direct.finditer(p.read_text())
    }
    assert not used, sorted(used)
