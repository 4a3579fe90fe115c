"""The model's math: `LlamaModel` (one ragged batched forward), ragged attention over the
per-slot `KVCache`, RoPE, prepacked linears, the optional compiled one-token step."""
