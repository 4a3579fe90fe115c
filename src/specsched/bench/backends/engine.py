"""The in-process reference engine as a bench backend (`backend: engine`).

One `specsched.engine.LLM` per backend, reused by every trial (weights loaded once, prefix cache
warm). Each arm becomes one `SpeculativeConfig`: the backend's (`backend_options` drafter, window,
num_sink_tokens), with the arm's drafter, drafter options and K policy (schedule, ctx_agg,
per-request K), swapped in with `LLMEngine.set_speculative` between trials. A trial builds the
scenario's prompts from offline real text tokenized by the engine's tokenizer (exact token
lengths: `bench.workload.build_prompts`), runs them with at most `concurrency` requests in flight
and the scenario's output length and sampling, and reports per-request TTFT / latency / ITL (a
step's tokens arrive as one chunk, as a server streams them), the K histogram, acceptance per
draft position, the draft / verify / overhead time split and a hash of the output tokens (greedy
arms must produce identical tokens: `bench.canary` flags arms that differ from the baseline).

A `warm` adaptive arm keeps its policy from one trial of a scenario to the next (a long-running
server: what it learned about the machine's costs and the cells' acceptance stays; requests are
new), primed before its first trial by one unmeasured run of the scenario's shapes on other text.

Prefill is kept out of the comparison: prompts not seen before are first prefilled untimed
(`warm_prefix`), so the timed run reads them from the prefix cache. `vary_text: false` keeps one
text per scenario for every replicate (one long prefill per scenario instead of one per
replicate; the replicates then differ by timing noise only).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import zlib
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from specsched.bench.backends.base import RequestResult, TrialResult, TrialSpec
from specsched.bench.experiment import Arm, DrafterChoice, Scenario
from specsched.corpus import build_prompts
from specsched.engine.driver import drive, uncached, warm_prefix
from specsched.engine.llm import LLM
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.spec.config import DrafterKind, SpeculativeConfig, parse_drafter
from specsched.errors import UserError
from specsched.io import check_keys, dataclass_from_mapping
from specsched.policy import KPolicy

# `backend_options` keys that make up the backend's drafter (`EngineOptions.speculative`):
# `drafter` (its spelling) and these `SpeculativeConfig` fields
SPEC_OPTION_KEYS = ("window", "num_sink_tokens")
# An arm's `options` on this backend: `SpeculativeConfig` fields overriding the backend's
ARM_OPTION_KEYS = ("window", "num_sink_tokens", "prompt_lookup_min", "prompt_lookup_max")


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """`backend_options` of the engine backend."""

    model: str = "smollm2-135m"
    dtype: str = "float32"
    device: str = "cpu"
    threads: int | None = 1
    # The drafter and its settings of arms whose drafter is `default` (their policy replaces
    # this one's): `drafter`, `window`, `num_sink_tokens` in `backend_options`.
    speculative: SpeculativeConfig = field(default_factory=SpeculativeConfig)
    max_num_seqs: int | None = None  # None: the largest scenario batch seen (engine rebuilt)
    max_model_len: int | None = None  # None: what the trials need (engine rebuilt)
    max_num_batched_tokens: int = 2048
    vary_text: bool = True
    warm_prefix: bool = True

    def __post_init__(self) -> None:
        if self.threads is not None and self.threads < 1:
            raise UserError("engine backend_options: threads must be >= 1")
        for name in ("max_num_seqs", "max_model_len"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UserError(f"engine backend_options: {name} must be >= 1")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> EngineOptions:
        """From the experiment's flat `backend_options` (the drafter keys become `speculative`)."""
        where = "engine backend_options"
        allowed = {f for f in cls.__dataclass_fields__ if f != "speculative"}
        opts = check_keys(options, allowed | {"drafter", *SPEC_OPTION_KEYS}, where)
        drafter = str(opts.pop("drafter", DrafterKind.STREAMING.value))
        sizes = {k: opts.pop(k) for k in SPEC_OPTION_KEYS if k in opts}
        try:
            kind, path = parse_drafter(drafter)
            ints: dict[str, Any] = {k: int(v) for k, v in sizes.items()}
            speculative = SpeculativeConfig(drafter=kind, draft_model=path, **ints)
        except (UserError, TypeError, ValueError) as exc:
            raise UserError(f"{where}: {exc}") from None
        return dataclass_from_mapping(cls, {**opts, "speculative": speculative}, where)


