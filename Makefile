# Two set-up commands work on a fresh machine: `make demo` and `make test`.
# Each creates .venv when it is missing and installs what it needs into it.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: demo test lab lint bench clean system-packages sandbox-package labextension lab-test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The JupyterLab / Notebook 7 extension (labextension/, TypeScript): `npm ci` from the
# committed package-lock.json, then `npm run build` (tsc and @jupyterlab/builder) writes the
# prebuilt extension into zeroshot_kernel/labextension, which the pip install below ships to
# share/jupyter/labextensions/zeroshot-workbench (pyproject.toml: wheel shared-data). The
# build needs node and npm only (the JupyterLab core metadata comes from npm), so it runs
# before pip; pip re-runs when the build is newer than the stamp.
LABEXT := labextension
LABEXT_BUILT := zeroshot_kernel/labextension/package.json
LABEXT_SOURCES := $(wildcard $(LABEXT)/src/*.ts $(LABEXT)/style/*) $(LABEXT)/package.json \
  $(LABEXT)/tsconfig.json $(LABEXT)/webpack.config.js $(LABEXT)/scripts/build-labextension.mjs

$(LABEXT)/node_modules/.installed: $(LABEXT)/package.json $(LABEXT)/package-lock.json
	@command -v npm >/dev/null || { echo "make: npm is missing (Node.js 20 or newer with npm builds the lab extension: sudo apt-get install nodejs npm)"; exit 1; }
	cd $(LABEXT) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(LABEXT_BUILT): $(LABEXT_SOURCES) $(LABEXT)/node_modules/.installed
	cd $(LABEXT) && npm run --silent build
	touch $@

labextension: $(LABEXT_BUILT)

# the front end's unit tests (vitest: the filter language, the runs table, the monitor's data)
lab-test: $(LABEXT)/node_modules/.installed
	cd $(LABEXT) && npm test

# Stamp files re-run the install whenever pyproject.toml (or the lab extension's build) changes.
$(VENV)/.installed-lab: pyproject.toml $(LABEXT_BUILT) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[lab,tasks]'
	touch $@

$(VENV)/.installed-test: pyproject.toml $(LABEXT_BUILT) | $(BIN)/python
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

test: $(VENV)/.installed-test system-packages lab-test
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
	rm -rf $(LABEXT)/node_modules $(LABEXT)/lib $(LABEXT)/tsconfig.tsbuildinfo zeroshot_kernel/labextension
