#!/usr/bin/env bash
# The FinOps Foundation focus-validator needs Python >= 3.12 and pyarrow<20 beside its
# numpy 1.26, so it lives in its own venv (.venv-focus), apart from Airflow's.
set -eu
V=.venv-focus
if [ -x $V/bin/focus-validator ]; then exit 0; fi
PY=""
# pyenv shims exist for versions that are installed but not selected: try them, then pyenv's own dirs.
for p in python3.12 python3.13 $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 2>/dev/null); do
  if "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  echo "ERROR: focus-validator needs Python >= 3.12 (python3.12 not found). Install it (apt-get install python3.12 / pyenv)."; exit 1
fi
$PY -m venv $V
$V/bin/python -m pip install -q --upgrade pip uv 2>&1 | grep -v "is ignored" || true
$V/bin/uv pip install --python $V/bin/python -q "focus-validator==2.2.1" "pyarrow<20"
echo "focus-validator installed in $V"
