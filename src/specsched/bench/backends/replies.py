"""What an OpenAI-compatible server may answer to one streaming /v1/completions request.

A benchmark must not turn a server's word into a measurement unchecked (a lying `usage` of 10^9
tokens once became 10^10 tok/s). A reply that breaks these rules fails the trial (`TrialFailed`,
recorded as a failed trial), never a number:

- the stream is lines ending with `data: [DONE]`; a line is at most `MAX_LINE_BYTES`; at most
  `2 * max_tokens + 16` `data:` lines (each chunk carries at least one token; the slack covers
  role, finish and usage chunks), so a runaway server cannot fill memory;
- every `data:` payload but `[DONE]` is one JSON object; `choices` is absent, null or a list of
  objects whose `text` is absent, null or a string; `usage` is absent, null or an object;
- chunks carrying text: at most `max_tokens`;
- `usage.completion_tokens`, when sent: an int (not a bool or float) in
  [chunks carrying text, max_tokens]: `max_tokens` caps every server, speculation included;
- `usage.prompt_tokens`, when sent: an int. Token-id prompts (`tokenizer: server`) of n tokens:
  in [n, n + PROMPT_SLACK] (a server may add BOS or special tokens, never drops any). Word prompts
  of n words: in [n/2 - PROMPT_SLACK, 8n + PROMPT_SLACK] (BPE tokenizers give ~1.3 tokens per
  English word; the band leaves room for any real tokenizer and none for a lie).

Without `usage` the counts are the chunks carrying text and the prompt length sent (as before).
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from specsched.bench.backends.base import TrialFailed

MAX_LINE_BYTES = 1 << 20
PROMPT_SLACK = 8
WORD_TOKENS = (0.5, 8.0)  # plausible tokens per prompt word: (min, max)


def one_line(text: str, limit: int = 300) -> str:
    """Whitespace (newlines included) collapsed, cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def bad_reply(reason: str) -> TrialFailed:
    return TrialFailed(one_line(f"bad server reply: {reason}"))


@dataclass(frozen=True, slots=True)
class ReplyLimits:
    """What one request asked for, which bounds what its reply may claim."""

    prompt_len: int  # pieces sent: token ids (token_ids) or whitespace words
    max_tokens: int
    token_ids: bool

    def __post_init__(self) -> None:
        if self.prompt_len < 0 or self.max_tokens < 0:
            raise ValueError("ReplyLimits: prompt_len and max_tokens must be >= 0")

    @property
    def prompt_range(self) -> tuple[int, int]:
        """Inclusive bounds on a plausible `usage.prompt_tokens`."""
        n = self.prompt_len
        if self.token_ids:
            return n, n + PROMPT_SLACK
        lo, hi = WORD_TOKENS
        return max(0, math.floor(n * lo) - PROMPT_SLACK), math.ceil(n * hi) + PROMPT_SLACK

    @property
    def max_data_lines(self) -> int:
        return 2 * self.max_tokens + 16


async def data_payloads(chunks: AsyncIterator[bytes], limits: ReplyLimits) -> AsyncIterator[str]:
    """The `data:` payloads of a server-sent-event stream, up to `[DONE]`, with bounded memory."""
    buf = b""
    count = 0
    async for piece in chunks:
        buf += piece
        while (cut := buf.find(b"\n")) >= 0:
            line, buf = buf[:cut].decode(errors="replace").strip(), buf[cut + 1:]
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                return
            count += 1
            if count > limits.max_data_lines:
                raise bad_reply(f"more than {limits.max_data_lines} stream chunks for "
                                f"max_tokens={limits.max_tokens}")
            yield data
        if len(buf) > MAX_LINE_BYTES:
            raise bad_reply(f"a stream line longer than {MAX_LINE_BYTES} bytes")
    tail = buf.decode(errors="replace").strip()
    if not (tail.startswith("data:") and tail[5:].strip() == "[DONE]"):
        raise bad_reply("the stream ended without `data: [DONE]` (cut off)")


def parse_chunk(data: str) -> dict[str, Any]:
    """One stream payload as a JSON object."""
    try:
        obj = json.loads(data)
    except ValueError as exc:
        raise bad_reply(f"malformed JSON in a stream chunk ({exc}): {data[:80]!r}") from None
    if not isinstance(obj, dict):
        raise bad_reply(f"a stream chunk is a JSON {type(obj).__name__}, not an object")
    return obj


def chunk_has_text(chunk: dict[str, Any]) -> bool:
    """Whether a chunk streams text (checks the types of `choices` and their `text`)."""
    choices = chunk.get("choices")
    if choices is None:
        return False
    if not isinstance(choices, list):
        raise bad_reply(f"`choices` is a {type(choices).__name__}, not a list")
    has_text = False
    for c in choices:
        if not isinstance(c, dict):
            raise bad_reply(f"a choice is a {type(c).__name__}, not an object")
        text = c.get("text")
        if text is not None and not isinstance(text, str):
            raise bad_reply(f"choice text is a {type(text).__name__}, not a string")
        has_text = has_text or bool(text)
    return has_text


def chunk_usage(chunk: dict[str, Any]) -> dict[str, Any] | None:
    usage = chunk.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise bad_reply(f"`usage` is a {type(usage).__name__}, not an object")
    return usage or None


def _count(usage: dict[str, Any], name: str) -> int | None:
    value = usage.get(name)
    if value is not None and type(value) is not int:
        raise bad_reply(f"usage.{name} is {value!r}, not an integer")
    return value


def checked_counts(usage: dict[str, Any] | None, text_chunks: int,
                   limits: ReplyLimits) -> tuple[int, int]:
    """(prompt tokens, output tokens) of a finished reply, by the rules in the module doc."""
    if text_chunks > limits.max_tokens:
        raise bad_reply(f"{text_chunks} text chunks for max_tokens={limits.max_tokens}")
    prompt = completion = None
    if usage is not None:
        prompt, completion = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    if completion is not None and not text_chunks <= completion <= limits.max_tokens:
        raise bad_reply(f"usage.completion_tokens={completion} outside [{text_chunks}, "
                        f"{limits.max_tokens}] (text chunks streamed, max_tokens)")
    lo, hi = limits.prompt_range
    if prompt is not None and not lo <= prompt <= hi:
        sent = "token ids" if limits.token_ids else "words"
        raise bad_reply(f"usage.prompt_tokens={prompt} implausible for a prompt of "
                        f"{limits.prompt_len} {sent} (expected {lo}..{hi})")
    return (limits.prompt_len if prompt is None else prompt,
            text_chunks if completion is None else completion)
