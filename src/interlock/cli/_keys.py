"""Read one key from the reviewer's terminal, keeping every key typed after the prompt.

The terminal is put in raw mode *before* the prompt is shown. Entering raw mode discards what
was typed ahead (``TCSAFLUSH``): a key pressed before a request was on screen must not decide
it. Keys typed once the prompt is visible are kept, however late the process gets to reading
them (showing the prompt first and entering raw mode afterwards would drop them).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import click

try:  # POSIX terminals
    import termios
    import tty
except ImportError:  # pragma: no cover - Windows: click reads the console's keys
    termios = None  # type: ignore[assignment]
    tty = None  # type: ignore[assignment]

__all__ = ["read_key"]


def read_key(show_prompt: Callable[[], None]) -> str:
    """Show the prompt with raw mode already on, then return the key pressed.

    Ctrl-C raises ``KeyboardInterrupt`` and Ctrl-D ``EOFError``, as with ``click.getchar``;
    ``""`` means the input ended. Without a terminal, ``OSError`` or ``termios.error``.
    When stdin is not a terminal, the key is read by ``click.getchar`` (which falls back to
    ``/dev/tty``, and which ``click.testing.CliRunner`` feeds from its input).
    """
    if termios is None or tty is None or not sys.stdin.isatty():
        # no POSIX terminal on stdin (Windows, keys from /dev/tty behind a pipe, or a test
        # runner's input): click reads the key as it always has
        show_prompt()
        return click.getchar()
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setraw(fd)  # TCSAFLUSH: drops what was typed before the prompt is shown
        show_prompt()
        sys.stdout.flush()
        data = os.read(fd, 32)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    ch = data.decode(sys.stdin.encoding or "utf-8", "replace")
    if ch == "\x03":
        raise KeyboardInterrupt
    if ch == "\x04":
        raise EOFError
    return ch
