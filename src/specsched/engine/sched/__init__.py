"""Requests and batching: `Sequence` (one request's state), `Scheduler` (continuous batching,
chunked prefill, prefix-cache admission), `PrefixCache` (block hashes -> slots)."""
