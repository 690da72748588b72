"""One key from a real pseudo-terminal: keys typed after the prompt are kept, however late the
process reads them; keys typed before the prompt was shown are dropped (a key pressed ahead
must not decide a request nobody saw, invariant 1)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pexpect
import pytest

from .helpers import child_env

# the child is slow where a loaded machine is slow: after the prompt is on screen and before
# it reads (the test types in that gap), and before the prompt (the test types ahead)
CHILD = textwrap.dedent("""
    import sys, time
    from interlock.cli._keys import read_key

    def prompt():
        print("> ", end="", flush=True)
        time.sleep(0.6)

    for _ in range(int(sys.argv[1])):
        print("busy", flush=True)
        time.sleep(0.6)
        try:
            key = read_key(prompt)
        except (KeyboardInterrupt, EOFError) as exc:
            key = type(exc).__name__
        print(f"key={key!r}", flush=True)
""")


def spawn(tmp_path: Path, rounds: int) -> pexpect.spawn:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return pexpect.spawn(sys.executable, [str(script), str(rounds)], env=child_env(),
                         encoding="utf-8", timeout=30)


def test_a_key_typed_just_after_the_prompt_is_kept_and_typed_ahead_is_dropped(
        tmp_path: Path) -> None:
    child = spawn(tmp_path, 3)
    try:
        # typed ahead, while the child is busy before showing the prompt: dropped
        child.expect("busy")
        child.send("r")
        # typed at once when the prompt shows, while the child is still slow to read: kept
        child.expect("> ")
        child.send("a")
        child.expect(r"key='(.*?)'")
        assert child.match.group(1) == "a"
        # the terminal is back in its normal mode between keys, and each key is read once
        child.expect("busy")
        child.expect("> ")
        child.send("e")
        child.expect(r"key='(.*?)'")
        assert child.match.group(1) == "e"
        child.expect("> ")
        child.send("x")
        child.expect(r"key='(.*?)'")
        assert child.match.group(1) == "x"
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


@pytest.mark.parametrize(("key", "raised"), [("\x03", "KeyboardInterrupt"),
                                              ("\x04", "EOFError")])
def test_ctrl_c_and_ctrl_d_stop_the_read_as_with_click(tmp_path: Path, key: str,
                                                       raised: str) -> None:
    child = spawn(tmp_path, 1)
    try:
        child.expect("> ")
        child.send(key)
        child.expect(r"key='(.*?)'")
        assert child.match.group(1) == raised
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
