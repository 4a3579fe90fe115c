#!/usr/bin/env bash
# One CUDA GPU, one script, <= ~10 min (H200, an 8B-class target): the attention aggregator
# microbenchmark on CUDA, then no speculation vs stock batch-only DSD vs the 2-D schedule
# (specsched's scheduler class) in the shape of the upstream proposal's Table 1 (prefix-repetition
# prompts at ctx ~400 / 900 / 1900 / 4000 x concurrency), balanced order, controls, via the
# evidence harness's `openai` backend. NOT run by its author (no GPU in that session): read the
# first server logs before trusting numbers.
#
#   scripts/vllm/gpu_compare.sh [--dry-run] --eagle3 TARGET_DIR EAGLE3_HEAD_DIR [OUT_DIR]
#   scripts/vllm/gpu_compare.sh [--dry-run] --draft-model TARGET_DIR DRAFT_DIR [OUT_DIR]
#   (or TARGET=... DRAFT=... METHOD=... in the environment; default OUT_DIR bench-results/vllm-gpu)
#
# --dry-run: print every command (microbenchmark, servers, bench, report), write the experiment
# and show the bench dry-run (controls, crossings); needs no GPU and no model files.
# Env (defaults): SCHEDULE (scripts/vllm/gpu_schedule_2d.json: rows 1-16 / 17-64 / 65-256 split
#   at ctx 768; at concurrency 8 stock and 2-D choose the same K (a control pair, must tie), at 32
#   they differ past ctx 768), VLLM_PY (python of a venv with CUDA vllm >= 0.24, < 0.34 and
#   specsched: `pip install vllm==0.33.* && pip install -e . --no-deps && pip install pyyaml rich
#   numpy`), SPECSCHED (.venv/bin/specsched, needs httpx), CONCURRENCY ("8 32"; the KV cache of
#   three servers at GPU_UTIL each must hold concurrency x (ctx + output): the script warns after
#   start-up), CTX_LENS ("400 900 1900 4000"), OUTPUT_LEN (128), REPLICATES (3), WARMUP (0: one
#   warm-up request per server before the bench instead), MAX_NUM_SEQS (256), GPU_UTIL (0.28),
#   NUM_SPEC (override num_speculative_tokens), EXTRA_ARGS (more vllm flags, e.g. "--dtype
#   bfloat16"), MICROBENCH (1), MICRO_ARGS (extra `specsched microbench attention` flags),
#   BUDGET_S (600: the bench gets what start-up and the microbenchmark left; an unfinished bench
#   resumes with `specsched bench OUT/experiment.yaml --out OUT/results.jsonl --resume`).
# Model runner: the V2 runner (CUDA default from vLLM 0.32) drafts num_speculative_tokens whatever
# K is for draft_model / ngram (notes/vllm_internals_research.md §3) and specsched's class refuses
# it, so for those methods every server runs with VLLM_USE_V2_MODEL_RUNNER=0 (the same for all
# arms); eagle3 keeps vLLM's default runner.
# Servers listen on 127.0.0.1 only; their logs, the results and the reports go under OUT_DIR.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
DRY_RUN="${DRY_RUN:-0}"; METHOD="${METHOD:-draft_model}"; TARGET="${TARGET:-}"; DRAFT="${DRAFT:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) DRY_RUN=1; shift ;;
    --eagle3) METHOD=eagle3; TARGET="${2:?--eagle3 TARGET HEAD}"; DRAFT="${3:?--eagle3 TARGET HEAD}"; shift 3 ;;
    --draft-model) METHOD=draft_model; TARGET="${2:?--draft-model TARGET DRAFT}"; DRAFT="${3:?--draft-model TARGET DRAFT}"; shift 3 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    -*) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
