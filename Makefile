# Two set-up commands work on a fresh machine: `make demo` and `make test`.
# Each creates .venv when it is missing and installs what it needs into it.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: demo test lab lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamp files re-run the install whenever pyproject.toml changes.
$(VENV)/.installed-lab: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[lab]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[lab,test]'
	touch $@

demo: $(VENV)/.installed-lab
	$(BIN)/python -m zeroshot_kernel.demo

lab: $(VENV)/.installed-lab
	$(BIN)/jupyter lab --notebook-dir=notebooks

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n auto $(PYTEST_ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check zeroshot_kernel widgets tests
	$(BIN)/mypy

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $@

bench: $(VENV)/.installed-bench
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
