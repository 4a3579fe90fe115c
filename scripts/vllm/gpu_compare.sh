#!/usr/bin/env bash
# The CPU comparison, prepared for one CUDA GPU and a real draft/target pair from local dirs:
# no speculation vs stock batch-only DSD vs the 2-D schedule (specsched's scheduler class),
# prefix-repetition prompts at three context lengths, balanced order, controls, via the evidence
# harness's `openai` backend. NOT run by its author (no GPU in that session): check the first
# server logs before trusting numbers.
#
#   TARGET=/models/target DRAFT=/models/draft scripts/vllm/gpu_compare.sh [OUT_DIR]
#
# Env (defaults): SCHEDULE (examples/schedule_2d.json), VLLM_PY (python of a venv with CUDA vllm
#   >= 0.24, < 0.34 and specsched installed: `pip install vllm==0.33.* && pip install -e . --no-deps
#   pyyaml rich numpy`), SPECSCHED (.venv/bin/specsched, needs httpx), METHOD (draft_model),
#   CONCURRENCY (32), REQUESTS (64), OUTPUT_LEN (256), CTX_LENS ("400 1900 4000"), REPLICATES (3),
#   MAX_NUM_SEQS (256), GPU_UTIL (0.28: three servers share the GPU; PARALLEL=0 runs one at a
#   time via harness-managed servers instead, with GPU_UTIL=0.85), EXTRA_ARGS (more vllm flags,
#   e.g. "--tensor-parallel-size 1 --dtype bfloat16"), DRY_RUN=1 (experiment + dry-run only).
# Servers listen on 127.0.0.1 only; their logs, the results and the report go under OUT_DIR.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
: "${TARGET:?set TARGET to the target model directory}"
: "${DRAFT:?set DRAFT to the draft model directory}"
OUT="${1:-bench-results/vllm-gpu}"
SCHEDULE="${SCHEDULE:-examples/schedule_2d.json}"
VLLM_PY="${VLLM_PY:-python3}"
SPECSCHED="${SPECSCHED:-$REPO/.venv/bin/specsched}"
METHOD="${METHOD:-draft_model}"
CONCURRENCY="${CONCURRENCY:-32}"; REQUESTS="${REQUESTS:-64}"; OUTPUT_LEN="${OUTPUT_LEN:-256}"
CTX_LENS="${CTX_LENS:-400 1900 4000}"; REPLICATES="${REPLICATES:-3}"
MAX_NUM_SEQS="${MAX_NUM_SEQS:-256}"; PARALLEL="${PARALLEL:-1}"
GPU_UTIL="${GPU_UTIL:-$([[ $PARALLEL == 1 ]] && echo 0.28 || echo 0.85)}"
EXTRA_ARGS="${EXTRA_ARGS:-}"
mkdir -p "$OUT"
"$VLLM_PY" -c "import specsched.integrations.vllm as m; print('vllm', m.check_vllm_version())"
if [[ "${DRY_RUN:-0}" != 1 ]]; then
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
fi

STOCK_SPEC=$("$SPECSCHED" export "$SCHEDULE" --to vllm --mode stock --method "$METHOD" \
  --draft-model "$DRAFT" 2>/dev/null | sed -E "s/^--speculative-config '(.*)'$/\1/")
# The stock arm runs (and the dry-run sees) the batch-only projection of the 2-D schedule.
STOCK_TABLE=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["num_speculative_tokens_per_batch_size"]))' "$STOCK_SPEC")
SPEC2D_LINE=$("$SPECSCHED" export "$SCHEDULE" --to vllm --mode specsched --method "$METHOD" --draft-model "$DRAFT" \
  --max-num-seqs "$MAX_NUM_SEQS" --log-every 500 2>/dev/null)
