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

After each step, `update_from_output` reads back what verification did with the drafts the
previous decision sized (`outcomes.py`; accepted counts through `make_spec_decoding_stats`) and
hands the `StepOutcome` to the policy's `observe` (step time = wall time between consecutive
`update_from_output` calls), the per-cell Prometheus counters (`metrics.py`) and the trace.
At start the class checks its config against the engine (`validate.py`: among others it refuses
a model runner known to ignore its K, `runner.py`), and an optional hysteresis
(`policy.hysteresis`) wraps the policy. `"policy": "adaptive"` runs the closed-loop
policy (`adaptive.py`: the schedule is its prior; one K per step; every K in 0..max_k must be in
vLLM's table) and logs/writes the schedule it learned every `log_every` steps and at shutdown.

Without `additional_config["specsched"]` the classes behave exactly like stock vLLM (and log a
warning once). This module is imported lazily by `specsched.integrations.vllm`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from typing import TYPE_CHECKING, Any, TextIO

from specsched.integrations.vllm.version import check_vllm_version

VLLM_VERSION = check_vllm_version()  # one-line UserError before touching vLLM internals

from vllm.v1.core.sched.async_scheduler import AsyncScheduler  # noqa: E402
from vllm.v1.core.sched.output import SchedulerOutput  # noqa: E402
from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402

from specsched.integrations.vllm.adaptive import AdaptiveRun, StepKRoute  # noqa: E402
from specsched.integrations.vllm.config import VllmIntegrationConfig  # noqa: E402
from specsched.integrations.vllm.metrics import (  # noqa: E402
    PromCounters,
    cell_labels,
    exposure,
    outcome_cells,
    prom_counters,
)
from specsched.integrations.vllm.outcomes import Decided, FinishedStep, OutcomeTracker  # noqa: E402
from specsched.integrations.vllm.usage import (  # noqa: E402
    KUsage,
    open_trace,
    outcome_record,
    schedule_record,
    trace_record,
)
from specsched.integrations.vllm.validate import (  # noqa: E402
    LOGGER_NAME,
    adaptive_text,
    validated_config,
)
from specsched.policy import (  # noqa: E402
    AdaptivePolicy,
    BatchState,
    KPolicy,
    PolicyConfig,
    RouteDecision,
)

if TYPE_CHECKING:
    from vllm.v1.engine import EngineCoreOutputs
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.spec_decode.metrics import SpecDecodingStats

logger = logging.getLogger(LOGGER_NAME)

_OUTPUT_FIELDS = frozenset(f.name for f in dataclasses.fields(SchedulerOutput))
# vLLM's per-request draft accounting; without it (an older vLLM) acceptance is not read back.
_READS_ACCEPTANCE = hasattr(Scheduler, "make_spec_decoding_stats")
# The clock of the step time handed to the policy (tests replace it with a fake one).
_clock = time.perf_counter


class _ContextAwareMixin:
    """The K override and the outcome read-back shared by the sync and async classes."""

    specsched_config: VllmIntegrationConfig | None
    specsched_policy: KPolicy | None
    specsched_usage: KUsage
    _specsched_trace: TextIO | None
    _specsched_step: int
    _specsched_outcomes: OutcomeTracker
    _specsched_counters: PromCounters | None
    _specsched_adaptive: AdaptiveRun | None

    def _specsched_init(self) -> None:
        self.specsched_config = validated_config(self, _OUTPUT_FIELDS, VLLM_VERSION)
        cfg = self.specsched_config
        self.specsched_usage = KUsage()
        self._specsched_step = 0
        self._specsched_outcomes = OutcomeTracker()
        self._specsched_trace = open_trace(cfg.trace) if cfg and cfg.trace else None
        self.specsched_policy = None
        self._specsched_counters = None
        self._specsched_adaptive = None
        if cfg is None:
            return
        policy = PolicyConfig(schedule=cfg.schedule, ctx_agg=cfg.ctx_agg, kind=cfg.policy,
                              adaptive=cfg.adaptive).build()
        if isinstance(policy, AdaptivePolicy):
            self._specsched_adaptive = AdaptiveRun(policy, cfg.ctx_agg.value, cfg.trace)
            policy = StepKRoute(policy)  # hysteresis (below) then holds the K it chose
        self.specsched_policy = cfg.hysteresis.wrap(policy) if cfg.hysteresis else policy
        self._specsched_counters = prom_counters()
        if self._specsched_trace is not None:
            self._specsched_trace.write(schedule_record(cfg.schedule, cfg.ctx_agg.value) + "\n")
        reaches, where = exposure(os.environ)
        logger.log(logging.INFO if reaches else logging.WARNING, "%s", where)
        if not _READS_ACCEPTANCE:
            logger.warning("specsched: this vLLM has no Scheduler.make_spec_decoding_stats: "
                           "accepted drafts are not read back (no acceptance counters)")
        logger.info(
            "specsched: K by batch size x context (%d x %d cells, ctx_agg=%s, K in %s%s%s)",
            len(cfg.schedule.batch_ranges),
            len(cfg.schedule.ctx_ranges),
            cfg.ctx_agg.value,
            list(cfg.schedule.k_values),
            "" if cfg.hysteresis is None else f", hysteresis {cfg.hysteresis}",
            "" if cfg.adaptive is None else adaptive_text(cfg),
        )

    def _update_after_schedule(self, scheduler_output: SchedulerOutput) -> None:
        policy = self.specsched_policy
        req_ids = scheduler_output.num_scheduled_tokens
        if policy is not None and req_ids:
            requests = self.requests  # type: ignore[attr-defined]
            # Read before super(): it advances num_computed_tokens by the scheduled tokens.
            computed = [requests[r].num_computed_tokens for r in req_ids]
            prompt = [requests[r].num_prompt_tokens for r in req_ids]
            # request ids: a closed-loop policy tracks each request across steps by them
            decision = policy.decide(BatchState.from_counts(computed, prompt,
                                                            request_ids=list(req_ids)))
            k = decision.step_k  # vLLM caps K itself: one K per step
            scheduler_output.num_spec_tokens_to_schedule = k
            assert decision.route is not None
            decided = self._specsched_record(decision.route, k)
            # The drafts verified in this step were sized by the previous decision.
            spec = scheduler_output.scheduled_spec_decode_tokens
            contexts = {r: (c, len(spec.get(r, ()))) for r, c, p in zip(req_ids, computed, prompt)
                        if c >= p}
            chunks = [(c, n) for n, c, p in zip(req_ids.values(), computed, prompt) if c < p]
            self._specsched_outcomes.on_schedule(
                id(scheduler_output), contexts, decided,
                num_prefill_tokens=sum(n for _, n in chunks),
                prefill_contexts=tuple(c + n - 1 for c, n in chunks))
        super()._update_after_schedule(scheduler_output)  # type: ignore[misc]

    def update_from_output(
        self, scheduler_output: SchedulerOutput, model_runner_output: ModelRunnerOutput
    ) -> dict[int, EngineCoreOutputs]:
        if self.specsched_policy is None:
            return super().update_from_output(  # type: ignore[misc]
                scheduler_output, model_runner_output)
        tracker = self._specsched_outcomes
        tracker.begin(id(scheduler_output))
        result = super().update_from_output(  # type: ignore[misc]
            scheduler_output, model_runner_output)
        idle = self.get_num_unfinished_requests() == 0  # type: ignore[attr-defined]
        done = tracker.finish(_clock(), idle_after=idle)
        if done is not None:
            self._specsched_observe(done)
        return result

    def make_spec_decoding_stats(self, *args: Any, **kwargs: Any) -> SpecDecodingStats | None:
        """vLLM's per-request draft accounting (0.32: called with keywords, once per request
        that verified drafts): the accepted count the outcome needs."""
        req_id = kwargs.get("request_id")
        if self.specsched_policy is not None and req_id is not None:
            invalid = (kwargs.get("num_invalid_spec_tokens") or {}).get(req_id, 0)
            self._specsched_outcomes.on_verified(
                req_id, kwargs.get("num_draft_tokens", 0) - invalid,
                kwargs.get("num_accepted_tokens", 0))
        return super().make_spec_decoding_stats(*args, **kwargs)  # type: ignore[misc]

    def _specsched_record(self, decision: RouteDecision, k: int) -> Decided:
        self._specsched_step += 1
        self.specsched_usage.record(decision, k)
        cfg = self.specsched_config
        assert cfg is not None
        if self._specsched_counters is not None:
            self._specsched_counters.record_step(cell_labels(cfg.schedule, decision.bucket), k)
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
        if self._specsched_adaptive is not None:
            self._specsched_adaptive.on_decide(self._specsched_step)
        if cfg.log_every and self._specsched_step % cfg.log_every == 0:
            logger.info("%s", self.specsched_usage.summary())
            self._specsched_learned()
        return Decided(self._specsched_step, decision, k)

    def _specsched_observe(self, done: FinishedStep) -> None:
        """A verified step: counters, trace, and the policy (a closed-loop one learns here)."""
        cfg = self.specsched_config
        assert cfg is not None and self.specsched_policy is not None
        if self._specsched_counters is not None:
            self._specsched_counters.record_cells(outcome_cells(cfg.schedule, done).items())
        if self._specsched_trace is not None:
            self._specsched_trace.write(outcome_record(done) + "\n")
        if self._specsched_adaptive is not None:
            self._specsched_adaptive.before_observe(done.decided.step, done.decided.k)
        self.specsched_policy.observe(done.outcome)

    def _specsched_learned(self) -> None:
        """Adaptive policy: log (and write next to the trace) the schedule it learned."""
        run = getattr(self, "_specsched_adaptive", None)
        if run is None:
            return
        try:
            line, record = run.report(self._specsched_step)
        except Exception as exc:  # runs at shutdown too: report, never break the engine
            logger.warning("specsched adaptive: cannot freeze the learned schedule: %s", exc)
            return
        logger.info("%s", line)
        if self._specsched_trace is not None:
            self._specsched_trace.write(json.dumps(record) + "\n")

    def shutdown(self) -> None:
        if getattr(self, "specsched_config", None) is not None:
            logger.info("%s", self.specsched_usage.summary())
            self._specsched_learned()
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
