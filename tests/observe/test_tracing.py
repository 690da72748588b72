"""One trace across invoke → pause → decision in another process → tool → end, with the real
OpenTelemetry SDK: this process exports to the in-memory exporter, the deciding process
through the OTLP/HTTP exporter to a receiver run here; on SQLite and Postgres, for a plain
agent and for a sub-agent."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from conftest import StoreFactory
from interlock import observe
from interlock.observe.tracing import Tracing

from .otel_receiver import ReceivedSpan, Receiver

AGENTS = textwrap.dedent('''
    from pathlib import Path
    from interlock import Agent, HumanInTheLoop, ScriptedModel, tool
    from interlock.messages import Usage
    from interlock.storage import from_url

    class Counting:
        """A scripted model that reports token usage, like a provider does."""
        model = "scripted-gpt"

        def __init__(self, script):
            self.inner = ScriptedModel(script)

        async def generate(self, messages, tools):
            m = await self.inner.generate(messages, tools)
            return m.model_copy(update={"usage": Usage(input_tokens=11 * len(messages),
                                                       output_tokens=7,
                                                       total_tokens=11 * len(messages) + 7)})

        def stream(self, messages, tools):
            return self.inner.stream(messages, tools)

    def make(url, out):
        store = from_url(url)

        @tool
        def write_file(path: str, content: str) -> str:
            """Write a file."""
            with Path(out).open("a") as f:
                f.write(content + "\\n")
            return f"wrote {path}"

        gate = [HumanInTheLoop(interrupt_on={"write_file": True})]
        solo = Agent(name="solo", checkpointer=store, tools=[write_file], middleware=gate,
                     model=Counting([{"name": "write_file", "args": {"path": "a", "content": "s3cr3t-arg"},
                                      "id": "w1"}, "all written"]))
        writer = Agent(name="writer", checkpointer=store, tools=[write_file], middleware=gate,
                       model=Counting([{"name": "write_file", "args": {"path": "b", "content": "sub"},
                                        "id": "c1"}, "sub written"]))
        boss = Agent(name="boss", checkpointer=store, tools=[writer.as_tool()],
                     model=Counting([{"name": "writer", "args": {"task": "write b"}, "id": "s1"},
                                     "boss done"]))
        return {"solo": solo, "boss": boss}
''')

DECIDE = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from interlock import observe
    from interlock.authz import Reviewer
    from interlock.observe.tracing import Tracing
    import agents

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=sys.argv[2])))
    observe.install(observe.Observer(tracing=Tracing(provider)))
    agent = agents.make(sys.argv[3], sys.argv[4])[sys.argv[5]]
    r = agent.resume(sys.argv[6], [{"type": "approve"}], interrupt_id=sys.argv[7],
                     reviewer=Reviewer("alice", frozenset({"ops"})))
    agent.close() if hasattr(agent, "close") else None
    provider.shutdown()
    print(json.dumps({"status": r.status, "output": r.output}))
''')


def _flat(span: ReadableSpan) -> ReceivedSpan:
    ctx = span.get_span_context()
    assert ctx is not None and span.start_time is not None and span.end_time is not None
    return ReceivedSpan(span.name, format(ctx.trace_id, "032x"), format(ctx.span_id, "016x"),
                        format(span.parent.span_id, "016x") if span.parent else "",
                        span.start_time, span.end_time, dict(span.attributes or {}))


@pytest.fixture
def db(durable_stores: StoreFactory) -> StoreFactory:
    return durable_stores


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    observe.install(observe.Observer(tracing=Tracing(provider)))
    yield memory
    observe.uninstall()
    provider.shutdown()


def _agents(tmp_path: Path, url: str) -> dict[str, object]:
    (tmp_path / "agents.py").write_text(AGENTS)
    spec = importlib.util.spec_from_file_location(f"agents_{tmp_path.name}",
                                                  tmp_path / "agents.py")
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make(url, str(tmp_path / "out.txt"))  # type: ignore[no-any-return]


def _decide_elsewhere(tmp_path: Path, receiver: Receiver, url: str, which: str,
                      thread_id: str, interrupt_id: str) -> dict[str, object]:
    (tmp_path / "decide.py").write_text(DECIDE)
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "decide.py"), str(tmp_path), receiver.url, url,
         str(tmp_path / "out.txt"), which, thread_id, interrupt_id],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


@pytest.mark.slow
def test_one_trace_across_a_decision_in_another_process(
        tmp_path: Path, db: StoreFactory, exporter: InMemorySpanExporter) -> None:
    url = db.url()
    agent = _agents(tmp_path, url)["solo"]
    first = agent.invoke("write it", thread_id="t1")  # type: ignore[attr-defined]
    assert first.status == "interrupted"
    here = [_flat(s) for s in exporter.get_finished_spans()]
    root = _one(here, "invoke_agent solo")
    chat = _one(here, "chat scripted-gpt")
    assert root.parent_id == ""
    assert chat.parent_id == root.span_id and chat.trace_id == root.trace_id
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.request.model"] == "scripted-gpt"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 11
    assert chat.attributes["gen_ai.usage.output_tokens"] == 7
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.conversation.id"] == "t1"
    assert not any(s.name.startswith("execute_tool") for s in here)  # nothing ran yet

    with Receiver() as receiver:
        second = _decide_elsewhere(tmp_path, receiver, url, "solo", "t1",
                                   first.interrupts[0].id)
    assert second == {"status": "completed", "output": "all written"}
    assert (tmp_path / "out.txt").read_text() == "s3cr3t-arg\n"
    there = receiver.spans
    assert {s.trace_id for s in there} == {root.trace_id}  # the same trace, another process
    resumed = _one(there, "invoke_agent solo")
    wait = _one(there, "await_review write_file")
    tool = _one(there, "execute_tool write_file")
    chat2 = _one(there, "chat scripted-gpt")
    assert resumed.parent_id == root.span_id and resumed.attributes["interlock.run.continued"]
    assert wait.parent_id == root.span_id
    assert wait.attributes["interlock.reviewer"] == "alice"
    assert wait.attributes["interlock.decision.type"] == "approve"
    assert wait.attributes["interlock.request.revision"] == 1  # the revision decided on
    assert wait.attributes["gen_ai.tool.name"] == "write_file"
    assert wait.attributes["gen_ai.tool.call.id"] == "w1"
    assert wait.attributes["interlock.interrupt.id"] == first.interrupts[0].id
    # the wait runs from the pause (stored in the first process) to the decision
    assert wait.start_ns <= chat.end_ns + 1_000_000_000 and wait.start_ns < resumed.start_ns
    assert wait.end_ns >= resumed.start_ns
    assert tool.parent_id == resumed.span_id
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "write_file"
    assert tool.attributes["gen_ai.tool.call.id"] == "w1"
    assert chat2.parent_id == resumed.span_id and chat2.start_ns >= tool.end_ns
    assert chat2.attributes["gen_ai.usage.input_tokens"] == 33
    # arguments and results are not recorded unless asked for
    everything = json.dumps([s.attributes for s in [*here, *there]], default=str)
    assert "s3cr3t-arg" not in everything and "wrote a" not in everything


@pytest.mark.slow
def test_a_sub_agent_nests_under_the_parents_tool_span(
        tmp_path: Path, db: StoreFactory, exporter: InMemorySpanExporter) -> None:
    url = db.url()
    boss = _agents(tmp_path, url)["boss"]
    first = boss.invoke("delegate", thread_id="b1")  # type: ignore[attr-defined]
    assert first.status == "interrupted" and first.interrupts[0].path is not None
    here = [_flat(s) for s in exporter.get_finished_spans()]
    root = _one(here, "invoke_agent boss")
    delegate = _one(here, "execute_tool writer")
    child = _one(here, "invoke_agent writer")
    assert root.parent_id == "" and delegate.parent_id == root.span_id
    assert child.parent_id == delegate.span_id  # the sub-agent's run under the parent's call
    assert delegate.attributes["gen_ai.tool.call.id"] == "s1"
    assert delegate.attributes["interlock.tool.paused"]  # it waits for the sub-agent's review
    child_chat = [s for s in here if s.name == "chat scripted-gpt"
                  and s.parent_id == child.span_id]
    assert len(child_chat) == 1
    assert {s.trace_id for s in here} == {root.trace_id}

    with Receiver() as receiver:
        second = _decide_elsewhere(tmp_path, receiver, url, "boss", "b1",
                                   first.interrupts[0].id)
    assert second == {"status": "completed", "output": "boss done"}
    there = receiver.spans
    assert {s.trace_id for s in there} == {root.trace_id}
    write = _one(there, "execute_tool write_file")
    wait = _one(there, "await_review write_file")
    # the child's own spans continue the child's first span; the wait hangs there too
    child_runs = [s for s in there if s.name == "invoke_agent writer"]
    assert child_runs and all(s.parent_id == child.span_id for s in child_runs)
    assert wait.parent_id == child.span_id
    assert wait.attributes["interlock.reviewer"] == "alice"
    assert wait.attributes["gen_ai.tool.call.id"] == "c1"
    assert write.parent_id in {s.span_id for s in child_runs}
    assert write.attributes["gen_ai.tool.call.id"] == "c1"


def test_arguments_and_results_only_when_asked_and_shown_by_the_display_policy() -> None:
    from interlock import Agent, HumanInTheLoop, ScriptedModel, tool

    @tool
    def rename(path: str) -> str:
        """Rename a file."""
        return f"renamed {path}\u202e"

    def run(record: bool) -> list[ReceivedSpan]:
        memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        observe.install(observe.Observer(tracing=Tracing(provider, record_content=record)))
        try:
            agent = Agent(model=ScriptedModel([
                {"name": "rename", "args": {"path": "invoice\u202efdp.exe"}, "id": "r1"},
                "renamed"]), tools=[rename],
                middleware=[HumanInTheLoop(interrupt_on={"rename": True})])
            agent.invoke("go", thread_id="x")
            agent.resume("x", [{"type": "approve"}])
        finally:
            observe.uninstall()
        return [_flat(s) for s in memory.get_finished_spans()]

    quiet = _one(run(False), "execute_tool rename")
    assert "gen_ai.tool.call.arguments" not in quiet.attributes
    assert "gen_ai.tool.call.result" not in quiet.attributes
    loud = _one(run(True), "execute_tool rename")
    args = loud.attributes["gen_ai.tool.call.arguments"]
    assert "\u202e" not in args and "invoice⟨U+202E⟩fdp.exe" in args
    assert loud.attributes["gen_ai.tool.call.result"] == "renamed invoice⟨U+202E⟩fdp.exe⟨U+202E⟩"


def test_a_failing_span_processor_never_stops_a_run(caplog: pytest.LogCaptureFixture) -> None:
    from opentelemetry.sdk.trace import SpanProcessor

    from interlock import Agent, HumanInTheLoop, ScriptedModel, tool

    class Broken(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            raise RuntimeError("collector unreachable")

    ran: list[str] = []

    @tool
    def write_file(path: str) -> str:
        """Write a file."""
        ran.append(path)
        return "ok"

    provider = TracerProvider()
    provider.add_span_processor(Broken())
    observe.install(observe.Observer(tracing=Tracing(provider)))
    try:
        agent = Agent(model=ScriptedModel([{"name": "write_file", "args": {"path": "a"}},
                                           "done"]), tools=[write_file],
                      middleware=[HumanInTheLoop(interrupt_on={"write_file": True})])
        assert agent.invoke("go", thread_id="b").status == "interrupted"
        assert agent.resume("b", [{"type": "approve"}]).output == "done"
    finally:
        observe.uninstall()
    assert ran == ["a"]
    assert "collector unreachable" in caplog.text and "the run goes on" in caplog.text
