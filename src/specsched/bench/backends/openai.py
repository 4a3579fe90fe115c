"""Any OpenAI-compatible server (vLLM, SGLang, llama.cpp server) via streaming /v1/completions.

Per request: TTFT (submission to first streamed text), ITL (gaps between later chunks), latency;
per trial: wall time and output tok/s. Token counts come from the server's `usage` when it sends it
(`stream_options.include_usage`), else one token per streamed chunk (exact for vLLM/SGLang, which
stream per token unless speculation bundles several: then `usage` is what counts).

Prompt lengths: `tokenizer: words` (default) cuts prompts of N whitespace words from the corpus, an
approximation (English runs ~1.3 tokens per word with BPE tokenizers); `tokenizer: server` encodes
the corpus once with vLLM/SGLang's POST /tokenize and sends token-id prompts of exactly N tokens.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import httpx

from specsched.bench.backends.base import RequestResult, TrialResult, TrialSpec
from specsched.bench.backends.server import ManagedServer, check_loopback, is_ready
from specsched.bench.experiment import Arm, Sampling, ServerSpec
from specsched.bench.workload import build_prompts, corpus_text, corpus_words
from specsched.errors import UserError


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
    log_dir: str = "bench-server-logs"

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> OpenAIConfig:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(options) - known)
        if unknown:
            raise UserError(
                f"openai backend_options: unknown key(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(sorted(known))}"
            )
        opts = dict(options)
        if "tokenizer" in opts:
            try:
                opts["tokenizer"] = PromptTokenizer(opts["tokenizer"])
            except ValueError:
                raise UserError("openai backend_options.tokenizer: use words or server") from None
        return cls(**opts)


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
                            prompt_len: int) -> RequestResult:
    """Send one streaming request and time its chunks (seconds from submission)."""
    t0 = time.perf_counter()
    stamps: list[float] = []
    usage: dict[str, Any] = {}
    async with client.stream("POST", url, json=body) as resp:
        if resp.status_code != 200:
            text = (await resp.aread()).decode(errors="replace")[:300]
            raise UserError(f"POST {url} answered {resp.status_code}: {text}")
        async for line in resp.aiter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            if chunk.get("usage"):
                usage = chunk["usage"]
            if any(c.get("text") for c in chunk.get("choices") or ()):
                stamps.append(time.perf_counter() - t0)
    end = time.perf_counter() - t0
    ttft = stamps[0] if stamps else end
    itl = tuple(b - a for a, b in itertools.pairwise(stamps))
    return RequestResult(
        num_prompt_tokens=int(usage.get("prompt_tokens", prompt_len)),
        num_output_tokens=int(usage.get("completion_tokens", len(stamps))),
        ttft_s=ttft, latency_s=end, itl_s=itl,
    )


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
            resp = httpx.get(spec.base_url + "/v1/models", timeout=30)
            ok = resp.status_code == 200
            ids = [m.get("id") for m in resp.json().get("data", [])] if ok else []
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
                resp = httpx.post(spec.base_url + "/tokenize",
                                  json={"model": model, "prompt": corpus_text()}, timeout=300)
                tokens = resp.json().get("tokens") if resp.status_code == 200 else None
                if not tokens:
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
        t0 = time.perf_counter()
        results = asyncio.run(self._run_all(spec.base_url, bodies, trial))
        wall = time.perf_counter() - t0
        return TrialResult(tuple(results), wall, None, {"model": model})

    async def _run_all(self, base_url: str, bodies: list[dict[str, Any]],
                       trial: TrialSpec) -> list[RequestResult]:
        sem = asyncio.Semaphore(trial.scenario.concurrency)
        limits = httpx.Limits(max_connections=trial.scenario.concurrency + 4)
        timeout = httpx.Timeout(self.config.request_timeout_s)
        url = base_url + "/v1/completions"
        async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:

            async def one(body: dict[str, Any], shape_len: int) -> RequestResult:
                async with sem:
                    return await stream_completion(client, url, body, shape_len)

            try:
                return list(await asyncio.gather(
                    *(one(b, s.num_prompt_tokens) for b, s in zip(bodies, trial.shapes))))
            except httpx.HTTPError as exc:
                raise UserError(f"request to {url} failed: {exc!r}") from None

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server, self._server_arm = None, None
