#!/usr/bin/env bash
# The vLLM integration tiers in .venv-vllm (built by scripts/vllm/setup_env.sh): convert the
# SmolLM2 GGUF for vLLM, then the unit tier, then the e2e tier. Every tier runs even when an
# earlier one failed; the exit code is non-zero when any did.
set -uo pipefail
cd "$(dirname "$0")/../.."
fail=0
.venv-vllm/bin/python scripts/vllm/convert_smollm2.py || fail=1
.venv-vllm/bin/python -m pytest -q tests/integrations/vllm -m "not e2e" || fail=1
.venv-vllm/bin/python -m pytest -q tests/integrations/vllm -m e2e || fail=1
exit "$fail"
