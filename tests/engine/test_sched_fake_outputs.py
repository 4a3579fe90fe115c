"""The engine's scheduler and speculator driven with fake model outputs (vLLM's test style): no
model, no forward. Each step: schedule -> ask the K policy -> pretend the verify accepted a given
number of drafts -> advance the requests as postprocess would. A table of steps checks K."""

from __future__ import annotations

from specsched.engine.config import EngineConfig
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.sched.scheduler import Scheduler
from specsched.engine.sched.sequence import Sequence
from specsched.engine.spec.config import SpeculativeConfig
from specsched.engine.spec.drafters.base import DraftBatch, Drafter, DraftProposal
from specsched.engine.spec.speculator import Speculator
from specsched.policy import PolicyConfig
from specsched.schedule import parse_schedule


class NeverCalled(Drafter):
    def _propose(self, batch: DraftBatch, num_spec_tokens: list[int]) -> DraftProposal:
        raise AssertionError("these tests never draft")


def _seq(i: int, prompt_len: int, max_tokens: int = 64) -> Sequence:
    return Sequence(i, list(range(2, 2 + prompt_len)), SamplingParams(max_tokens=max_tokens),
                    None, [])


def _fake_step(sched: Scheduler, spec: Speculator, accepted: int) -> tuple[tuple[int, ...], int]:
    """One step with fake outputs: every decoding request accepts min(K_i, accepted) drafts."""
    out = sched.schedule()
    decision = spec.decide(out.scheduled)
    for s, k in zip(out.scheduled, decision.num_spec_tokens, strict=True):
        seq = s.seq
        if seq.is_prefilling:
            seq.num_computed_tokens += s.num_new_tokens
            if not seq.is_prefilling:
                seq.token_ids.append(1)  # the first sampled token
            continue
        a = min(k, accepted)
        seq.token_ids.extend([1] * (a + 1))
        seq.num_computed_tokens += a + 1
    return decision.num_spec_tokens, decision.step_k


def test_k_follows_batch_and_context_through_prefill_and_decode() -> None:
    cfg = EngineConfig(max_num_seqs=4, max_model_len=256, max_num_batched_tokens=64)
    schedule = parse_schedule([[1, 1, 1, 99, 1], [1, 1, 100, 100000, 3],
                               [2, 4, 1, 99, 0], [2, 4, 100, 100000, 2]])
    spec = Speculator(SpeculativeConfig(policy=PolicyConfig(schedule=schedule)), cfg,
                      NeverCalled())
    sched = Scheduler(cfg, None)
    sched.add(_seq(0, 90))
    # step 1: prefill chunk of 64 (still prefilling): pool = all, K=1 routed, capped to 0
    assert _fake_step(sched, spec, 0) == ((0,), 1)
    # step 2: the last 26 prompt tokens; still prefilling at schedule time
    assert _fake_step(sched, spec, 0) == ((0,), 1)
    # step 3: decoding at ctx 90 < 100: K = 1
    assert _fake_step(sched, spec, 1) == ((1,), 1)
    sched.add(_seq(1, 8))
    # step 4: batch 2 (one prefilling): decode pool = request 0 at ctx 92: row 2 short: K = 0
    assert _fake_step(sched, spec, 1) == ((0, 0), 0)
    # step 5: both decode, contexts 93 and 9 (mean 51 < 100): still K = 0
    assert _fake_step(sched, spec, 1) == ((0, 0), 0)


def test_room_caps_k_at_max_tokens_and_max_model_len() -> None:
    cfg = EngineConfig(max_num_seqs=2, max_model_len=40, max_num_batched_tokens=64)
    spec = Speculator(SpeculativeConfig(policy=PolicyConfig.constant(8)), cfg, NeverCalled())
    sched = Scheduler(cfg, None)
    sched.add(_seq(0, 10, max_tokens=5))
    sched.add(_seq(1, 30))
    assert _fake_step(sched, spec, 0) == ((0, 0), 8)  # both prefill
    # request 0: 1 output so far, max_tokens 5 -> room 3; request 1: 31 tokens, len 40 -> room 8
    assert _fake_step(sched, spec, 8) == ((3, 8), 8)
    # after accepting 3 (+1): request 0 has 5 outputs -> room -1 -> 0; request 1 at 40 -> 0
    ks, _ = _fake_step(sched, spec, 8)
    assert ks == (0, 0)
