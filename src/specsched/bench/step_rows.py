"""A trial's step log read back per request: which request each decoding row belongs to, and
each request's drafts tested and accepted per position.

The engine backend logs every step as [wall ms, prefill tokens, K per decoding request, accepted
per decoding request, the requests' places in the trial] (`engine.stats.StepStats.to_row`).
Logs written before the last column existed are read by replaying admission: requests start in
order, a request decodes from the step after its prefill, rows list the decoding requests in the
order they started, and a request leaves when it has emitted its output length (accepted + 1 per
step). Where that replay does not add up (a row with more or fewer decoding requests than are
ready, a request emitting past its length, requests left over), the log is not read (None).

Per position: a step with K drafts of which `a` were accepted tested positions 0..min(a, K - 1)
and accepted positions 0..a - 1 — the counts behind conditional acceptance a_i = accepted_i /
tested_i. No torch here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

StepRow = Sequence[Any]  # [ms, prefill tokens, [K...], [accepted...], ([place...])]


def _replayed_places(steps: Sequence[StepRow],
                     output_lens: Sequence[int]) -> list[list[int]] | None:
    """Each row's decoding requests by place, for a log without the places column."""
    ready: list[list[int]] = []  # [place, tokens emitted], in the order they started
    started = 0
    out: list[list[int]] = []
    for row in steps:
        ks, acc = row[2], row[3]
        while len(ready) < len(ks) and started < len(output_lens):
            ready.append([started, 1])  # its prefill step emitted its first token
            started += 1
        if len(ready) != len(ks):
            return None
        out.append([p for p, _ in ready])
        for r, a in zip(ready, acc, strict=True):
            r[1] += int(a) + 1
            if r[1] > output_lens[r[0]]:
                return None
        ready = [r for r in ready if r[1] < output_lens[r[0]]]
    return out if not ready else None


def request_places(steps: Sequence[StepRow],
                   output_lens: Sequence[int]) -> list[list[int]] | None:
    """Per step, the place in the trial (0..len(output_lens) - 1) of each decoding row: the log's
    own column, or replayed for an older log; None when neither is possible (see module doc)."""
    if steps and all(len(row) >= 5 for row in steps):
        places = [list(row[4]) for row in steps]
        ok = all(len(p) == len(row[2]) and all(0 <= i < len(output_lens) for i in p)
                 for p, row in zip(places, steps, strict=True))
        return places if ok else None
    return _replayed_places(steps, output_lens)


def position_counts(steps: Sequence[StepRow], output_lens: Sequence[int],
                    max_k: int) -> list[tuple[list[int], list[int]]] | None:
    """Per request (by place): (tested, accepted) drafts per position 0..max_k - 1 over the
    whole log; None when the rows cannot be assigned to requests."""
    places = request_places(steps, output_lens)
    if places is None:
        return None
    counts = [([0] * max_k, [0] * max_k) for _ in output_lens]
    for row, where in zip(steps, places, strict=True):
        for place, k, a in zip(where, row[2], row[3], strict=True):
            tested, accepted = counts[place]
            for i in range(min(int(a) + 1, int(k), max_k)):
                tested[i] += 1
                accepted[i] += int(i < int(a))
    return counts
