#!/usr/bin/env bash
# `make test`: the whole suite in the least wall time on a small machine.
#   1. scripts/vllm/setup_env.sh (mostly downloads, ~4 min on a fresh machine) runs in the
#      background, its output in .cache/vllm-setup.log (printed when it ends);
#   2. meanwhile the main suite runs on 2 pytest-xdist workers (SPECSCHED_TEST_WORKERS; 0 = serial);
#   3. then the vLLM tiers (scripts/vllm/run_tiers.sh: unit, then e2e), serially.
# Every part runs even when an earlier one failed; the exit code is non-zero when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
workers="${SPECSCHED_TEST_WORKERS:-2}"
mkdir -p .cache
setup_log=.cache/vllm-setup.log

bash scripts/vllm/setup_env.sh >"$setup_log" 2>&1 &
setup_pid=$!
trap 'kill "$setup_pid" 2>/dev/null' INT TERM

.venv/bin/python -m pytest -q -n "$workers"  # -n 0: serial
main_rc=$?

wait "$setup_pid"
setup_rc=$?
trap - INT TERM
echo "---- scripts/vllm/setup_env.sh (ran beside the main suite; exit $setup_rc) ----"
cat "$setup_log"
if (( setup_rc != 0 )); then
  echo "test_all.sh: the vLLM environment did not build (exit $setup_rc); vLLM tiers not run" >&2
  exit 1
fi

bash scripts/vllm/run_tiers.sh
vllm_rc=$?
if (( main_rc != 0 || vllm_rc != 0 )); then
  echo "test_all.sh: some tests failed (main suite exit $main_rc, vLLM tiers exit $vllm_rc)" >&2
  exit 1
fi
