"""The agent ``bench/scale.py`` serves: the benchmark scenario's gated ``write_file``.
``interlock serve scale_agent:agent --db URL`` replaces its checkpointer."""

from __future__ import annotations

from il_side import script
from scenario import TOOL_NAME, TOOL_RESULT

from interlock import Agent, HumanInTheLoop, ScriptedModel, tool


@tool(name=TOOL_NAME)
def write_file(path: str, content: str) -> str:
    """Write a text file in the workspace."""
    return TOOL_RESULT


agent = Agent(model=ScriptedModel(script), tools=[write_file],
              middleware=[HumanInTheLoop(interrupt_on={TOOL_NAME: True})])
