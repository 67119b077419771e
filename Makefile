# Two commands do all the set-up on a fresh machine (Python 3.11+ and the package
# registries only): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test lint typecheck unit install clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "sage-tod needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[nli,bench,dev]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

## Install everything and evaluate the embedded demo dialogues.
demo: $(STAMP)
	$(BIN)/sage-tod demo

## Install everything; lint, type-check and run the test suite.
test: $(STAMP) lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check src tests

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
