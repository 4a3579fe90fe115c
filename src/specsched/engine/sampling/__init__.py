"""Sampling: `SamplingParams` (torch-free settings), the processed distribution every path samples
from (`sampler`), and its math (`probs`: temperature, top-k, top-p, inverse-CDF draws)."""
