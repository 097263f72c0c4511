# Two commands set everything up on a fresh machine:
#   make demo   install memfold (no extras) and run the main job (offline, embedded index)
#   make test   install the dev extra and run the whole test suite (on every core, with coverage)
# (make lint: ruff, mypy and the import contracts; make docs: the documentation site, built strictly; CI runs both before the tests)
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
BASE := $(VENV)/.installed-base
DEV := $(VENV)/.installed-dev

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# what the demo needs: memfold and its own dependencies, no extra
$(BASE): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $(BASE)

# tests, lint and docs: every extra
$(DEV): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(DEV) $(BASE)

install: $(BASE)

demo: $(BASE)
	$(BIN)/memfold --root .memfold-demo demo

test: $(DEV)
	$(BIN)/python -m pytest -n 4 --dist loadgroup --cov=memfold --cov-report=term

lint: $(DEV)
	$(BIN)/ruff check src tests benchmarks docsgen
	$(BIN)/mypy
	PYTHONPATH=src $(BIN)/lint-imports --no-cache

docs: $(DEV)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

charts: $(DEV)
	$(BIN)/python benchmarks/report.py

.PHONY: install demo test lint docs charts
