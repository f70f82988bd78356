# Everything a new machine needs: `make run` and `make test` create .venv themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO_DIR ?= .airwave-demo
PORT   ?= 4533
# Test processes: most tests wait on a server child, so more workers than the 2 cores pay off.
TEST_WORKERS ?= 4

.PHONY: run test test-durations lint docs screenshots bench container-check clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "Airwave needs Python 3.11 or newer (found $$($(PYTHON) --version))"; exit 1; }
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
		echo "python3-venv is missing; installing it with apt-get"; \
		if [ "$$(id -u)" = 0 ]; then apt-get install -y python3-venv; else sudo apt-get install -y python3-venv; fi && \
		rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

# Bytecode for Airwave's own modules (an editable install has none, and where
# PYTHONDONTWRITEBYTECODE is set, as on some CI machines, every process would compile them
# all again: a fifth of a server's start). Only what changed is compiled again.
PYC = $(BIN)/python -m compileall -q src

run: $(STAMP)
	@$(PYC)
	$(BIN)/airwave serve --demo --data-dir $(DEMO_DIR) --port $(PORT)

# --no-loadscope-reorder: the longest modules first (tests/conftest.py), not the most numerous
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

# Tests keep bytecode too (pytest's rewritten test modules and every server and command they
# start), whatever PYTHONDONTWRITEBYTECODE says; __pycache__ is ignored by git.
TEST_ENV := env -u PYTHONDONTWRITEBYTECODE

test: $(STAMP) lint
	@$(PYC)
	$(TEST_ENV) $(BIN)/python -m pytest $(PYTEST_PARALLEL) --durations=25

# the seconds each test takes, which orders the next runs (commit tests/durations.json)
test-durations: $(STAMP)
	@$(PYC)
	$(TEST_ENV) AIRWAVE_RECORD_DURATIONS=$(CURDIR)/tests/durations.json $(BIN)/python -m pytest $(PYTEST_PARALLEL) -q

lint: $(STAMP)
	$(BIN)/ruff format --check src tests bench
	$(BIN)/ruff check src tests bench
	$(BIN)/lint-imports --no-cache

docs: $(STAMP)
	$(BIN)/airwave docs --out docs/api.md

screenshots: $(STAMP)
	$(BIN)/python scripts/screenshots.py --out docs/screenshots

container-check:
	python3 scripts/container_check.py

bench: $(STAMP)
	$(BIN)/python bench/api_overhead.py

clean:
	rm -rf $(VENV) $(DEMO_DIR) .pytest_cache
