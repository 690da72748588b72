"""interlock: human approval for AI-agent tool calls — pause, review, resume, exactly once."""

from .agent import Agent
from .audit.records import AuditProblem
from .audit.verify import AuditHead, AuditReport
from .decisions import Approve, Decision, Edit, EditedAction, Reject, Respond, Reviewer
from .errors import (
    CallNotFound,
    CallSettled,
    ConcurrencyError,
    ConfigurationError,
    InterlockError,
    InterlockWarning,
    InterruptConflict,
    InvalidDecision,
    InvalidText,
    MissingDependency,
    ModelError,
    NoPendingInterrupt,
    NotAuthorized,
    PositionTaken,
    ResumeError,
    RunLimitExceeded,
    StaleInterrupt,
    StaleRevision,
    StorageError,
    SubAgentMismatch,
    SubAgentThread,
    ThreadBusy,
    ThreadInterrupted,
    ThreadNotFound,
    UnseenRequest,
    VersionConflict,
)
from .events import (
    Event,
    InterruptRaised,
    ModelTextDelta,
    RunCompleted,
    ToolCallProposed,
    ToolFinished,
    ToolStarted,
)
from .hitl import HumanInTheLoop, InterruptOn
from .inputs import Command
from .interrupts import Interrupt, PathStep, interrupt
from .messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from .middleware import Middleware, ModelTurn, ToolCallRequest
from .models.base import Model
from .models.scripted import ScriptedModel
from .result import RunResult
from .review_request import ActionRequest, HITLRequest, ReviewConfig
from .storage.base import (
    AuditRecord,
    CallState,
    Checkpointer,
    JournalEntry,
    ParentLink,
    RememberedApproval,
    ThreadRecord,
)
from .storage.memory import MemoryCheckpointer
from .storage.sqlite import SqliteCheckpointer
from .thread_state import ThreadState
from .tools import Tool, ToolContext, ToolError, ToolSource, tool

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # optional backends and adapters load lazily, so `import interlock` stays fast and a
    # missing extra is reported only when the feature is used
    if name == "PostgresCheckpointer":
        from .storage.postgres import PostgresCheckpointer

        return PostgresCheckpointer
    if name == "OpenAIChat":
        from .models.openai import OpenAIChat

        return OpenAIChat
    if name == "AnthropicChat":
        from .models.anthropic import AnthropicChat

        return AnthropicChat
    raise AttributeError(f"module 'interlock' has no attribute {name!r}")


__all__ = [
    "ActionRequest",
    "Agent",
    "Approve",
    "AssistantMessage",
    "AuditHead",
    "AuditProblem",
    "AuditRecord",
    "AuditReport",
    "CallNotFound",
    "CallSettled",
    "CallState",
    "Checkpointer",
    "Command",
    "ConcurrencyError",
    "ConfigurationError",
    "Decision",
    "Edit",
    "EditedAction",
    "Event",
    "HITLRequest",
    "HumanInTheLoop",
    "InterlockError",
    "InterlockWarning",
    "Interrupt",
    "InterruptConflict",
    "InterruptOn",
    "InterruptRaised",
    "InvalidDecision",
    "InvalidText",
    "JournalEntry",
    "MemoryCheckpointer",
    "Message",
    "Middleware",
    "MissingDependency",
    "Model",
    "ModelError",
    "ModelTextDelta",
    "ModelTurn",
    "NoPendingInterrupt",
    "NotAuthorized",
    "ParentLink",
    "PathStep",
    "PositionTaken",
    "Reject",
    "RememberedApproval",
    "Respond",
    "ResumeError",
    "ReviewConfig",
    "Reviewer",
    "RunCompleted",
    "RunLimitExceeded",
    "RunResult",
    "ScriptedModel",
    "SqliteCheckpointer",
    "StaleInterrupt",
    "StaleRevision",
    "StorageError",
    "SubAgentMismatch",
    "SubAgentThread",
    "SystemMessage",
    "ThreadBusy",
    "ThreadInterrupted",
    "ThreadNotFound",
    "ThreadRecord",
    "ThreadState",
    "Tool",
    "ToolCall",
    "ToolCallProposed",
    "ToolCallRequest",
    "ToolContext",
    "ToolError",
    "ToolFinished",
    "ToolMessage",
    "ToolSource",
    "ToolStarted",
    "UnseenRequest",
    "Usage",
    "UserMessage",
    "VersionConflict",
    "interrupt",
    "tool",
]
