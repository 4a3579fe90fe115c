"""Models from disk, never from a hub: `load_model` resolves `smollm2-135m`, a GGUF file or a
Hugging Face directory into (config, weights, tokenizer)."""