: "${TARGET:?give --eagle3 TARGET HEAD or --draft-model TARGET DRAFT (or TARGET/DRAFT env)}"
: "${DRAFT:?give the draft model / EAGLE-3 head directory}"
OUT="${1:-bench-results/vllm-gpu}"
SCHEDULE="${SCHEDULE:-scripts/vllm/gpu_schedule_2d.json}"
VLLM_PY="${VLLM_PY:-python3}"
SPECSCHED="${SPECSCHED:-$REPO/.venv/bin/specsched}"
CONCURRENCY="${CONCURRENCY:-8 32}"; CTX_LENS="${CTX_LENS:-400 900 1900 4000}"
OUTPUT_LEN="${OUTPUT_LEN:-128}"; REPLICATES="${REPLICATES:-3}"; WARMUP="${WARMUP:-0}"
MAX_NUM_SEQS="${MAX_NUM_SEQS:-256}"; GPU_UTIL="${GPU_UTIL:-0.28}"; EXTRA_ARGS="${EXTRA_ARGS:-}"
MICROBENCH="${MICROBENCH:-1}"; MICRO_ARGS="${MICRO_ARGS:-}"; BUDGET_S="${BUDGET_S:-600}"
T_START=$(date +%s)
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
case "$METHOD" in
  eagle|eagle3|mtp) RUNNER_ENV="" ;;
  *) RUNNER_ENV="VLLM_USE_V2_MODEL_RUNNER=0" ;;
esac
run() {  # run CMD...: print it; execute unless --dry-run
  echo "+ $*"
  [[ $DRY_RUN == 1 ]] || "$@"
}
if [[ $DRY_RUN != 1 ]]; then
  for d in "$TARGET" "$DRAFT"; do [[ -f "$d/config.json" ]] || { echo "error: $d/config.json missing" >&2; exit 1; }; done
  "$VLLM_PY" -c "import specsched.integrations.vllm as m; print('vllm', m.check_vllm_version())"
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
fi

# 1. Which context aggregator the GPU's verify attention calls for (mean vs max vs median).
if [[ $MICROBENCH == 1 ]]; then
  MICRO_MODEL="$TARGET/config.json"; [[ -f "$MICRO_MODEL" ]] || MICRO_MODEL=llama-3.1-8b
  run timeout 240 "$VLLM_PY" -m specsched microbench attention --device cuda --model "$MICRO_MODEL" \
    --batch-size 32 -k 3 --mean-levels 400,900,1900,4000 --max-levels 4000,8000 --repeats 10 \
    --out "$OUT/microbench-attention.json" --no-plot $MICRO_ARGS \
    || echo "warning: the microbenchmark failed or ran out of time; continuing" >&2
fi

# 2. Three servers side by side: no-spec, stock DSD (batch-only projection), 2-D (specsched).
SPEC_IN="$OUT/speculative-config.json"
python3 - "$SCHEDULE" "$METHOD" "$DRAFT" "${NUM_SPEC:-}" > "$SPEC_IN" <<'EOF'
import json, sys
from pathlib import Path
src, method, draft, num_spec = sys.argv[1:5]
obj = json.loads(Path(src).read_text())
entries = obj["schedule"] if isinstance(obj, dict) else obj
spec = {"method": method, "model": draft, "speculative_token_schedule": entries}
if num_spec:
    spec["num_speculative_tokens"] = int(num_spec)
print(json.dumps(spec))
EOF
STOCK_SPEC=$("$SPECSCHED" export "$SPEC_IN" --to vllm --mode stock 2>/dev/null \
  | sed -E "s/^--speculative-config '(.*)'$/\1/")
STOCK_TABLE=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["num_speculative_tokens_per_batch_size"]))' "$STOCK_SPEC")
SPEC2D_FLAGS=$("$SPECSCHED" export "$SPEC_IN" --to vllm --mode specsched \
  --max-num-seqs "$MAX_NUM_SEQS" --log-every 500 2>/dev/null | sed "s/ --max-num-seqs $MAX_NUM_SEQS\$//")
