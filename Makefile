# The README's commands. Each one sets the project up first (a virtualenv at .venv with the
# locked dependencies), so a fresh clone needs nothing but python3.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup browser run test ui bench lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml uv.lock
	@$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet --disable-pip-version-check uv
	$(PYTHON) -m uv sync --frozen --python "$$(command -v $(PYTHON))"
	@touch $@

run: setup  ## materialise every asset on the embedded default (recorded sources)
	$(BIN)/bench run

# The site's browser tests drive Debian's Chromium (never a downloaded browser).
browser:
	@[ -x /usr/bin/chromium ] || { \
	  echo "Installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; }

test: setup browser  ## the whole test suite
	$(BIN)/python -m pytest

ui: setup  ## the Dagster UI on http://127.0.0.1:3000
	$(BIN)/bench ui

bench: setup  ## benchmarks, printed as ratios against a baseline measured in the same run
	$(BIN)/python -m benchmarks

lint: setup
	$(BIN)/ruff check bench_pipeline tests benchmarks

clean:
	rm -rf build warehouse/*.duckdb warehouse/*.duckdb.wal
