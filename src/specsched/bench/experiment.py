"""The experiment: arms (what runs), scenarios (which workload), replicates, warm-up, baseline.

Configs are frozen and validated in `__post_init__` without I/O; `bench.load` reads files.
An arm's K comes from its `PolicyConfig` (`specsched.policy`); an arm described by `k` holds
`PolicyConfig.constant(k)`, and `k: 0` is the no-spec arm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from specsched.errors import UserError
from specsched.policy import PolicyConfig


class DrafterChoice(str, Enum):
    """What an arm's `drafter` holds when it names no drafter of its own."""

    NONE = "none"  # never drafts: the default of an arm whose K is 0 everywhere
    BACKEND_DEFAULT = "default"  # the backend's drafter (`EngineOptions.speculative` on the engine)


def drafter_choice(text: str) -> DrafterChoice | str:
    """A `DrafterChoice` for `none` / `default`, else the drafter's own spelling unchanged."""
    try:
        return DrafterChoice(text)
    except ValueError:
        return text


class ScenarioKind(str, Enum):
    BATCH = "batch"  # explicit per-request prompt lengths, all started together
    PREFIX_REPETITION = "prefix_repetition"  # shared prefix + distinct suffixes (vLLM dataset)
    RANDOM = "random"  # uniform lengths in [input_len*(1-r), input_len*(1+r)] drawn with the seed
    # random lengths; requests alternate in phases of `phase_len`: repetitive text (a short
    # snippet repeated: drafts get accepted), then free text (they do not), and so on
    PHASES = "phases"


class BackendKind(str, Enum):
    ENGINE = "engine"  # the in-process reference engine (specsched.engine)
    OPENAI = "openai"  # any OpenAI-compatible server via streaming /v1/completions
    SIMULATED = "simulated"  # a deterministic toy model: tests and dry demos, never evidence


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """How an arm's OpenAI-compatible server is reached and, optionally, started and stopped."""

    base_url: str = "http://127.0.0.1:8000"
    command: tuple[str, ...] = ()  # empty: the server is already running (not managed)
    model: str | None = None  # None: the first id listed by GET /v1/models
    ready_timeout_s: float = 600.0
    env: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise UserError(
                f"server.base_url must start with http:// or https://, got {self.base_url!r}"
            )
        if self.ready_timeout_s <= 0:
            raise UserError(f"server.ready_timeout_s must be > 0, got {self.ready_timeout_s}")


@dataclass(frozen=True, slots=True)
class Arm:
    """One configuration under test: how K is chosen (`policy`) and by what it is drafted.

    drafter: a `DrafterChoice`, or on the engine backend the engine's drafter spelling
        (streaming, ngram, model:PATH; resolved with the backend's drafter settings into one
        `SpeculativeConfig` by `backends.engine.speculative_config`), on a server a label for
        what its command runs (eagle3, mtp, ...).
    """

    name: str
    policy: PolicyConfig
    drafter: DrafterChoice | str = DrafterChoice.NONE
    server: ServerSpec | None = None
    # Anything else that makes this arm a different configuration (engine options, flags that the
    # server command carries besides the schedule). Arms with different options are never controls.
    options: tuple[tuple[str, Any], ...] = ()
    # An adaptive arm measured as a long-running server: its policy (what it learned) carries
    # from one trial of a scenario to the next, primed by one unmeasured trial on other text
    # before the first (engine backend). False: a fresh policy every trial (a cold server).
    warm: bool = False

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise UserError("arm: every arm needs a non-empty string `name`")
        if self.warm and not self.policy.is_adaptive:
            raise UserError(f"arm {self.name!r}: `warm` needs `policy: adaptive` (a static "
                            "policy learns nothing to carry)")

    @property
    def max_emitted_k(self) -> int:
        return self.policy.max_k

    @property
    def drafter_label(self) -> str:
        """`drafter` as written in an experiment file."""
        return self.drafter.value if isinstance(self.drafter, DrafterChoice) else self.drafter


