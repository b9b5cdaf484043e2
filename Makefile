# The README's commands. Each one sets the project up first (a virtualenv at .venv with the
# locked dependencies), so a fresh clone needs nothing but python3.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup browser services run test test-fast ui bench lint clean

setup: $(STAMP)

# Dependencies are installed with their bytecode compiled (about 35 s once): where Python may
# not write bytecode (PYTHONDONTWRITEBYTECODE, read-only installs) every process would
# otherwise compile Dagster, polars and the rest from source, twice the import time.
$(STAMP): pyproject.toml uv.lock
	@$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet --disable-pip-version-check uv
	$(PYTHON) -m uv sync --frozen --compile-bytecode --python "$$(command -v $(PYTHON))"
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

PORT ?= 3000
ui: setup browser  ## the Dagster UI on http://127.0.0.1:$(PORT) (`make ui PORT=3001` for another port)
	$(BIN)/bench ui --port $(PORT)

bench: setup browser  ## benchmarks, printed as ratios against a baseline measured in the same run
	$(BIN)/python -m benchmarks

lint: setup  ## formatting, lint and docstrings, types, import rules
	$(BIN)/ruff format --check bench_pipeline tests benchmarks
	$(BIN)/ruff check bench_pipeline tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

clean:
	rm -rf build warehouse/*.duckdb warehouse/*.duckdb.wal
