"""`x @ W.T + b` with the weight laid out once, at load time, for the device's fastest kernel.

On CPU fp32 the matmuls go through oneDNN's linear (`torch.ops.mkldnn._linear_pointwise`),
~2x faster than `F.linear` (MKL) for the few-row shapes of decode and verify. The weight is
additionally reordered once into oneDNN's blocked layout (`mkldnn._reorder_linear_weight`,
the prepacking inductor does under `freezing`): measured 25-30% faster for 4-64 rows and
equal at 1 row, because a plain row-major weight is re-blocked on every call for those shapes
(see notes/engine.md, "CPU decode speed-up"). Prepacking is a pure data permutation: the
logical weight (`.weight`) is unchanged; only the accumulation order inside the kernel differs,
as it already does between row counts.

Other devices and dtypes use `F.linear` on the plain weight.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

PACK_ROWS = 16  # row-count hint for the blocked layout; measured best for 4-64 rows


def onednn_fp32(w: torch.Tensor) -> bool:
    """Whether `w` takes the oneDNN path (CPU, fp32, oneDNN built in)."""
    return (
        w.device.type == "cpu"
        and w.dtype == torch.float32
        and torch.backends.mkldnn.is_available()
    )


def onednn_linear(
    x: torch.Tensor,  # [T, K] fp32 CPU
    w: torch.Tensor,  # [N, K] plain or oneDNN-packed
    b: torch.Tensor | None = None,  # [N]
) -> torch.Tensor:  # [T, N]
    return torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")


class Linear:
    """One weight matrix `[N, K]` (and optional bias `[N]`) prepared for repeated `x @ W.T + b`.

    `plain_rows`: batches of at most this many rows use the plain row-major weight (kept only
    when `keep_plain`, e.g. a tied output layer whose plain copy exists anyway as the embedding
    table); measured equal or slightly faster than the blocked layout at 1 row.
    """

    __slots__ = ("_packed", "_plain", "bias", "in_features", "out_features")

    def __init__(
        self, weight: torch.Tensor, bias: torch.Tensor | None = None, keep_plain: bool = False
    ) -> None:
        self.out_features, self.in_features = weight.shape
        self.bias = bias
        self._packed: torch.Tensor | None = None
        self._plain: torch.Tensor | None = weight
        if onednn_fp32(weight):
            self._packed = torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), PACK_ROWS)
            if not keep_plain:
                self._plain = None

    @property
    def weight(self) -> torch.Tensor:  # [N, K] dense (a copy when only the packed one is kept)
        if self._plain is not None:
            return self._plain
        assert self._packed is not None
        return self._packed.to_dense()

    def nbytes(self) -> int:
        """Bytes of the logical weight (what one full pass over it reads)."""
        return self.out_features * self.in_features * self._dtype_size()

    def _dtype_size(self) -> int:
        w = self._plain if self._plain is not None else self._packed
        assert w is not None
        return w.element_size()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:  # [T, K] -> [T, N]
        if self._packed is None:
            assert self._plain is not None
            return F.linear(x, self._plain, self.bias)
        if self._plain is not None and x.shape[0] <= 1:
            return onednn_linear(x, self._plain, self.bias)
        return onednn_linear(x, self._packed, self.bias)
