"""Without the [otel] and [metrics] extras: nothing of them is imported, a run works as
before, and asking for them says which extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

BLOCK = textwrap.dedent('''
    import importlib.abc, sys

    class NotInstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("opentelemetry", "prometheus_client"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NotInstalled())
''')


def run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "child.py"
    script.write_text(BLOCK + textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, check=False, cwd=tmp_path)


def test_a_cycle_imports_neither_extra(tmp_path: Path) -> None:
    proc = run(tmp_path, '''
        from interlock import Agent, HumanInTheLoop, ScriptedModel, tool
        import interlock.cli, interlock.worker, interlock.notify.dispatcher

        ran = []

        @tool
        def write_file(path: str) -> str:
            """Write."""
            ran.append(path)
            return "ok"

        agent = Agent(model=ScriptedModel([{"name": "write_file", "args": {"path": "a"}}, "done"]),
                      tools=[write_file],
                      middleware=[HumanInTheLoop(interrupt_on={"write_file": True})])
        first = agent.invoke("go", thread_id="t")
        assert first.status == "interrupted"
        done = agent.resume("t", [{"type": "approve"}])
        assert done.output == "done" and ran == ["a"]
        loaded = sorted(m for m in sys.modules
                        if m.split(".")[0] in ("opentelemetry", "prometheus_client"))
        print("loaded:", loaded)
    ''')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "loaded: []"


def test_asking_for_metrics_or_traces_names_the_extra(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(textwrap.dedent('''
        from interlock import Agent, ScriptedModel
        agent = Agent(model=ScriptedModel(["hi"]))
    '''))
    for flag, extra in (("--metrics-port=0", "metrics"), ("--otel", "otel")):
        proc = run(tmp_path, f'''
            sys.path.insert(0, ".")
            sys.argv = ["interlock", "worker", "app:agent", "{flag}"]
            from interlock.cli import main
            main()
        ''')
        assert proc.returncode != 0
        assert f"'.[{extra}]'" in proc.stderr and "not installed" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
