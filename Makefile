# Two commands for a fresh clone: `make demo` and `make test`. Each bootstraps what it needs
# (a .venv, the editable install, the model build) idempotently, then runs.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
MODELS := $(VENV)/.models-built
PACKAGES := agentcore policies memory evaluations accel
# strands-agents cannot share .venv (it needs mcp<2.2, the `mcp` extra mcp>=2.3): its tests run in their own venv.
STRANDS_VENV := .venv-strands
STRANDS_INSTALLED := $(STRANDS_VENV)/.installed
STRANDS_PYTHON := $(STRANDS_VENV)/bin/python

.PHONY: demo test lint typecheck unit install models services strands-env

demo: $(MODELS)
	$(BIN)/agentcore demo

test: lint typecheck unit

install: $(INSTALLED)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Re-install whenever pyproject.toml changes.
$(INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

# The tests under tests/gateway/integrations/strands/ run here (the main run does it through
# tests/gateway/integrations/test_strands_env.py); re-installed whenever pyproject.toml changes.
strands-env: $(STRANDS_INSTALLED)
$(STRANDS_INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(STRANDS_VENV)
	$(STRANDS_PYTHON) -m pip install --quiet -e ".[strands]" "pytest>=8" "hypothesis>=6"
	touch $@

# `agentcore models build` is idempotent and verifies hashes; the stamp only skips a process start.
models: $(MODELS)
$(MODELS): $(INSTALLED)
	$(BIN)/agentcore models build
	touch $@

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy cannot follow setuptools' package-dir mapping, so it checks a symlinked tree laid out as installed.
typecheck: $(INSTALLED) $(STRANDS_INSTALLED)
	rm -rf build/typecheck && mkdir -p build/typecheck/agentcore
	for entry in agentcore/*; do ln -s "$(CURDIR)/$$entry" build/typecheck/agentcore/; done
	for package in policies memory evaluations accel; do ln -s "$(CURDIR)/$$package" build/typecheck/agentcore/$$package; done
	cd build/typecheck && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml -p agentcore
	cd build/typecheck && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml \
		--python-executable $(CURDIR)/$(STRANDS_PYTHON) -m agentcore.integrations.strands  # against strands' own types

unit: $(MODELS) $(STRANDS_INSTALLED) services
	$(BIN)/python -m pytest -q

# Start the local PostgreSQL and Redis that integration tests use, when installed but not running.
services:
	@bash scripts/start-services.sh
