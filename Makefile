# Two set-up commands work on a fresh machine: `make demo` and `make test`.
# Each creates .venv when it is missing and installs what it needs into it.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: demo test lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamp files re-run the install whenever pyproject.toml changes.
$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed-base
	$(BIN)/python -m zeroshot_kernel.demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n auto $(PYTEST_ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check zeroshot_kernel widgets tests
	$(BIN)/mypy

bench: $(VENV)/.installed-test
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
