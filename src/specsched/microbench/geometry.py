"""Attention geometry of a model: layers, query heads, KV heads, head dim (no torch).

Presets and config.json parsing come from the planner (`specsched.planner.specs.resolve_model`);
this module only keeps the attention part and applies command-line overrides.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specsched.errors import UserError
from specsched.planner.specs import resolve_model


@dataclass(frozen=True, slots=True)
class AttentionGeometry:
    name: str
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int

    def __post_init__(self) -> None:
        for f in ("num_layers", "num_heads", "num_kv_heads", "head_dim"):
            if getattr(self, f) < 1:
                raise UserError(f"geometry {self.name!r}: {f} must be >= 1")
        if self.num_heads % self.num_kv_heads:
            raise UserError(
                f"geometry {self.name!r}: num_heads ({self.num_heads}) must be a multiple of "
                f"num_kv_heads ({self.num_kv_heads})"
            )

    @property
    def group(self) -> int:
        """Query heads per KV head (GQA)."""
        return self.num_heads // self.num_kv_heads

    @property
    def scale(self) -> float:
        return float(self.head_dim) ** -0.5

    def kv_bytes_per_token_layer(self, element_size: int) -> int:
        return 2 * self.num_kv_heads * self.head_dim * element_size


def resolve_geometry(
    model: str,
    *,
    num_layers: int | None = None,
    num_heads: int | None = None,
    num_kv_heads: int | None = None,
    head_dim: int | None = None,
) -> AttentionGeometry:
    """A planner preset, a config.json or a model folder holding one; None keeps a field."""
    folder = Path(model)
    if folder.is_dir() and (folder / "config.json").is_file():
        model = str(folder / "config.json")
    spec = resolve_model(model)
    return AttentionGeometry(
        spec.name,
        spec.num_layers if num_layers is None else num_layers,
        spec.num_heads if num_heads is None else num_heads,
        spec.num_kv_heads if num_kv_heads is None else num_kv_heads,
        spec.head_dim if head_dim is None else head_dim,
    )
