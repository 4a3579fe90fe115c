"""The scheduler class's start-up check: read `additional_config["specsched"]` and check it
against the engine it runs in (speculative config, vLLM's K table, data parallelism, the model
runner, hooks this vLLM lacks), with one-line errors; and the start-up log line of an adaptive
run. Duck-typed on the scheduler instance: no vLLM import here (`scheduler.py` passes what it
read from vLLM).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from specsched.errors import UserError
from specsched.integrations.vllm.adaptive_settings import engine_adaptive
from specsched.integrations.vllm.config import VllmIntegrationConfig, config_from_additional
from specsched.integrations.vllm.runner import runner_problem
from specsched.integrations.vllm.table import missing_from_lookup
from specsched.integrations.vllm.version import missing_hooks

# A child of vLLM's "vllm" logger: vLLM's handler and VLLM_LOGGING_LEVEL apply (DEBUG shows the
# K of every step), with no logging setup of our own in the engine-core process.
LOGGER_NAME = "vllm.specsched"
logger = logging.getLogger(LOGGER_NAME)


def _calls(obj: Any, method: str) -> bool:
    """`obj.method()` when this vLLM has it, else False."""
    fn = getattr(obj, method, None)
    return bool(fn()) if callable(fn) else False


def validated_config(sched: Any, output_fields: frozenset[str], vllm_version: Any,
                     ) -> VllmIntegrationConfig | None:
    """Read and check the integration config against the engine (`sched`: the scheduler
    instance; `output_fields`: this vLLM's SchedulerOutput fields); one-line errors."""
    vllm_config = sched.vllm_config
    cfg = config_from_additional(vllm_config.additional_config)
    if cfg is None:
        logger.warning(
            "specsched: no additional_config['specsched']; %s behaves like stock vLLM",
            type(sched).__name__,
        )
        return None
    gone = missing_hooks(sched, output_fields)
    if gone:
        raise UserError(
            f"specsched: this vLLM lacks {', '.join(gone)}; the scheduler class supports the "
            "versions listed in notes/vllm.md"
        )
    spec = vllm_config.speculative_config
    if spec is None or not sched.num_spec_tokens:
        raise UserError(
            "specsched: the 2-D schedule needs speculative decoding; pass the "
            "--speculative-config printed by `specsched export --to vllm`"
        )
    if sched.dynamic_sd_lookup is None:
        dp = vllm_config.parallel_config.data_parallel_size
        why = (
            f"vLLM disables dynamic K with data parallel size {dp} (ranks would diverge); "
            "use tensor/pipeline parallelism or one engine per rank"
            if dp > 1
            else "its speculative config has no num_speculative_tokens_per_batch_size table; "
            "use the --speculative-config printed by `specsched export --to vllm`"
        )
        raise UserError(f"specsched: cannot choose K per step: {why}")
    use_v2 = getattr(sched, "use_v2_model_runner", None)
    if use_v2 is None:  # versions without the scheduler attribute
        use_v2 = getattr(vllm_config, "use_v2_model_runner", False)
    multi_mtp = _calls(spec, "use_multi_module_mtp") and not _calls(spec, "use_gemma4_mtp")
    problem = runner_problem(spec.method, bool(use_v2), vllm_version, multi_module_mtp=multi_mtp)
    if problem is not None:
        raise UserError(f"specsched: {problem}")
    cap = sched.num_spec_tokens
    if cfg.is_adaptive:
        adaptive = engine_adaptive(cfg.adaptive_config, cfg.adaptive_max_k_given, cap,
                                   sched.dynamic_sd_lookup)
        cfg = dataclasses.replace(cfg, adaptive=adaptive)
        cap = adaptive.max_k  # the prior's K never exceeds what the policy may choose
    schedule = cfg.schedule.clamped(cap if cfg.schedule.max_k is None
                                    else min(cfg.schedule.max_k, cap))
    missing = missing_from_lookup(schedule, sched.dynamic_sd_lookup)
    if missing:
        max_num_seqs = len(sched.dynamic_sd_lookup) - 1
        raise UserError(
            f"specsched: the 2-D schedule emits K={missing} but the speculative config's "
            f"num_speculative_tokens_per_batch_size never maps a batch size <= {max_num_seqs} "
            f"to it; re-run `specsched export --to vllm --max-num-seqs {max_num_seqs}` and use "
            "its --speculative-config"
        )
    if cfg.schedule.max_emitted_k > cap:
        logger.warning(
            "specsched: schedule K up to %d clamped to %s=%d",
            cfg.schedule.max_emitted_k,
            "adaptive max_k" if cfg.is_adaptive else "num_speculative_tokens",
            cap,
        )
    return dataclasses.replace(cfg, schedule=schedule)


def adaptive_text(cfg: VllmIntegrationConfig) -> str:
    a = cfg.adaptive_config
    priors = [name for name, have in (("cost", a.cost_prior is not None),
                                      ("acceptance", bool(a.acceptance_prior))) if have]
    profile = (cfg.adaptive_settings or {}).get("profile")
    return (f"; policy adaptive: schedule as prior, max_k={a.max_k}, one K per step, priors: "
            f"{' + '.join(priors) or 'none (learned online)'}"
            f"{f' from {profile}' if profile else ''}")
