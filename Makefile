# Two commands on a fresh machine: `make demo` and `make test`. Everything they need is
# installed here (venv, locked packages, torch CPU wheel, Azurite, focus-validator venv).
SHELL := /bin/bash
PY ?= $(shell for p in python3.11 python3.12 python3.13 python3; do command -v $$p >/dev/null && $$p -c 'import sys; sys.exit(sys.version_info < (3,11))' && echo $$p && break; done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export FINOPS_HOME ?= $(CURDIR)/.finops
PYTEST_WORKERS ?= 2

.PHONY: setup demo ui test lint lock services focus-validator focus-converters node-tools chromium compose clean

setup: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	@test -n "$(PY)" || { echo "error: Python >= 3.11 not found (install python3.11)"; exit 1; }
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip uv 2>&1 | grep -v "is ignored" || true
	$(BIN)/uv pip install --python $(BIN)/python -q --compile-bytecode -r requirements.lock
	$(BIN)/uv pip install --python $(BIN)/python -q --no-deps -e .
	@# torch: the CPU wheel (pip's find-links has it on these machines); never a plain `torch`.
	$(BIN)/python -m pip install -q "torch==2.13.0" 2>&1 | grep -v "is ignored" || true
	@$(BIN)/python -c "import torch" 2>/dev/null || { echo "error: torch==2.13.0 did not install: this setup takes the CPU wheel from pip's local find-links; without one, pip would fetch a multi-GB CUDA build from PyPI (pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu needs the internet)"; exit 1; }
	@touch $(STAMP)

# requirements.lock: dev + test (make setup / make test). requirements-runtime.lock: what the
# Docker image installs, the runtime closure only (core + celery + fab), pinned to the dev
# lock's versions (-c) so what the tests ran against is what production runs.
lock:
	$(BIN)/uv pip compile pyproject.toml --extra dev --extra celery --extra fab -q -o requirements.lock
	$(BIN)/uv pip compile pyproject.toml --extra celery --extra fab -c requirements.lock -q -o requirements-runtime.lock

services:
	@bash scripts/ensure_services.sh

focus-validator:
	@bash scripts/ensure_focus_validator.sh

# The FinOps Foundation focus-converter, for the differential test (tests/differential/).
focus-converters:
	@bash scripts/ensure_focus_converters.sh

# Azurite (Azure Blob emulator) from the npm registry, pinned by package-lock.json.
node-tools: node_modules/.bin/azurite-blob
node_modules/.bin/azurite-blob: package.json package-lock.json
	@command -v npm >/dev/null || { echo "error: npm (Node.js >= 18) is required for Azurite: apt-get install nodejs npm"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

chromium:
	@bash scripts/ensure_chromium.sh

# Docker Compose (plugin or Debian's docker-compose) to render docker-compose.yaml in the tests.
compose:
	@bash scripts/ensure_compose.sh

demo: setup node-tools
	$(BIN)/finops demo

# The Airflow UI with the FinOps view on the demo's warehouse (run `make demo` first);
# UI_ARGS="--port 8081" or "--check --screenshot ui.png" (start, fetch every page, stop).
ui: setup
	$(BIN)/python -m finops.demo.ui $(UI_ARGS)

test: setup services focus-validator focus-converters node-tools chromium compose
	$(BIN)/ruff check plugins dags tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --durations=15 tests

lint: setup
	$(BIN)/ruff check plugins dags tests bench
	$(BIN)/ruff format --check plugins dags tests bench
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .venv-focus .venv-focus-converters .finops .finops-test node_modules