COMMON="-m vllm.entrypoints.openai.api_server --host 127.0.0.1 --model $TARGET \
--served-model-name target \
--max-num-seqs $MAX_NUM_SEQS --gpu-memory-utilization $GPU_UTIL --no-enable-prefix-caching \
--seed 0 $EXTRA_ARGS"
cmd_nospec="$VLLM_PY $COMMON --port 8021"
cmd_stock="$VLLM_PY $COMMON --port 8022 --speculative-config '$STOCK_SPEC'"
cmd_2d="$VLLM_PY $COMMON --port 8023 ${SPEC2D_LINE% --max-num-seqs *}"
printf '%s\n' "$cmd_nospec" "$cmd_stock" "$cmd_2d" > "$OUT/server-commands.txt"

# The experiment file: schedules for the dry-run (controls, crossings), servers per arm.
server_yaml() {  # server_yaml PORT CMD
  if [[ $PARALLEL == 1 ]]; then
    echo "{base_url: \"http://127.0.0.1:$1\"}"
  else
    python3 -c 'import json,shlex,sys; print(json.dumps({"base_url": "http://127.0.0.1:"+sys.argv[1], "command": shlex.split(sys.argv[2]), "ready_timeout_s": 1800}))' "$1" "$2"
  fi
}
SCHED_ABS="$(cd "$(dirname "$SCHEDULE")" && pwd)/$(basename "$SCHEDULE")"
{
  echo "name: vllm-gpu-2d-vs-batch-only"
  echo "backend: openai"
  echo "backend_options: {tokenizer: server, request_timeout_s: 1800, log_dir: \"$OUT/server-logs\"}"
  echo "seed: 11"
  echo "replicates: $REPLICATES"
  echo "warmup: 1"
  echo "baseline: stock-dsd"
  echo "drafter: $METHOD"
  echo "arms:"
  echo "  - {name: no-spec, k: 0, server: $(server_yaml 8021 "$cmd_nospec")}"
  echo "  - {name: stock-dsd, schedule: $STOCK_TABLE, server: $(server_yaml 8022 "$cmd_stock")}"
  echo "  - {name: 2d-ctx, schedule: \"$SCHED_ABS\", server: $(server_yaml 8023 "$cmd_2d")}"
  echo "scenarios:"
  for L in $CTX_LENS; do
    echo "  - {name: ctx$L, kind: prefix_repetition, prefix_len: $((L * 9 / 10)), suffix_len: $((L / 10)), num_prefixes: 4, num_requests: $REQUESTS, concurrency: $CONCURRENCY, output_len: $OUTPUT_LEN}"
  done
} > "$OUT/experiment.yaml"
"$SPECSCHED" bench "$OUT/experiment.yaml" --dry-run | tee "$OUT/dry-run.txt"
[[ "${DRY_RUN:-0}" == 1 ]] && exit 0  # DRY_RUN=1: write the experiment + dry-run only

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done; }
trap cleanup EXIT
if [[ $PARALLEL == 1 ]]; then
  for port in 8021 8022 8023; do
    if curl -s -o /dev/null "http://127.0.0.1:$port/v1/models"; then
      echo "error: something already answers on port $port" >&2; exit 1
    fi
  done
  i=0
  for c in "$cmd_nospec" "$cmd_stock" "$cmd_2d"; do
    i=$((i + 1)); setsid bash -c "exec $c" >"$OUT/server$i.log" 2>&1 & PIDS+=($!)
    sleep 20  # stagger start-up (memory profiling) on the shared GPU
  done
  T0=$(date +%s)
  for port in 8021 8022 8023; do
    until curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null; do
      sleep 5
      (( $(date +%s) - T0 < 1800 )) || { echo "error: server on $port not ready" >&2; exit 1; }
    done
  done
fi
T1=$(date +%s)
"$SPECSCHED" bench "$OUT/experiment.yaml" --out "$OUT/results.jsonl"
echo "bench took $(( $(date +%s) - T1 )) s"
"$SPECSCHED" report "$OUT/results.jsonl" --out "$OUT/report" | tee "$OUT/report.txt"