def speculative_config(arm: Arm, opts: EngineOptions) -> SpeculativeConfig | None:
    """The arm as the engine's `SpeculativeConfig` (None: no speculation): the backend's, with
    the arm's drafter unless it is `default`, its `options` and its policy."""
    if arm.drafter == DrafterChoice.NONE or arm.max_emitted_k == 0:
        return None
    base = opts.speculative
    if arm.drafter != DrafterChoice.BACKEND_DEFAULT:
        kind, path = parse_drafter(arm.drafter)
        base = replace(base, drafter=kind, draft_model=path)
    if base.drafter is DrafterKind.NONE:
        return None
    extra = check_keys(dict(arm.options), set(ARM_OPTION_KEYS),
                       f"arm {arm.name!r}: engine backend options")
    overrides: dict[str, Any] = {k: int(v) for k, v in extra.items()}
    return replace(base, policy=arm.policy, **overrides)


def output_hash(token_ids: list[list[int]]) -> str:
    """sha256 (16 hex) of every request's output tokens, in submission order."""
    return hashlib.sha256(json.dumps(token_ids).encode()).hexdigest()[:16]


def sampling_params(scenario: Scenario, seed: int, index: int) -> SamplingParams:
    s = scenario.sampling
    greedy = s.temperature == 0.0
    return SamplingParams(
        max_tokens=scenario.output_len, temperature=s.temperature, top_k=s.top_k,
        top_p=s.top_p, seed=None if greedy else (seed * 1009 + index) % 2**31, ignore_eos=True,
    )


