"""`specsched` command line: parses, builds configs, calls the library, renders with rich.

Each subcommand lives in its own module exposing `register(subparsers)`; heavy imports (torch)
happen inside the command's run function so `specsched check` stays light.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from specsched.errors import UserError
from specsched.io import show_text

MAX_ERROR_CHARS = 2000

# Subcommand modules under specsched.cli, in help order.
COMMAND_MODULES: tuple[str, ...] = (
    "check",
    "route",
    "export",
    "generate",
    "profile",
    "plan",
    "tune",
    "bench",
    "report",
    "demo",
    "microbench",
)


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse that reports usage errors as one `error: ...` line with exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {show_text(message, MAX_ERROR_CHARS)}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog="specsched",
        description="Choose, prove and run speculative-token schedules (K by batch x context).",
    )
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=OneLineArgumentParser
    )
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"specsched.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"specsched.cli.{name}":
                continue  # command not built yet
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        rc: int = args.func(args)
    except UserError as exc:  # one line whatever the message holds (user text is escaped)
        print(f"error: {show_text(str(exc), MAX_ERROR_CHARS)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # stdout closed early (e.g. `| head`): not an error of ours; silence the flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return rc
