"""Out-of-tree integrations of specsched schedules into serving engines.

`specsched.integrations.vllm`: a vLLM scheduler class (`--scheduler-cls`) that chooses K per step
by batch size x context. Importing this package never imports an engine.
"""

from __future__ import annotations
