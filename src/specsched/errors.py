"""User-facing error types. The CLI turns every `UserError` into one `error: ...` line, exit 2."""

from __future__ import annotations


class UserError(Exception):
    """Bad input from the user (a file, a number, a schedule); the message says what to fix."""


class ScheduleError(UserError, ValueError):
    """An invalid speculative-token schedule. The message names the entry index and the rule."""
