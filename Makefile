# Two set-up commands work on a fresh machine: `make demo` and `make test`.
# Each creates .venv when it is missing and installs what it needs into it.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: demo test lab lint bench clean browser

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

# The browser test drives Debian's chromium through playwright (never a downloaded browser).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else \
	    echo "make test: chromium is missing (sudo apt-get install chromium); the browser test will say so"; \
	  fi; }

test: $(VENV)/.installed-test browser
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