COMMON="-m vllm.entrypoints.openai.api_server --host 127.0.0.1 --model $TARGET \
--served-model-name target --max-num-seqs $MAX_NUM_SEQS --gpu-memory-utilization $GPU_UTIL \
--no-enable-prefix-caching --seed 0 $EXTRA_ARGS"
cmd_nospec="$VLLM_PY $COMMON --port 8021"
cmd_stock="$VLLM_PY $COMMON --port 8022 --speculative-config '$STOCK_SPEC'"
cmd_2d="$VLLM_PY $COMMON --port 8023 $SPEC2D_FLAGS"
SCHED_ABS="$(cd "$(dirname "$SCHEDULE")" && pwd)/$(basename "$SCHEDULE")"
{
  echo "name: vllm-gpu-table1-2d-vs-batch-only"
  echo "backend: openai"
  echo "backend_options: {tokenizer: server, request_timeout_s: 900, log_dir: \"$OUT/bench-logs\"}"
  echo "seed: 11"
  echo "replicates: $REPLICATES"
  echo "warmup: $WARMUP"
  echo "baseline: stock-dsd"
  echo "drafter: $METHOD"
  echo "arms:"
  echo "  - {name: no-spec, k: 0, server: {base_url: \"http://127.0.0.1:8021\"}}"
  echo "  - {name: stock-dsd, schedule: $STOCK_TABLE, server: {base_url: \"http://127.0.0.1:8022\"}}"
  echo "  - {name: 2d-ctx, schedule: \"$SCHED_ABS\", server: {base_url: \"http://127.0.0.1:8023\"}}"
  echo "scenarios:"
  for L in $CTX_LENS; do
    for C in $CONCURRENCY; do
      echo "  - {name: ctx$L-c$C, kind: prefix_repetition, prefix_len: $((L * 9 / 10)), suffix_len: $((L / 10)), num_prefixes: 4, num_requests: $C, concurrency: $C, output_len: $OUTPUT_LEN}"
    done
  done
} > "$OUT/experiment.yaml"
printf 'env %s %s\n' "$RUNNER_ENV" "$cmd_nospec" "$RUNNER_ENV" "$cmd_stock" "$RUNNER_ENV" "$cmd_2d" \
  > "$OUT/server-commands.txt"
"$SPECSCHED" bench "$OUT/experiment.yaml" --dry-run | tee "$OUT/dry-run.txt"
if [[ $DRY_RUN == 1 ]]; then
  echo "+ (servers, logs under $OUT)"; cat "$OUT/server-commands.txt"
  echo "+ $SPECSCHED bench $OUT/experiment.yaml --out $OUT/results.jsonl  (timeout: what is left of ${BUDGET_S}s)"
  echo "+ $SPECSCHED report $OUT/results.jsonl --out $OUT/report"
  exit 0
fi

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done; }
trap cleanup EXIT
for port in 8021 8022 8023; do
  if curl -s -o /dev/null "http://127.0.0.1:$port/v1/models"; then
    echo "error: something already answers on port $port" >&2; exit 1
  fi
done
i=0
for c in "$cmd_nospec" "$cmd_stock" "$cmd_2d"; do
  i=$((i + 1))
  setsid bash -c "exec env HF_HUB_OFFLINE=1 $RUNNER_ENV $c" >"$OUT/server$i.log" 2>&1 & PIDS+=($!)
  sleep 15  # stagger start-up (memory profiling) on the shared GPU
done
T0=$(date +%s)
for port in 8021 8022 8023; do
  until curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null; do
    sleep 3
    for p in "${PIDS[@]}"; do
      kill -0 "$p" 2>/dev/null || { echo "error: a server exited; see $OUT/server*.log" >&2; exit 1; }
    done
    (( $(date +%s) - T0 < 600 )) || { echo "error: server on $port not ready" >&2; exit 1; }
  done
  curl -s "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
    -d '{"model": "target", "prompt": "warm up", "max_tokens": 8}' >/dev/null || true
done
echo "servers ready $(( $(date +%s) - T0 )) s after the last start"
grep -h "GPU KV cache size" "$OUT"/server*.log | tee "$OUT/kv-capacity.txt" || true
KV=$(grep -ohE "GPU KV cache size: [0-9,]+" "$OUT/kv-capacity.txt" | tr -dc '0-9\n' | sort -n | head -1)
for L in $CTX_LENS; do for C in $CONCURRENCY; do
  need=$((C * (L + OUTPUT_LEN + 8)))
  if [[ -n "$KV" ]] && (( need > KV )); then
    echo "warning: ctx$L-c$C needs ~$need KV tokens, a server holds $KV: its batch stays below $C" >&2
  fi
done; done
LEFT=$(( BUDGET_S - ($(date +%s) - T_START) - 30 ))
(( LEFT > 60 )) || LEFT=60
T1=$(date +%s)
timeout "$LEFT" "$SPECSCHED" bench "$OUT/experiment.yaml" --out "$OUT/results.jsonl" \
  || echo "warning: bench stopped after ${LEFT}s; rerun it with --resume to finish" >&2
echo "bench took $(( $(date +%s) - T1 )) s"
"$SPECSCHED" report "$OUT/results.jsonl" --out "$OUT/report" | tee "$OUT/report.txt" || true
grep -h "specsched K usage" "$OUT/server3.log" | tail -1 || true
echo "total $(( $(date +%s) - T_START )) s"
