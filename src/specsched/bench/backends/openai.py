"""Any OpenAI-compatible server (vLLM, SGLang, llama.cpp server) via streaming /v1/completions.

Per request: TTFT (submission to first streamed text), ITL (gaps between later chunks), latency;
per trial: wall time and output tok/s. Token counts come from the server's `usage` when it sends it
(`stream_options.include_usage`), else one token per streamed chunk (exact for vLLM/SGLang, which
stream per token unless speculation bundles several: then `usage` is what counts).

Prompt lengths: `tokenizer: words` (default) cuts prompts of N whitespace words from the corpus, an
approximation (English runs ~1.3 tokens per word with BPE tokenizers); `tokenizer: server` encodes
the corpus once with vLLM/SGLang's POST /tokenize and sends token-id prompts of exactly N tokens.

Replies are checked (`replies`): a malformed chunk or impossible token counts fail the trial
(recorded as failed), never become a number. A server that cannot be reached, answers a non-200
status or has no model/tokenizer is a UserError that stops the run (`--resume` continues it).
Server logs go to `log_dir`: by default `<results stem>-server-logs` beside the results file
(`from_options(..., results=...)`); an explicit relative `log_dir` is relative to the working
folder.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import httpx

from specsched.bench.backends.base import RequestResult, TrialFailed, TrialResult, TrialSpec
from specsched.bench.backends.replies import (
    ReplyLimits,
    checked_counts,
    chunk_has_text,
    chunk_usage,
    data_payloads,
    one_line,
    parse_chunk,
)
from specsched.bench.backends.server import ManagedServer, check_loopback, is_ready
from specsched.bench.experiment import Arm, Sampling, ServerSpec
from specsched.corpus import build_prompts, corpus_text, corpus_words
from specsched.errors import UserError
from specsched.io import check_keys


class PromptTokenizer(str, Enum):
    WORDS = "words"
    SERVER = "server"


@dataclass(frozen=True, slots=True)
class OpenAIConfig:
    base_url: str = "http://127.0.0.1:8000"  # for arms without a `server` section
    model: str | None = None
    tokenizer: PromptTokenizer = PromptTokenizer.WORDS
    ignore_eos: bool = True  # vLLM/SGLang extension: generate exactly output_len tokens
    request_timeout_s: float = 600.0
    allow_remote: bool = False
    log_dir: str = "bench-server-logs"  # relative: to the working folder (see from_options)

    @classmethod
    def from_options(cls, options: Mapping[str, Any], results: Path | None = None) -> OpenAIConfig:
        """Build from `backend_options`; without `log_dir`, server logs go beside `results`."""
        opts = check_keys(options, set(cls.__dataclass_fields__), "openai backend_options")
        if "tokenizer" in opts:
            try:
                opts["tokenizer"] = PromptTokenizer(opts["tokenizer"])
            except ValueError:
                raise UserError("openai backend_options.tokenizer: use words or server") from None
        if "log_dir" not in opts and results is not None:
            opts["log_dir"] = str(server_log_dir(results))
        return cls(**opts)


def server_log_dir(results: Path) -> Path:
    """`out/results.jsonl` -> `out/results-server-logs` (like `specsched report`'s default)."""
    return results.with_name(results.stem + "-server-logs")


def completion_body(model: str, prompt: str | list[int], max_tokens: int, sampling: Sampling,
                    seed: int, ignore_eos: bool) -> dict[str, Any]:
    """The streaming /v1/completions request body."""
    body: dict[str, Any] = {
        "model": model, "prompt": prompt, "max_tokens": max_tokens, "stream": True,
        "stream_options": {"include_usage": True}, "temperature": sampling.temperature,
        "top_p": sampling.top_p, "seed": seed,
    }
    if sampling.top_k:
        body["top_k"] = sampling.top_k
    if ignore_eos:
        body["ignore_eos"] = True
    return body


async def stream_completion(client: httpx.AsyncClient, url: str, body: dict[str, Any],
                            limits: ReplyLimits, trial_t0: float | None = None) -> RequestResult:
    """Send one streaming request and time its chunks (seconds from submission; `trial_t0`: the
    trial's start on `time.perf_counter`'s clock, for `submit_s`). A reply that breaks the rules
    of `replies` raises TrialFailed; a non-200 status, UserError."""
    t0 = time.perf_counter()
    stamps: list[float] = []
    usage: dict[str, Any] | None = None
    async with client.stream("POST", url, json=body) as resp:
        if resp.status_code != 200:
            head = b""
            async for piece in resp.aiter_bytes():
                head += piece
                if len(head) >= 300:
                    break
            raise UserError(f"POST {url} answered {resp.status_code}: "
                            f"{one_line(head.decode(errors='replace'))}")
        async for data in data_payloads(resp.aiter_bytes(), limits):
            chunk = parse_chunk(data)
            usage = chunk_usage(chunk) or usage
            if chunk_has_text(chunk):
                stamps.append(time.perf_counter() - t0)
                checked_counts(None, len(stamps), limits)  # stop a runaway stream early
    end = time.perf_counter() - t0
    prompt_tokens, output_tokens = checked_counts(usage, len(stamps), limits)
    ttft = stamps[0] if stamps else end
    itl = tuple(b - a for a, b in itertools.pairwise(stamps))
    return RequestResult(num_prompt_tokens=prompt_tokens, num_output_tokens=output_tokens,
                         ttft_s=ttft, latency_s=end, itl_s=itl,
                         submit_s=0.0 if trial_t0 is None else t0 - trial_t0)


def _json_object(resp: httpx.Response) -> dict[str, Any] | None:
    """The body of a 200 answer when it is a JSON object, else None."""
    if resp.status_code != 200:
        return None
    try:
        obj = resp.json()
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _call(method: str, url: str, **kwargs: Any) -> httpx.Response:
    try:
        return httpx.request(method, url, **kwargs)
    except httpx.HTTPError as exc:
        raise UserError(f"{method} {url} failed: {one_line(repr(exc))}") from None


class OpenAIBackend:
    """Keeps at most one managed server running: the current arm's, restarted on arm change."""

    def __init__(self, config: OpenAIConfig) -> None:
        self.config = config
        self._server: ManagedServer | None = None
        self._server_arm: str | None = None
        self._models: dict[str, str] = {}
        self._pieces: dict[tuple[str, str], Sequence[Any]] = {}

    def _spec(self, arm: Arm) -> ServerSpec:
        return arm.server or ServerSpec(base_url=self.config.base_url, model=self.config.model)

    def _ensure_server(self, arm: Arm) -> ServerSpec:
        spec = self._spec(arm)
        check_loopback(spec.base_url, self.config.allow_remote)
        if not spec.command:
            if self._server is not None:
                self._server.stop()
                self._server, self._server_arm = None, None
            if not is_ready(spec.base_url):
                raise UserError(f"no server answers at {spec.base_url} (arm {arm.name!r})")
            return spec
        if self._server_arm != arm.name:
            if self._server is not None:
                self._server.stop()
                self._server, self._server_arm = None, None
            server = ManagedServer(spec, Path(self.config.log_dir) / f"{arm.name}.log")
            server.start()
            self._server, self._server_arm = server, arm.name
        return spec

    def _model(self, spec: ServerSpec) -> str:
        if spec.model:
            return spec.model
        if spec.base_url not in self._models:
            obj = _json_object(_call("GET", spec.base_url + "/v1/models", timeout=30)) or {}
            data = obj.get("data")
            ids = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)
                   and m["id"]] if isinstance(data, list) else []
            if not ids:
                raise UserError(f"{spec.base_url}/v1/models lists no model; set server.model")
            self._models[spec.base_url] = ids[0]
        return self._models[spec.base_url]

    def _corpus(self, spec: ServerSpec, model: str) -> Sequence[Any]:
        mode = self.config.tokenizer
        key = (spec.base_url if mode is PromptTokenizer.SERVER else "", model)
        if key not in self._pieces:
            if mode is PromptTokenizer.WORDS:
                self._pieces[key] = corpus_words()
            else:
                resp = _call("POST", spec.base_url + "/tokenize",
                             json={"model": model, "prompt": corpus_text()}, timeout=300)
                tokens = (_json_object(resp) or {}).get("tokens")
                if not (isinstance(tokens, list) and tokens
                        and all(type(t) is int and t >= 0 for t in tokens)):
                    raise UserError(
                        f"{spec.base_url}/tokenize failed ({resp.status_code}); this server has no "
                        f"tokenize endpoint: use backend_options.tokenizer: words"
                    )
                self._pieces[key] = tokens
        return self._pieces[key]

    def run_trial(self, trial: TrialSpec) -> TrialResult:
        spec = self._ensure_server(trial.arm)
        model = self._model(spec)
        pieces = self._corpus(spec, model)
        prompts = build_prompts(trial.shapes, pieces, trial.seed)
        as_text = self.config.tokenizer is PromptTokenizer.WORDS
        bodies = [
            completion_body(model, " ".join(p) if as_text else list(p), shape.output_len,
                            trial.scenario.sampling, trial.seed + i, self.config.ignore_eos)
            for i, (p, shape) in enumerate(zip(prompts, trial.shapes))
        ]
        checks = [ReplyLimits(len(p), shape.output_len, token_ids=not as_text)
                  for p, shape in zip(prompts, trial.shapes)]
        t0 = time.perf_counter()
        results = asyncio.run(self._run_all(spec.base_url, bodies, checks, trial))
        wall = time.perf_counter() - t0
        return TrialResult(tuple(results), wall, None, {"model": model})

    async def _run_all(self, base_url: str, bodies: list[dict[str, Any]],
                       checks: list[ReplyLimits], trial: TrialSpec) -> list[RequestResult]:
        """Every request of the trial, `concurrency` at a time. All run to the end even when one
        fails (no orphaned tasks); then a UserError wins over a TrialFailed."""
        sem = asyncio.Semaphore(trial.scenario.concurrency)
        trial_t0 = time.perf_counter()
        limits = httpx.Limits(max_connections=trial.scenario.concurrency + 4)
        timeout = httpx.Timeout(self.config.request_timeout_s)
        url = base_url + "/v1/completions"
        async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:

            async def one(body: dict[str, Any], lim: ReplyLimits) -> RequestResult:
                async with sem:
                    try:
                        return await stream_completion(client, url, body, lim, trial_t0)
                    except (httpx.RemoteProtocolError, httpx.DecodingError) as exc:
                        why = one_line(str(exc))
                        raise TrialFailed(f"broken reply from {url}: {why}") from None
                    except httpx.HTTPError as exc:
                        why = one_line(repr(exc))
                        raise UserError(f"request to {url} failed: {why}") from None

            outcomes = await asyncio.gather(*(one(b, lim) for b, lim in zip(bodies, checks)),
                                            return_exceptions=True)
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        for kind in (UserError, TrialFailed, BaseException):
            first = next((e for e in errors if isinstance(e, kind)), None)
            if first is not None:
                raise first
        return [o for o in outcomes if isinstance(o, RequestResult)]

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server, self._server_arm = None, None