class EngineBackend:
    """Runs bench trials on one in-process `LLM` (see module doc)."""

    def __init__(self, options: EngineOptions, llm: LLM | None = None) -> None:
        self.options = options
        self.llm = llm
        self._pieces: list[int] | None = None
        self._warm: dict[tuple[str, str], KPolicy] = {}  # (arm, scenario) -> a warm arm's policy

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> EngineBackend:
        return cls(EngineOptions.from_options(options))

    def _engine_for(self, slots: int, length: int) -> LLM:
        o = self.options
        if self.llm is not None:
            cfg = self.llm.engine.cfg
            if cfg.max_num_seqs >= slots and cfg.max_model_len >= length:
                return self.llm
            if (o.max_num_seqs, o.max_model_len) != (None, None):
                raise UserError(
                    f"engine backend: a trial needs {slots} slots x {length} tokens but the "
                    f"engine has {cfg.max_num_seqs} x {cfg.max_model_len}; raise "
                    f"backend_options max_num_seqs / max_model_len"
                )
            slots, length = max(slots, cfg.max_num_seqs), max(length, cfg.max_model_len)
        self.llm = LLM(
            o.model, dtype=o.dtype, device=o.device,
            max_num_seqs=o.max_num_seqs or slots, max_model_len=o.max_model_len or length,
            max_num_batched_tokens=o.max_num_batched_tokens, num_threads=o.threads,
        )
        self._pieces = None
        self._warm.clear()  # a new engine numbers requests from 0 again: a new server
        return self.llm

    def _prompts(self, llm: LLM, trial: TrialSpec, seed: int | None = None) -> list[list[int]]:
        """The trial's prompts (`seed`: text from another seed, whatever `vary_text` says)."""
        if self._pieces is None:
            self._pieces = llm.corpus_token_ids()
        if seed is None:
            seed = trial.seed if self.options.vary_text else zlib.crc32(
                trial.scenario.name.encode())
        return build_prompts(trial.shapes, self._pieces, seed)


    def run_trial(self, trial: TrialSpec) -> TrialResult:
        scenario = trial.scenario
        slots = scenario.batch_size
        longest = max(s.num_prompt_tokens for s in trial.shapes)
        llm = self._engine_for(slots, longest + scenario.output_len + trial.arm.max_emitted_k + 8)
        prompts = self._prompts(llm, trial)
        spec = speculative_config(trial.arm, self.options)
        policy, primed = self._warm_policy(llm, trial, spec)  # before the prefill: a priming
        # run's prompts must not evict the measured ones from the prefix cache
        # untimed prefill of the prompts the prefix cache does not hold yet
        warmed = self.options.warm_prefix and warm_prefix(llm.engine, prompts, slots)
        # prompts whose prefill the timed run still does: the prefix cache is slot-resident, so
        # a trial of more requests than the engine's max_num_seqs cannot hold them all
        missing = uncached(llm.engine, prompts) if warmed else None
        llm.engine.set_speculative(spec, policy)
        params = [sampling_params(scenario, trial.seed, i) for i in range(len(prompts))]
        res = drive(llm.engine, prompts, params, concurrency=slots)
        requests = []
        for seq, submitted, chunks in zip(res.seqs, res.submit_s, res.chunk_times, strict=True):
            itl = tuple(b - a for a, b in itertools.pairwise(chunks))
            requests.append(RequestResult(
                num_prompt_tokens=seq.num_prompt_tokens,
                num_output_tokens=len(seq.output_token_ids),
                ttft_s=chunks[0] - submitted if chunks else 0.0,
                latency_s=chunks[-1] - submitted if chunks else 0.0,
                itl_s=itl,
                submit_s=submitted - res.start_s,
            ))
        st = res.stats
        index: dict[Hashable, int] = {seq.request_id: i for i, seq in enumerate(res.seqs)}
        if policy is not None:  # what it learned in this trial too carries to the next
            self._warm[(trial.arm.name, scenario.name)] = llm.engine.speculator.policy
        learned = llm.engine.learned_schedule()  # an adaptive arm's learned grid, else None
        extra = {
            "engine": "specsched",
            "model": llm.model_name,
            "threads": self.options.threads,
            "dtype": self.options.dtype,
            "drafter": "none" if spec is None else spec.drafter_label,
            "window": None if spec is None else spec.window,
            "policy": "static" if spec is None else spec.policy.kind.value,
            "warm": policy is not None,  # a policy carried over (primed by an unmeasured run)
            "primed": primed,  # this trial's policy was primed just before it (first trial)
            "learned_schedule": None if learned is None else learned.entries(5),
            "greedy": scenario.sampling.temperature == 0.0,
            "output_hash": output_hash([s.output_token_ids for s in res.seqs]),
            "num_steps": st.num_steps,
            "num_spec_steps": st.num_spec_steps,
            "num_cached_prompt_tokens": sum(s.stats.num_cached_tokens for s in res.seqs),
            "prefilled_untimed": warmed,
            "uncached_prompts": missing,  # of them, prefilled inside the timed run anyway
            "time_split_s": {"draft": st.draft_s, "verify": st.verify_s,
                             "overhead": st.overhead_s},
            "acceptance": {
                "drafted_per_position": list(st.spec.drafted_per_position),
                "accepted_per_position": list(st.spec.accepted_per_position),
                "acceptance_rate": st.spec.acceptance_rate,
                "mean_accepted_length": st.spec.mean_accepted_length,
            },
            # [wall ms, prefill tokens, K per decoding request, accepted per request, the
            # requests' places in `requests`] per step (`bench.step_rows` reads it)
            "steps": [step.to_row(index) for step in st.step_log],
        }
        return TrialResult(tuple(requests), res.wall_s, dict(st.k_histogram), extra)

    def _warm_policy(self, llm: LLM, trial: TrialSpec,
                     spec: SpeculativeConfig | None) -> tuple[KPolicy | None, bool]:
        """A `warm` arm's policy: the one its last trial of this scenario left, or the first
        time a fresh one primed by one unmeasured run of the scenario's shapes on other text
        (another seed). (None, False) for other arms: they get a fresh policy every trial."""
        if not trial.arm.warm or spec is None:
            return None, False
        key = (trial.arm.name, trial.scenario.name)
        if key in self._warm:
            return self._warm[key], False
        seed = zlib.crc32(f"prime:{trial.seed}".encode())
        prompts = self._prompts(llm, trial, seed)
        slots = trial.scenario.batch_size
        if self.options.warm_prefix:
            warm_prefix(llm.engine, prompts, slots)
        policy = spec.policy.build()
        llm.engine.set_speculative(spec, policy)
        params = [sampling_params(trial.scenario, seed, i) for i in range(len(prompts))]
        drive(llm.engine, prompts, params, concurrency=slots)
        self._warm[key] = policy
        return policy, True

    def close(self) -> None:
        self.llm = None
        self._warm.clear()
