"""specsched: how many speculative tokens (K) to draft per decode step, by batch size x context.

The core (`specsched.schedule`, `specsched.policy`, planning math, statistics) imports no torch.
"""

from __future__ import annotations

__version__ = "0.1.0"
