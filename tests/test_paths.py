"""finops.paths: relative paths (policies_dir, allocation rules, bench bootstrap, the default
config) resolve against the project holding include/, from a checkout and when installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from finops.paths import REPO_ROOT

_PROBE = """
import json
from finops import paths
from finops.allocation.settings import allocation_rules
from finops.policies.tasks import policies_dir
print(json.dumps({"file": paths.__file__, "root": str(paths.REPO_ROOT), "config": str(paths.config_path()),
                  "policies": str(policies_dir()), "include": str(paths.include_dir()),
                  "rules": len(allocation_rules({}).rules)}))
"""


def test_checkout_is_the_root():
    assert (REPO_ROOT / "include" / "config" / "finops.yaml").is_file()
    assert (REPO_ROOT / "dags").is_dir()


def test_installed_package_resolves_include_under_airflow_home(tmp_path):
    """The Docker image pip-installs the package (site-packages/finops) and mounts include/ and
    dags/ into AIRFLOW_HOME. Before, REPO_ROOT was two levels above the package
    (.../lib/python3.11): finops_policy_* failed on a missing policies folder and showback
    silently ran with no allocation rules."""
    site = tmp_path / "site-packages"
    shutil.copytree(
        REPO_ROOT / "plugins" / "finops", site / "finops", ignore=shutil.ignore_patterns("__pycache__")
    )
    home = tmp_path / "airflow"
    shutil.copytree(REPO_ROOT / "include", home / "include")
    env = {k: v for k, v in os.environ.items() if k not in ("FINOPS_CONFIG", "PYTHONPATH")}
    env.update(PYTHONPATH=str(site), AIRFLOW_HOME=str(home), FINOPS_HOME=str(tmp_path / "finops_home"))
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["file"] == str(site / "finops" / "paths.py")  # the copy, not the checkout
    assert got["root"] == str(home)
    assert got["config"] == str(home / "include" / "config" / "finops.yaml")
    assert got["policies"] == str(home / "include" / "policies")
    assert got["include"] == str(home / "include")
    assert got["rules"] > 0  # include/config/allocation.yaml was found
