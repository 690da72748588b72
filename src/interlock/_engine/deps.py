"""What the run engine needs from its agent, and nothing more."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..authz import ToolPolicy
from ..hitl import HumanInTheLoop, InterruptOn
from ..messages import AssistantMessage, Message, ToolCall
from ..middleware import BoundMiddleware, ModelTurn, ToolCallHandler
from ..models.base import Model
from ..observe.hooks import Observer
from ..tools import Tool
from .snapshots import SnapshotCache


@dataclass(frozen=True)
class RunDeps:
    """The agent's configuration as the engine sees it (built by ``Agent`` per run)."""

    model: Model
    tools: Sequence[Tool]
    tools_by_name: Mapping[str, Tool]
    middleware: Sequence[BoundMiddleware]
    tool_handler: ToolCallHandler
    system_prompt: str | None
    max_turns: int
    lease: timedelta
    clock: Callable[[], datetime]
    owner: str
    tool_grace: timedelta
    """How long a cancelled run waits for a tool that is still running (see docs)."""
    snapshots: SnapshotCache | None = None
    """Message prefixes of recently used threads (a continued thread reads only what is new)."""
    agent_name: str = "agent"
    """The agent's name (shown in the paths of its sub-agents' requests)."""
    observer: Observer | None = None
    """Traces, metrics and event logs of the process (:mod:`interlock.observe`); None: off."""

    def allows_approve(self, tool_name: str) -> bool:
        """Whether every middleware lets ``tool_name`` be approved (for cross-tool edits)."""
        return all(m.allows_approve(tool_name) for m in self.middleware
                   if m.allows_approve is not None)

    def tool_policies(self, tool_name: str) -> list[ToolPolicy]:
        """What an edit *into* ``tool_name`` must satisfy: whether it may be approved, and the
        roles each middleware requires for it (:mod:`interlock.authz`)."""
        out = [ToolPolicy(tool_name, self.allows_approve(tool_name))]
        for m in self.middleware:
            if m.reviewers_for is not None and (roles := m.reviewers_for(tool_name)) is not None:
                out.append(ToolPolicy(tool_name, True, tuple(roles)))
        return out

    def declared_policy(self, tool_name: str, marked_by: str | None) -> InterruptOn | None:
        """The rules ``tool_name``'s policy declares now, for a call the middleware named in
        ``marked_by`` paused (``A+B``: both reviewed it): a policy with a ``when`` predicate
        applies only to calls it paused itself (its ``when`` held for them; it is not
        evaluated again)."""
        marked = (marked_by or "").split("+")
        for m in self.middleware:
            if m.policy_for is not None and isinstance(p := m.policy_for(tool_name),
                                                       InterruptOn):
                return p if p.when is None or m.name in marked else None
        return None

    def describe(self, call: ToolCall, thread_id: str,
                 messages: Sequence[Message]) -> str | None:
        """What the policy that gates ``call``'s tool tells its reviewer of it (a
        ``HumanInTheLoop`` description, worked out for these arguments); ``None``: no such
        policy describes it."""
        for m in self.middleware:
            if isinstance(m.obj, HumanInTheLoop) and isinstance(
                    m.policy_for(call.name) if m.policy_for is not None else None, InterruptOn):
                message = AssistantMessage(content="", tool_calls=[call])
                turn = ModelTurn(thread_id=thread_id, message=message,
                                 messages=[*messages, message], tools=self.tools_by_name)
                return m.obj.describe(call, turn)
        return None

    def schema(self, tool_name: str) -> dict[str, Any]:
        tool = self.tools_by_name.get(tool_name)
        return dict(tool.args_schema) if tool else {}
