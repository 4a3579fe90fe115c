"""An `Experiment`'s canonical form: `experiment_to_obj` (JSON-ready, schedules resolved to 5-item
entries; the results file's header) and `experiment_hash` (what ties a results file to its
experiment: a changed arm, scenario or schedule changes it)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from specsched.bench.arm_policy import policy_to_obj
from specsched.bench.experiment import Experiment, ScenarioKind


def experiment_to_obj(exp: Experiment) -> dict[str, Any]:
    """Canonical JSON-ready form, schedules resolved to 5-item entries (what the hash covers)."""
    return {
        "name": exp.name,
        "baseline": exp.baseline,
        "replicates": exp.replicates,
        "warmup": exp.warmup,
        "seed": exp.seed,
        "backend": exp.backend.value,
        "backend_options": dict(exp.backend_options),
        "arms": [
            {
                "name": a.name,
                "schedule": a.policy.schedule.entries(5),
                "max_k": a.policy.schedule.max_k,
                "ctx_agg": a.policy.ctx_agg.value,
                "drafter": a.drafter_label,
                "per_request_k": a.policy.per_request_k,
                **policy_to_obj(a.policy),
                **({"warm": True} if a.warm else {}),  # absent when false: older hashes hold
                "server": None if a.server is None else {
                    "base_url": a.server.base_url,
                    "command": list(a.server.command),
                    "model": a.server.model,
                    "ready_timeout_s": a.server.ready_timeout_s,
                    "env": dict(a.server.env),
                },
                "options": dict(a.options),
            }
            for a in exp.arms
        ],
        "scenarios": [
            {
                "name": s.name, "kind": s.kind.value, "output_len": s.output_len,
                "num_requests": s.num_requests, "concurrency": s.concurrency,
                "prompt_lens": list(s.prompt_lens), "prefix_len": s.prefix_len,
                "suffix_len": s.suffix_len, "num_prefixes": s.num_prefixes,
                "input_len": s.input_len, "range_ratio": s.range_ratio,
                **({"phase_len": s.phase_len, "repeat_unit": s.repeat_unit}
                   if s.kind is ScenarioKind.PHASES else {}),
                **({"document_unit": s.document_unit} if s.document_unit else {}),
                **({"document_shuffle": True} if s.document_shuffle else {}),
                **({"replicates": s.replicates} if s.replicates is not None else {}),
                "sampling": {"temperature": s.sampling.temperature, "top_p": s.sampling.top_p,
                             "top_k": s.sampling.top_k},
            }
            for s in exp.scenarios
        ],
    }


def experiment_hash(exp: Experiment) -> str:
    """sha256 (16 hex) of the canonical form: a changed arm, scenario or schedule changes it."""
    canon = json.dumps(experiment_to_obj(exp), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()[:16]
