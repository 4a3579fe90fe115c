"""vLLM scheduler classes that pick K per step by batch size x context (imports vLLM).

Use with `vllm serve ... --scheduler-cls specsched.integrations.vllm.ContextAwareScheduler`
(see `specsched export --to vllm` for the complete flags). Stock vLLM picks K at the end of
`Scheduler.schedule()` as `dynamic_sd_lookup[batch size]`, then calls
`_update_after_schedule(scheduler_output)`, which advances `num_computed_tokens`. The override
here reads `num_computed_tokens` / `num_prompt_tokens` of the scheduled requests *before* calling
`super()`, asks the K policy (`specsched.policy`: decode-only pool, `ctx_agg` representative) and
overwrites `scheduler_output.num_spec_tokens_to_schedule`; the model runner passes that K to the
drafter's `propose`, and `AsyncScheduler` sizes its draft placeholders from it. Batch size counts
every scheduled request (prefill chunks too), as stock vLLM does, so a 3-item schedule equal to
the table reproduces stock K exactly.

Without `additional_config["specsched"]` the classes behave exactly like stock vLLM (and log a
warning once). This module is imported lazily by `specsched.integrations.vllm`.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, TextIO

from specsched.integrations.vllm.version import check_vllm_version, missing_hooks

check_vllm_version()  # one-line UserError before touching vLLM internals

from vllm.v1.core.sched.async_scheduler import AsyncScheduler  # noqa: E402
from vllm.v1.core.sched.output import SchedulerOutput  # noqa: E402
from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402

from specsched.errors import UserError  # noqa: E402
from specsched.integrations.vllm.config import (  # noqa: E402
    VllmIntegrationConfig,
    config_from_additional,
)
from specsched.integrations.vllm.table import missing_from_lookup  # noqa: E402
from specsched.integrations.vllm.usage import KUsage, open_trace, trace_record  # noqa: E402
from specsched.policy import BatchState, KPolicy, PolicyConfig, RouteDecision  # noqa: E402

# A child of vLLM's "vllm" logger: vLLM's handler and VLLM_LOGGING_LEVEL apply (DEBUG shows the
# K of every step), with no logging setup of our own in the engine-core process.
LOGGER_NAME = "vllm.specsched"
logger = logging.getLogger(LOGGER_NAME)

_OUTPUT_FIELDS = frozenset(f.name for f in dataclasses.fields(SchedulerOutput))


def _validated_config(sched: Any) -> VllmIntegrationConfig | None:
    """Read and check the integration config against the engine; one-line errors."""
    vllm_config = sched.vllm_config
    cfg = config_from_additional(vllm_config.additional_config)
    if cfg is None:
        logger.warning(
            "specsched: no additional_config['specsched']; %s behaves like stock vLLM",
            type(sched).__name__,
        )
        return None
    gone = missing_hooks(sched, _OUTPUT_FIELDS)
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
    schedule = cfg.schedule.clamped(
        sched.num_spec_tokens
        if cfg.schedule.max_k is None
        else min(cfg.schedule.max_k, sched.num_spec_tokens)
    )
    missing = missing_from_lookup(schedule, sched.dynamic_sd_lookup)
    if missing:
        max_num_seqs = len(sched.dynamic_sd_lookup) - 1
        raise UserError(
            f"specsched: the 2-D schedule emits K={missing} but the speculative config's "
            f"num_speculative_tokens_per_batch_size never maps a batch size <= {max_num_seqs} "
            f"to it; re-run `specsched export --to vllm --max-num-seqs {max_num_seqs}` and use "
            "its --speculative-config"
        )
    if cfg.schedule.max_emitted_k > sched.num_spec_tokens:
        logger.warning(
            "specsched: schedule K up to %d clamped to num_speculative_tokens=%d",
            cfg.schedule.max_emitted_k,
            sched.num_spec_tokens,
        )
    return dataclasses.replace(cfg, schedule=schedule)


class _ContextAwareMixin:
    """The K override shared by the sync and async scheduler classes."""

    specsched_config: VllmIntegrationConfig | None
    specsched_policy: KPolicy | None
    specsched_usage: KUsage
    _specsched_trace: TextIO | None
    _specsched_step: int

    def _specsched_init(self) -> None:
        self.specsched_config = _validated_config(self)
        cfg = self.specsched_config
        self.specsched_policy = None if cfg is None else PolicyConfig(
            schedule=cfg.schedule, ctx_agg=cfg.ctx_agg).build()
        self.specsched_usage = KUsage()
        self._specsched_step = 0
        self._specsched_trace = open_trace(cfg.trace) if cfg and cfg.trace else None
        if cfg is not None:
            logger.info(
                "specsched: K by batch size x context (%d x %d cells, ctx_agg=%s, K in %s)",
                len(cfg.schedule.batch_ranges),
                len(cfg.schedule.ctx_ranges),
                cfg.ctx_agg.value,
                list(cfg.schedule.k_values),
            )

    def _update_after_schedule(self, scheduler_output: SchedulerOutput) -> None:
        policy = self.specsched_policy
        req_ids = scheduler_output.num_scheduled_tokens
        if policy is not None and req_ids:
            requests = self.requests  # type: ignore[attr-defined]
            # Read before super(): it advances num_computed_tokens by the scheduled tokens.
            batch = BatchState.from_counts([requests[r].num_computed_tokens for r in req_ids],
                                           [requests[r].num_prompt_tokens for r in req_ids])
            decision = policy.decide(batch)  # vLLM caps K itself: one K per step
            k = decision.step_k
            scheduler_output.num_spec_tokens_to_schedule = k
            assert decision.route is not None
            self._specsched_record(decision.route, k)
        super()._update_after_schedule(scheduler_output)  # type: ignore[misc]

    def _specsched_record(self, decision: RouteDecision, k: int) -> None:
        self._specsched_step += 1
        self.specsched_usage.record(decision, k)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "specsched step %d: bs=%d pool=%s ctx=%d bucket=%s K=%d",
                self._specsched_step,
                decision.batch_size,
                decision.pool.value,
                decision.ctx_repr,
                list(decision.bucket),
                k,
            )
        if self._specsched_trace is not None:
            self._specsched_trace.write(trace_record(self._specsched_step, decision, k) + "\n")
        cfg = self.specsched_config
        if cfg is not None and cfg.log_every and self._specsched_step % cfg.log_every == 0:
            logger.info("%s", self.specsched_usage.summary())

    def shutdown(self) -> None:
        if getattr(self, "specsched_config", None) is not None:
            logger.info("%s", self.specsched_usage.summary())
        if getattr(self, "_specsched_trace", None) is not None:
            self._specsched_trace.close()  # type: ignore[union-attr]
            self._specsched_trace = None
        super().shutdown()  # type: ignore[misc]


class AsyncContextAwareScheduler(_ContextAwareMixin, AsyncScheduler):
    """`AsyncScheduler` (vLLM's async scheduling) with K by batch size x context."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._specsched_init()


class ContextAwareScheduler(_ContextAwareMixin, Scheduler):
    """`Scheduler` with K by batch size x context: the class to pass to `--scheduler-cls`.

    When vLLM runs with async scheduling (`scheduler_config.async_scheduling`), constructing
    this class returns an `AsyncContextAwareScheduler` instead, so one flag fits both modes."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        vllm_config = kwargs.get("vllm_config", args[0] if args else None)
        if (
            cls is ContextAwareScheduler
            and vllm_config is not None
            and vllm_config.scheduler_config.async_scheduling
        ):
            # Not a subclass of cls, so Python does not call __init__ a second time.
            return AsyncContextAwareScheduler(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._specsched_init()
