PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo check test bench lint typecheck clean

$(BIN)/python:
	@echo "==> creating the virtual environment $(VENV) (first run only)"
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	@echo "==> installing turnmemory with the provider SDKs, the agent, the analysis and the test tools"
	@echo "    into $(VENV) (about a minute on the first run; later runs skip this step)"
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)
	@echo "==> installed"

demo: $(STAMP)
	@echo "==> the demo: one turn's TurnMemory, then each history strategy on real sessions"
	$(BIN)/python scripts/demo.py

bench: $(STAMP)
	$(BIN)/pip install --quiet -r benchmarks/requirements.txt
	$(BIN)/python benchmarks/perf.py
	$(BIN)/python benchmarks/formatter.py
	$(BIN)/python benchmarks/langchain_compare.py
	$(BIN)/python benchmarks/frameworks.py
	$(BIN)/python benchmarks/context_size.py
	$(BIN)/python benchmarks/startup.py

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts

typecheck: $(STAMP)
	$(BIN)/mypy

FAST_TESTS := tests/core tests/providers tests/testing tests/transcripts tests/llm
# the library's tests; the agent's, the analysis' and the integrations' start processes and terminals

check: $(STAMP)
	@echo "==> make check: ruff, mypy --strict and the library's tests (1-2 minutes on two idle cores)"
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 -q $(FAST_TESTS)

test: $(STAMP)
	@echo "==> make test: ruff, mypy --strict and the whole suite (about 10 minutes on two idle cores,"
	@echo "    more on a busy machine; make check is the quick check)"
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
