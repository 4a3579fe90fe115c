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
# the vLLM environment takes ~2.6 GB (downloads included) beside .venv's 1.6: say so up front when
# the disk cannot hold it, since pip's own error is a traceback deep in its download
free_kb=$(df -Pk . | awk 'NR == 2 {print $4}')
if (( free_kb < 3 * 1024 * 1024 )); then
  echo "test_all.sh: only $(( free_kb / 1024 )) MB free on $(df -P . | awk 'NR == 2 {print $6}'); the vLLM environment needs about 3 GB" >&2
fi

bash scripts/vllm/setup_env.sh >"$setup_log" 2>&1 &
setup_pid=$!
trap 'kill "$setup_pid" 2>/dev/null' INT TERM

.venv/bin/python -m pytest -q -n "$workers" --dist loadfile  # -n 0: serial
main_rc=$?

wait "$setup_pid"
setup_rc=$?
trap - INT TERM
echo "---- scripts/vllm/setup_env.sh (ran beside the main suite; exit $setup_rc) ----"
cat "$setup_log"
if (( setup_rc != 0 )); then
  echo "test_all.sh: the vLLM environment did not build (exit $setup_rc); vLLM tiers not run" >&2
  if grep -q "No space left on device" "$setup_log"; then
    echo "test_all.sh: the disk ran full ($(df -Ph . | awk 'NR == 2 {print $4}') free now): free space and run it again" >&2
  fi
  exit 1
fi

bash scripts/vllm/run_tiers.sh
vllm_rc=$?
if (( main_rc != 0 || vllm_rc != 0 )); then
  echo "test_all.sh: some tests failed (main suite exit $main_rc, vLLM tiers exit $vllm_rc)" >&2
  exit 1
fi
