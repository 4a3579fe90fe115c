"""Speculative decoding in the engine: `SpeculativeConfig` (torch-free), the `Speculator` (asks
the K policy, runs the drafter), `drafters/`, and lossless verification (`verify`)."""
