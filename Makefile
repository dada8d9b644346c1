# Two set-up commands work on a fresh machine: `make demo` and `make test`.
# Each creates .venv when it is missing and installs what it needs into it.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: demo test lab lint bench clean system-packages sandbox-package

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamp files re-run the install whenever pyproject.toml changes.
$(VENV)/.installed-lab: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[lab,tasks]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[lab,tasks,test]'
	touch $@

demo: $(VENV)/.installed-lab sandbox-package
	$(BIN)/python -m zeroshot_kernel.demo

lab: $(VENV)/.installed-lab
	$(BIN)/jupyter lab --notebook-dir=notebooks

# System packages used for real: bubblewrap (the box model-written code runs in; the demo
# runs its experiments in it too), Debian's chromium (the browser test drives it through
# playwright, never a downloaded browser) and the PostgreSQL server (the ledger tests start one).
SANDBOX_PACKAGE_MISSING = $(if $(wildcard /usr/bin/bwrap),,bubblewrap)
SYSTEM_PACKAGES_MISSING = $(strip $(SANDBOX_PACKAGE_MISSING) \
  $(if $(wildcard /usr/bin/chromium),,chromium) \
  $(if $(wildcard /usr/lib/postgresql/*/bin/initdb),,postgresql))

define install_packages
	@if [ -n "$(1)" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1); \
	  else \
	    echo "make: missing $(1) (sudo apt-get install $(1)); what needs it will say so"; \
	  fi; \
	fi
endef

system-packages:
	$(call install_packages,$(SYSTEM_PACKAGES_MISSING))

sandbox-package:
	$(call install_packages,$(SANDBOX_PACKAGE_MISSING))

test: $(VENV)/.installed-test system-packages
	$(BIN)/python -m pytest -n auto $(PYTEST_ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check zeroshot_kernel widgets tests bench
	$(BIN)/ruff format --check zeroshot_kernel widgets tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,bench,tasks]'
	touch $@

bench: $(VENV)/.installed-bench
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
