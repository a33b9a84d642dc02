PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo test bench lint typecheck clean

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

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
