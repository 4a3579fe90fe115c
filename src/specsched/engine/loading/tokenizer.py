"""Tokenizers built from GGUF metadata (byte-level BPE) or read from tokenizer.json; chat template.

Known divergence: transformers' own GGUF->tokenizer conversion drops SmolLM2's Digits
pre-tokenizer, so runs of spaces before a digit ("+  6") tokenize differently there; we follow
the `smollm` pre-tokenizer of llama.cpp (digits split individually, then GPT-2 byte-level).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from tokenizers import AddedToken, Regex, Tokenizer, decoders, pre_tokenizers
from tokenizers.models import BPE

from specsched.errors import UserError

if TYPE_CHECKING:
    from gguf import GGUFReader

# llama.cpp `tokenizer.ggml.pre` -> split regex applied before byte-level mapping.
_GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

DEFAULT_CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# GGUF token types (gguf.TokenType): 3 = CONTROL, 4 = USER_DEFINED.
_CONTROL, _USER_DEFINED = 3, 4


def _pre_tokenizer(pre: str) -> pre_tokenizers.PreTokenizer:
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    if pre in ("smollm", "gpt2", "default", "starcoder", "refact"):
        return pre_tokenizers.Sequence(
            [
                pre_tokenizers.Digits(individual_digits=True),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
            ]
            if pre in ("smollm", "starcoder", "refact")
            else [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]
        )
    regex = {"llama-bpe": _LLAMA3_REGEX, "qwen2": _QWEN2_REGEX}.get(pre)
    if regex is None:
        raise UserError(
            f"unsupported GGUF pre-tokenizer {pre!r}; supported: smollm, gpt2, llama-bpe, qwen2"
        )
    split = pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False)
    return pre_tokenizers.Sequence([split, byte_level])


class TextTokenizer:
    """A `tokenizers.Tokenizer` plus the model's special ids and chat template."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        eos_token_ids: tuple[int, ...],
        bos_token_id: int | None,
        add_bos: bool,
        chat_template: str | None,
    ) -> None:
        self.tokenizer = tokenizer
        self.eos_token_ids = eos_token_ids
        self.bos_token_id = bos_token_id
        self.add_bos = add_bos
        self.chat_template = chat_template

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self.tokenizer.encode(text, add_special_tokens=False).ids
        if self.add_bos and self.bos_token_id is not None:
            ids = [self.bos_token_id, *ids]
        return ids

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens))

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        """Render messages with the model's template (jinja2), ending with the assistant turn."""
        import jinja2

        template = self.chat_template or DEFAULT_CHATML_TEMPLATE
        env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
        rendered: str = env.from_string(template).render(
            messages=messages, add_generation_prompt=True, bos_token="", eos_token=""
        )
        return rendered


def tokenizer_from_gguf(reader: GGUFReader) -> TextTokenizer:
    """Byte-level BPE from `tokenizer.ggml.*` (the GPT-2 family: SmolLM2, Llama 3, Qwen2)."""
    from specsched.engine.loading.gguf import field

    model = field(reader, "tokenizer.ggml.model")
    if model != "gpt2":
        raise UserError(
            f"unsupported GGUF tokenizer model {model!r}; only byte-level BPE ('gpt2') is supported"
        )
    tokens: list[str] = list(field(reader, "tokenizer.ggml.tokens"))
    types: list[int] = list(field(reader, "tokenizer.ggml.token_type", [1] * len(tokens)))
    merges = [tuple(m.split(" ", 1)) for m in field(reader, "tokenizer.ggml.merges", [])]
    vocab = {tok: i for i, tok in enumerate(tokens)}
    tok = Tokenizer(BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = _pre_tokenizer(str(field(reader, "tokenizer.ggml.pre", "gpt2")))
    tok.decoder = decoders.ByteLevel()
    added = [
        AddedToken(t, special=(ty == _CONTROL), normalized=False)
        for t, ty in zip(tokens, types, strict=True)
        if ty in (_CONTROL, _USER_DEFINED)
    ]
    tok.add_tokens(added)
    eos = field(reader, "tokenizer.ggml.eos_token_id")
    bos = field(reader, "tokenizer.ggml.bos_token_id")
    return TextTokenizer(
        tok,
        eos_token_ids=() if eos is None else (int(eos),),
        bos_token_id=None if bos is None else int(bos),
        add_bos=bool(field(reader, "tokenizer.ggml.add_bos_token", False)),
        chat_template=field(reader, "tokenizer.chat_template"),
    )


def tokenizer_from_hf_dir(
    path: Path, eos_token_ids: tuple[int, ...], bos_token_id: int | None
) -> TextTokenizer | None:
    """tokenizer.json (+ tokenizer_config.json for the chat template); None when absent."""
    tj = path / "tokenizer.json"
    if not tj.is_file():
        return None
    try:
        tok = Tokenizer.from_file(str(tj))
    except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
        raise UserError(f"{tj}: cannot load tokenizer ({exc})") from None
    template = None
    add_bos = False
    tc = path / "tokenizer_config.json"
    if tc.is_file():
        raw = json.loads(tc.read_text())
        template = raw.get("chat_template") if isinstance(raw.get("chat_template"), str) else None
        add_bos = bool(raw.get("add_bos_token", False))
    return TextTokenizer(tok, eos_token_ids, bos_token_id, add_bos, template)
