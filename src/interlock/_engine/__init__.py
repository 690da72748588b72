"""The run engine: everything that moves a thread from one stored state to the next.

``perform`` is the one entry: it loads a thread into a :class:`ThreadTxn`, runs one step
(start, resume, recover, expire, a sub-agent's start, ...) from :mod:`.loop` or
:mod:`.decide`, and commits once. Only :mod:`interlock.agent` imports this package
(``tests/test_structure.py`` pins it); docs/internals.md maps its modules.
"""

from . import decide, loop
from .children import child_state, state_of
from .deps import RunDeps
from .execute import build_tool_handler, finish_pending
from .perform import Step, T, perform
from .reads import run_result
from .resume import ResumeSpec
from .snapshots import DEFAULT_THREADS, SnapshotCache
from .spill import held_threads, only_here
from .texts import public_interrupt
from .txn import Sink, ThreadTxn

__all__ = [
    "DEFAULT_THREADS",
    "ResumeSpec",
    "RunDeps",
    "Sink",
    "SnapshotCache",
    "Step",
    "T",
    "ThreadTxn",
    "build_tool_handler",
    "child_state",
    "decide",
    "finish_pending",
    "held_threads",
    "loop",
    "only_here",
    "perform",
    "public_interrupt",
    "run_result",
    "state_of",
]
