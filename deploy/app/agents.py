"""The agent the image serves (`interlock serve agents:agent`): replace with your own.

The thread store comes from ``INTERLOCK_DB`` (``interlock serve`` replaces the agent's own
checkpointer with it); the model from ``AGENT_MODEL`` (default ``openai:gpt-4.1-mini``, which
reads ``OPENAI_API_KEY``).
"""

from __future__ import annotations

import os

from interlock import Agent, HumanInTheLoop, InterruptOn, tool


@tool
def execute_sql(query: str) -> str:
    """Run a SQL statement against the orders database."""
    return f"(example) would run: {query}"


agent = Agent(
    model=os.environ.get("AGENT_MODEL", "openai:gpt-4.1-mini"),
    tools=[execute_sql],
    middleware=[HumanInTheLoop(interrupt_on={
        "execute_sql": InterruptOn(allowed_decisions=["approve", "edit", "reject"]),
    })],
)
