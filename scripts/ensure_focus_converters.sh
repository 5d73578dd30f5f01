#!/usr/bin/env bash
# The FinOps Foundation focus-converter (PyPI focus-converter 1.0.0) for the differential test
# (tests/differential/). Its own venv: it pins polars 0.20 / pandas / an old focus-validator
# that clash with Airflow's packages. multimethod<2: pandera 0.17 (its dependency) imports
# multimethod.overload, which multimethod 2 removed.
set -eu
V=.venv-focus-converters
if [ -x $V/bin/python ] && $V/bin/python -c "import focus_converter.converter" >/dev/null 2>&1; then exit 0; fi
PY=""
for p in python3.11 python3.12 python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys; sys.exit(not (3, 9) <= sys.version_info < (3, 13))' >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  echo "ERROR: focus-converter needs Python 3.9-3.12 (python3.11 not found). Install it (apt-get install python3.11 / pyenv)."; exit 1
fi
rm -rf $V
$PY -m venv $V
$V/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "is ignored" || true
$V/bin/python -m pip install -q "focus-converter==1.0.0" "multimethod<2" 2>&1 | grep -v "is ignored" || true
$V/bin/python -c "import focus_converter.converter" || { echo "ERROR: focus-converter did not install in $V"; exit 1; }
echo "focus-converter installed in $V"
