# Two commands: `make demo` and `make test`. Only Python 3.11+ is needed up front.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck package-check unit services-start services-stop bench clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is required") if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q uv

# uv (from PyPI, into the venv) installs in parallel: a fresh clone's dev install takes
# about 33 s with it against 75 s with pip; the bytecode is compiled as pip does
UV_INSTALL := $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python

$(STAMP): $(BIN)/python pyproject.toml
	$(UV_INSTALL) -e .
	touch $@

# everything the suite needs in one install (the base package with it)
$(DEV_STAMP): $(BIN)/python pyproject.toml
	$(UV_INSTALL) -e '.[dev,embeddings]'
	touch $@ $(STAMP)

## make demo: install into .venv and run the offline demo (leaves .venv/bin/memoir usable, and the demo home it prints)
demo: $(STAMP)
	$(BIN)/memoir demo --keep

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/lint-imports

# two workers: beside the package check, 69 s -> 51 s for both (docs/benchmarks.md)
typecheck: $(DEV_STAMP)
	$(BIN)/mypy -n 2 src/memoir

## make package-check: build the sdist and the wheel (python -m build) into a temp dir, check
## the wheel holds every package file, install it with its dependencies (no extras) into a
## fresh venv and run `memoir demo` from it in a temp HOME: what a user of the package gets
package-check: $(DEV_STAMP)
	scripts/package-check.sh $(BIN)/python

## make test: lint, typecheck, start PostgreSQL + Redis on 127.0.0.1 (installing them and
## Debian's chromium from apt when missing), run the whole suite — the browser suite must
## run, not skip (MEMOIR_TEST_REQUIRE_BROWSER=1) — stop them; and the package check (run
## beside the typecheck: each keeps one core busy). src/ is compiled first: every process
## the suite starts reads that bytecode, even where PYTHONDONTWRITEBYTECODE keeps it from
## writing its own. pytest may write its cache of the test modules' assertion rewriting
## (its workers each spend ~13 s of a core on it): a second run reads it
test: $(DEV_STAMP) lint
	@$(MAKE) --no-print-directory -j2 --output-sync=target typecheck package-check
	@$(BIN)/python -m compileall -q src
	@set -e; \
	eval "$$(scripts/test-services.sh start)"; \
	trap 'scripts/test-services.sh stop' EXIT; \
	MEMOIR_TEST_REQUIRE_BROWSER=1 env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n 2 -q tests

unit: $(DEV_STAMP)
	$(BIN)/python -m pytest -n 2 -q tests

## make bench: the LoCoMo retrieval benchmark (the others: see docs/benchmarks.md)
bench: $(STAMP)
	$(BIN)/python bench/locomo_bench.py
	$(BIN)/python bench/coding_bench.py

clean:
	rm -rf $(VENV) .tmp build dist src/*.egg-info