@dataclass(frozen=True, slots=True)
class Sampling:
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0  # 0: disabled

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise UserError(f"sampling.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise UserError(f"sampling.top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise UserError(f"sampling.top_k must be >= 0, got {self.top_k}")


@dataclass(frozen=True, slots=True)
class Scenario:
    """A workload. Lengths are in tokens; `prompt_lens` only for `batch`."""

    name: str
    kind: ScenarioKind
    output_len: int
    num_requests: int
    concurrency: int
    prompt_lens: tuple[int, ...] = ()  # batch
    prefix_len: int = 0  # prefix_repetition
    suffix_len: int = 0  # prefix_repetition
    num_prefixes: int = 1  # prefix_repetition: requests cycle over this many shared prefixes
    input_len: int = 0  # random, phases
    range_ratio: float = 0.0  # random, phases
    phase_len: int = 0  # phases: requests per phase
    repeat_unit: int = 24  # phases: tokens of the snippet a repetitive prompt repeats
    # phases with prefix_len > 0: every prompt starts with one shared document of prefix_len
    # tokens; a repetitive prompt's tail quotes it (the continuation copies from far back)
    document_unit: int = 0  # phases with a document: > 0 makes it a passage of this many tokens
    # repeated (the target has read it several times, so it keeps copying when a tail quotes it)
    document_shuffle: bool = False  # phases with a document_unit: its passage's tokens in a
    # seeded random order (a quote then follows no local pattern: a draft that cannot see the
    # passage, as a windowed self-draft 1024 tokens on, guesses wrong)
    sampling: Sampling = field(default_factory=Sampling)
    # replicates of this scenario; None: the experiment's. A noisy cell (a short B = 1 request)
    # takes more replicates than a slow, steady one in the same run
    replicates: int | None = None

    def __post_init__(self) -> None:
        where = f"scenario {self.name!r}"
        if self.replicates is not None and self.replicates < 1:
            raise UserError(f"{where}: replicates must be >= 1, got {self.replicates}")
        if self.output_len < 1:
            raise UserError(f"{where}: output_len must be >= 1, got {self.output_len}")
        if self.num_requests < 1 or self.concurrency < 1:
            raise UserError(f"{where}: num_requests and concurrency must be >= 1")
        if self.kind is ScenarioKind.BATCH:
            if not self.prompt_lens or min(self.prompt_lens) < 1:
                raise UserError(f"{where}: batch needs prompt_lens, a list of lengths >= 1")
            if self.num_requests != len(self.prompt_lens):
                raise UserError(
                    f"{where}: batch runs one request per prompt length; num_requests "
                    f"{self.num_requests} != {len(self.prompt_lens)} prompt_lens"
                )
        elif self.kind is ScenarioKind.PREFIX_REPETITION:
            if self.prefix_len < 0 or self.suffix_len < 0 or self.prefix_len + self.suffix_len < 1:
                raise UserError(f"{where}: prefix_len + suffix_len must be >= 1 (both >= 0)")
            if self.num_prefixes < 1:
                raise UserError(f"{where}: num_prefixes must be >= 1")
            if not 0 <= self.range_ratio < 1 or (self.range_ratio and self.suffix_len < 1):
                raise UserError(f"{where}: range_ratio (of the suffix length) must be in [0, 1) "
                                f"and needs suffix_len >= 1")
        elif self.kind in (ScenarioKind.RANDOM, ScenarioKind.PHASES):
            if self.input_len < 1:
                raise UserError(f"{where}: {self.kind.value} needs input_len >= 1")
            if self.kind is ScenarioKind.PHASES and not (
                    self.phase_len >= 1 and 1 <= self.repeat_unit < self.input_len):
                raise UserError(f"{where}: phases needs phase_len >= 1 and "
                                f"1 <= repeat_unit < input_len")
            if not 0 <= self.range_ratio < 1:
                raise UserError(f"{where}: range_ratio must be in [0, 1), got {self.range_ratio}")
            if self.prefix_len:
                self._check_document(where)
        if self.document_unit and not (
                self.kind is ScenarioKind.PHASES and self.prefix_len > 0
                and 1 <= self.document_unit <= self.prefix_len // 2):
            raise UserError(f"{where}: document_unit {self.document_unit} needs phases with "
                            f"prefix_len > 0 and 1 <= document_unit <= prefix_len / 2 (the "
                            f"passage recurs at least twice in the document)")
        if self.document_shuffle and not self.document_unit:
            raise UserError(f"{where}: document_shuffle needs a document_unit (the passage "
                            f"whose tokens it shuffles)")

    def _check_document(self, where: str) -> None:
        """phases over a shared document: every prompt is longer than it, each tail shorter."""
        lo = int(self.input_len * (1 - self.range_ratio))
        hi = int(self.input_len * (1 + self.range_ratio))
        if self.kind is not ScenarioKind.PHASES:
            raise UserError(f"{where}: {self.kind.value} takes no prefix_len (phases and "
                            f"prefix_repetition do)")
        if self.prefix_len < 0:
            raise UserError(f"{where}: prefix_len must be >= 0, got {self.prefix_len}")
        if not self.prefix_len < lo or hi - self.prefix_len >= self.prefix_len:
            raise UserError(f"{where}: phases with prefix_len {self.prefix_len} needs every prompt "
                            f"longer than it and every tail shorter than it (prompts "
                            f"{lo}..{hi} tokens)")

    @property
    def batch_size(self) -> int:
        """Requests in flight together: min(concurrency, num_requests) (the dry-run assumption)."""
        return min(self.concurrency, self.num_requests)


@dataclass(frozen=True, slots=True)
class Experiment:
    name: str
    arms: tuple[Arm, ...]
    scenarios: tuple[Scenario, ...]
    baseline: str
    replicates: int = 5
    warmup: int = 1  # warm-up trials (discarded) before each measured trial
    seed: int = 0
    backend: BackendKind = BackendKind.ENGINE
    backend_options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if not self.arms:
            raise UserError("experiment: `arms` is empty; give at least one arm")
        if not self.scenarios:
            raise UserError("experiment: `scenarios` is empty; give at least one scenario")
        for what, names in (("arm", [a.name for a in self.arms]),
                            ("scenario", [s.name for s in self.scenarios])):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise UserError(f"experiment: duplicate {what} name(s): {', '.join(dupes)}")
        if self.baseline not in {a.name for a in self.arms}:
            raise UserError(
                f"experiment: baseline {self.baseline!r} is not an arm "
                f"(arms: {', '.join(a.name for a in self.arms)})"
            )
        if self.replicates < 1:
            raise UserError(f"experiment: replicates must be >= 1, got {self.replicates}")
        if self.warmup < 0:
            raise UserError(f"experiment: warmup must be >= 0, got {self.warmup}")
        warm = [a.name for a in self.arms if a.warm]
        if warm and self.backend is not BackendKind.ENGINE:
            raise UserError(f"experiment: `warm` arms ({', '.join(warm)}) need backend engine "
                            "(a server's policy lives in the server)")

    def replicates_of(self, scenario: Scenario) -> int:
        """The scenario's own replicate count, else the experiment's."""
        return self.replicates if scenario.replicates is None else scenario.replicates

    @property
    def max_replicates(self) -> int:
        return max(self.replicates_of(s) for s in self.scenarios)

    def arm(self, name: str) -> Arm:
        for a in self.arms:
            if a.name == name:
                return a
        raise UserError(f"no arm named {name!r}")

    def scenario(self, name: str) -> Scenario:
        for s in self.scenarios:
            if s.name == name:
                return s
        raise UserError(f"no scenario named {name!r}")
