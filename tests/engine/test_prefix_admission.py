"""Prefix cache with several holders per block, eviction-aware admission, abort, step stats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from specsched.engine import LLM, SamplingParams
from specsched.engine.sched.prefix_cache import PrefixCache, block_hashes
from specsched.engine.sched.sequence import FinishReason


def tokens(n: int, seed: int) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(2, 128, (n,), generator=g).tolist()


def test_block_held_by_two_slots_survives_one_overwrite() -> None:
    pc = PrefixCache(num_slots=3, block_size=4)
    shared = block_hashes(list(range(12)), 4)  # 3 blocks
    pc.register(0, shared, 12)
    pc.register(1, shared[:2], 8)
    assert pc.lookup(shared, 13) is not None
    hit = pc.lookup(shared, 13)
    assert hit is not None and hit.num_tokens == 12 and hit.slots == frozenset({0})
    hit2 = pc.lookup(shared[:2], 9)
    assert hit2 is not None and hit2.slots == frozenset({0, 1})
    assert pc.lost_blocks(0) == 1  # blocks 0-1 also live in slot 1
    assert pc.lost_blocks(1) == 0
    pc.truncate(0, 0)  # slot 0 overwritten from position 0
    hit3 = pc.lookup(shared, 13)
    assert hit3 is not None and hit3.num_tokens == 8 and hit3.slots == frozenset({1})
    assert pc.lost_blocks(1) == 2 and pc.lost_blocks(1, keep_tokens=4) == 1


def test_short_request_does_not_destroy_longer_cached_prompt(tiny_llama: tuple[Path, Any]) -> None:
    shared = tokens(32, seed=1)
    long_prompt = shared + tokens(48, seed=2)  # 5 full blocks of 16
    short_prompt = shared + tokens(5, seed=3)
    params = SamplingParams(max_tokens=6, ignore_eos=True)
    llm = LLM(str(tiny_llama[0]), max_model_len=128, max_num_seqs=2)
    ref = LLM(str(tiny_llama[0]), max_model_len=128, max_num_seqs=2, enable_prefix_caching=False)
    first = llm.generate([long_prompt], params)[0]
    short = llm.generate([short_prompt], params)[0]
    assert short.stats.num_cached_tokens == 32  # the shared prefix came from the long prompt
    again = llm.generate([long_prompt], params)[0]
    # the short request went to the empty slot (prefix copied), so the long prompt's tail is kept
    assert again.stats.num_cached_tokens == 64
    assert first.token_ids == again.token_ids == ref.generate([long_prompt], params)[0].token_ids
    assert short.token_ids == ref.generate([short_prompt], params)[0].token_ids


def test_free_slot_holding_the_prefix_is_reused_in_place(tiny_llama: tuple[Path, Any]) -> None:
    prompt = tokens(40, seed=4)
    llm = LLM(str(tiny_llama[0]), max_model_len=128, max_num_seqs=2)
    params = SamplingParams(max_tokens=3, ignore_eos=True)
    llm.generate([prompt], params)
    eng = llm.engine
    seq = eng.add_request(prompt, params)
    out = eng.scheduler.schedule()
    assert out.kv_copies == ()  # zero copy: nothing beyond the prefix would be lost
    assert seq.num_computed_tokens == 32
    while eng.has_unfinished():
        eng.step()


def test_abort_frees_the_slot_and_keeps_others_running(tiny_llama: tuple[Path, Any]) -> None:
    llm = LLM(str(tiny_llama[0]), max_model_len=128, max_num_seqs=1)
    eng = llm.engine
    params = SamplingParams(max_tokens=20, ignore_eos=True)
    running = eng.add_request(tokens(10, seed=5), params)
    queued = eng.add_request(tokens(7, seed=6), params)
    eng.step()
    assert running.slot is not None and eng.scheduler.free_slots == []
    assert eng.abort(queued) and queued.finish_reason == FinishReason.ABORT
    assert eng.abort(running) and running.finish_reason == FinishReason.ABORT
    assert not eng.has_unfinished() and eng.scheduler.free_slots == [0]
    assert not eng.abort(running)  # already finished
    later = llm.generate([tokens(10, seed=5)], SamplingParams(max_tokens=4, ignore_eos=True))[0]
    assert len(later.token_ids) == 4 and later.finish_reason == "length"


def test_last_step_describes_the_step(tiny_llama: tuple[Path, Any]) -> None:
    llm = LLM(str(tiny_llama[0]), max_model_len=128, max_num_seqs=2)
    eng = llm.engine
    params = SamplingParams(max_tokens=5, ignore_eos=True)
    eng.add_request(tokens(9, seed=7), params)
    eng.add_request(tokens(4, seed=8), params)
    eng.step()
    st = eng.last_step
    assert st is not None
    assert (st.num_prefill, st.num_decode, st.num_new_tokens, st.routed_k) == (2, 0, 13, None)
    eng.step()
    st = eng.last_step
    assert st is not None
    assert (st.num_prefill, st.num_decode, st.num_new_tokens, st.routed_k) == (0, 2, 2, 0)
    assert st.num_spec_tokens == st.num_accepted_tokens == 0
    assert abs(st.wall_s - (st.draft_s + st.verify_s + st.overhead_s)) < 1e-9
    assert (st.spec_tokens, st.accepted_tokens, st.num_prefill_tokens) == ((0, 0), (0, 0), 0)
    assert eng.stats.step_log[-1] is st and len(eng.stats.step_log) == eng.stats.num_steps == 2
    first = eng.stats.step_log[0]
    assert first.num_prefill_tokens == 13 and first.spec_tokens == ()
    assert first.to_row()[1:] == [13, [], []] and first.to_row()[0] > 0


def test_the_policy_sees_each_prefill_chunk_at_its_context(tiny_llama: tuple[Path, Any]) -> None:
    """A prefill chunk reads the weights and attends over its prompt like a decoding row: the
    step outcome names each chunk's context (its last token's), and the step cost model's rows
    are the decoding requests, then one per chunk, its other tokens on the prefill term."""
    llm = LLM(str(tiny_llama[0]), max_model_len=128, max_num_seqs=2)
    eng = llm.engine
    seen: list[Any] = []
    eng.speculator.observe = seen.append  # type: ignore[method-assign]
    params = SamplingParams(max_tokens=3, ignore_eos=True)
    eng.add_request(tokens(9, seed=7), params)
    eng.step()
    eng.add_request(tokens(4, seed=8), params)
    eng.step()
    first, second = seen
    assert (first.num_prefill_tokens, first.prefill_contexts, first.requests) == (9, (8,), ())
    assert first.step_rows() == ([8], [0], 8)
    assert (second.num_prefill_tokens, second.prefill_contexts) == (4, (3,))
    assert second.step_rows() == ([9, 3], [0, 0], 3)  # the decoding request, then the chunk


def test_the_step_log_is_bounded(tiny_llama: tuple[Path, Any], monkeypatch: Any) -> None:
    """A long-lived engine keeps its first MAX_STEP_LOG steps, and counts every step."""
    from specsched.engine import stats

    monkeypatch.setattr(stats, "MAX_STEP_LOG", 3)
    llm = LLM(str(tiny_llama[0]), max_model_len=128, max_num_seqs=2)
    llm.generate([tokens(9, seed=7)], SamplingParams(max_tokens=6, ignore_eos=True))
    run = llm.last_run_stats
    assert run is not None and run.num_steps == 6 and len(run.step_log) == 3


def test_warm_prompts_are_not_evicted_for_older_longer_caches(tiny_llama: tuple[Path, Any]) -> None:
    """Every slot holds an older, longer prompt; two new short prompts warmed one after the other
    must both still be cached when they run (LRU among slots that would lose blocks: the
    demo's warm-then-measure pattern; losing-fewest-blocks alone evicted the first warm one)."""
    llm = LLM(str(tiny_llama[0]), max_model_len=128, max_num_seqs=3)
    params = SamplingParams(max_tokens=1, ignore_eos=True)
    for seed in (10, 11, 12):
        llm.generate([tokens(70, seed=seed)], params)  # 4 blocks each, one per slot
    new = [tokens(20, seed=20), tokens(20, seed=21)]
    for prompt in new:  # warm one at a time
        llm.generate([prompt], params)
    again = llm.generate(new, params)
    assert [o.stats.num_cached_tokens for o in again] == [16, 16]


def test_rerunning_a_block_multiple_prompt_keeps_the_other_warm_prompts(
        tiny_llama: tuple[Path, Any]) -> None:
    """A prompt of exactly 2 full blocks: a lookup leaves its last block out (one token must be
    computed), so its holder slot "loses" that block on reuse — it recomputes and registers it
    again, which is no loss. Counted as a loss, every slot lost something and the least
    recently admitted one was taken, so running one warm prompt twice evicted another (the
    first arm of plan_eval's serving cells at ctx 400 / 4000 re-prefilled a prompt, 2026-12-03)."""
    llm = LLM(str(tiny_llama[0]), max_model_len=128, max_num_seqs=3)
    warm = SamplingParams(max_tokens=1, ignore_eos=True)
    a, b, c = (tokens(32, seed=s) for s in (30, 31, 32))
    llm.generate([a, b, c], warm)  # one slot each, admitted in order
    params = SamplingParams(max_tokens=6, ignore_eos=True)
    for _ in range(2):
        assert llm.generate([a], params)[0].stats.num_cached_tokens == 16
    again = llm.generate([b, c], warm)
    assert [o.stats.num_cached_tokens for o in again] == [16, 16]


def test_a_prompts_own_blocks_are_not_lost_blocks() -> None:
    pc = PrefixCache(num_slots=2, block_size=4)
    prompt = block_hashes(list(range(8)), 4)  # 2 blocks, registered in slot 0
    pc.register(0, prompt, 8)
    hit = pc.lookup(prompt, 8)
    assert hit is not None and hit.num_tokens == 4
    assert pc.lost_blocks(0, keep_tokens=4) == 1  # someone else's request would lose block 1
    assert pc.lost_blocks(0, keep_tokens=4, hashes=prompt) == 0  # the same prompt recomputes it
    other = block_hashes([0, 1, 2, 3, 9, 9, 9, 9], 4)  # same first block, other second
    assert pc.lost_blocks(0, keep_tokens=4, hashes=other) == 1
