# The README's commands. Each one sets the project up first (a virtualenv at .venv with the
# locked dependencies), so a fresh clone needs nothing but python3.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The scale-out extra (`pip install bench-pipeline[scale]`): tests/test_scale_out.py runs it.
EXTRAS := --extra scale

.PHONY: setup browser services run test test-fast test-313 test-py ui bench lint clean

setup: $(STAMP)

# Dependencies are installed with their bytecode compiled (about 35 s once): where Python may
# not write bytecode (PYTHONDONTWRITEBYTECODE, read-only installs) every process would
# otherwise compile Dagster, polars and the rest from source, twice the import time.
$(STAMP): pyproject.toml uv.lock
	@$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet --disable-pip-version-check uv
	$(PYTHON) -m uv sync --frozen --compile-bytecode $(EXTRAS) --python "$$(command -v $(PYTHON))"
	@touch $@

run: setup browser  ## materialise every asset on the embedded default (recorded sources)
	$(BIN)/bench run

# Grading opens HTML answers in Debian's Chromium, and so do the site's browser tests (never a
# downloaded browser): `make run`, `make ui`, `make bench` and `make test` install it when missing.
browser:
	@[ -x /usr/bin/chromium ] || { \
	  echo "Installing Debian's chromium (grading and the browser tests)"; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; }

# The scale-out tests (tests/test_scale_out.py) start their own throwaway PostgreSQL and Redis
# servers from Debian's binaries; the key-leak test makes a throwaway CA with openssl; the
# grading jail (grading/sandbox.py) runs answer code under bubblewrap. Install the packages
# when missing, without starting the services they ship: a policy-rc.d that refuses every
# start is in place during the install.
services:
	@missing=""; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v openssl >/dev/null 2>&1 || missing="$$missing openssl"; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	[ -z "$$missing" ] || { \
	  echo "Installing Debian's$$missing for the scale-out and grading-jail tests"; \
	  guard=""; \
	  if [ ! -e /usr/sbin/policy-rc.d ]; then \
	    guard=/usr/sbin/policy-rc.d; printf '#!/bin/sh\nexit 101\n' > $$guard; chmod +x $$guard; \
	  fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $$missing; status=$$?; \
	  [ -z "$$guard" ] || rm -f $$guard; \
	  exit $$status; }

test: setup browser services  ## the whole test suite
	$(BIN)/python -m pytest

# Every layer but integration (unit, store, assets: see tests/conftest.py): no browser, no
# servers, no `bench run`, so it needs nothing beyond the virtualenv. Goal: under 3 minutes.
test-fast: setup  ## the fast loop
	$(BIN)/python -m pytest -m "not integration"

# The fast suite on another Python (supported: 3.11 to 3.13), in a virtualenv of its own
# (.venv-3.13) built from the same lock. `.ci/find-python` finds the interpreter (PY313=/path
# chooses one); without one the target says so and succeeds. `make test-py PYVER=3.12` for 3.12.
PYVER ?= 3.13
test-313:  ## the fast loop on Python 3.13, when the machine has one
	@$(MAKE) --no-print-directory test-py PYVER=3.13

test-py:
	@interpreter=$$(.ci/find-python $(PYVER)) || { \
	  echo "test-py: SKIPPED, no Python $(PYVER) on this machine (set PY$(subst .,,$(PYVER))=/path/to/python$(PYVER))"; \
	  exit 0; }; \
	echo "test-py: the fast suite on Python $$($$interpreter -c 'import platform; print(platform.python_version())') ($$interpreter) in .venv-$(PYVER)"; \
	$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet --disable-pip-version-check uv; \
	UV_PROJECT_ENVIRONMENT=.venv-$(PYVER) $(PYTHON) -m uv sync --frozen --quiet $(EXTRAS) --python "$$interpreter" && \
	.venv-$(PYVER)/bin/python -m pytest -m "not integration"

PORT ?= 3000
ui: setup browser  ## the Dagster UI on http://127.0.0.1:$(PORT) (`make ui PORT=3001` for another port)
	$(BIN)/bench ui --port $(PORT)

bench: setup browser  ## benchmarks, printed as ratios against a baseline measured in the same run
	$(BIN)/python -m benchmarks

# `dg check defs` (dagster-dg-cli, a dev dependency in the lock) loads the Definitions as
# `[tool.dg]` in pyproject.toml names them, and fails on any it cannot load or that Dagster refuses.
lint: setup  ## formatting, lint and docstrings, types, import rules, the Definitions load
	$(BIN)/ruff format --check bench_pipeline tests benchmarks
	$(BIN)/ruff check bench_pipeline tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/dg check defs

clean:
	rm -rf build warehouse/*.duckdb warehouse/*.duckdb.wal
