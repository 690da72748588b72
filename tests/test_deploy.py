"""deploy/: the Dockerfile and compose file of docs/deploying.md.

Docker cannot run here, so the files are checked as far as that is possible without it: the
compose file's structure and the names it uses, and the Dockerfile's own install command, run
as written against a wheel built from this checkout in a fresh virtual environment, after which
the image's command serves the example agent and its health check passes."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from interlock.cli._common import DB_ENV
from interlock.server.auth import ENV_TOKENS_FILE

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n\s*", " ", (DEPLOY / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_compose_file_runs_interlock_serve_against_postgres() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert set(compose) <= {"services", "secrets", "volumes", "networks", "name"}
    services = compose["services"]
    assert set(services) == {"db", "interlock", "worker"}

    db = services["db"]
    image, _, tag = db["image"].partition(":")
    assert image == "postgres" and int(tag) >= 14
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    [volume] = db["volumes"]
    name, _, target = volume.partition(":")
    assert target == "/var/lib/postgresql/data" and name in compose["volumes"]

    app = services["interlock"]
    build = app["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).is_file()
    assert app["depends_on"] == {"db": {"condition": "service_healthy"}}
    env = app["environment"]
    # the variables interlock reads, spelled as the code spells them
    assert DB_ENV in env and ENV_TOKENS_FILE in env
    dsn = env[DB_ENV]
    assert dsn.startswith("postgresql://interlock:") and dsn.endswith("@db:5432/interlock")
    assert db["environment"]["POSTGRES_USER"] == "interlock"
    assert db["environment"]["POSTGRES_DB"] == "interlock"
    # the password is the same variable on both sides
    assert "${DB_PASSWORD:?" in db["environment"]["POSTGRES_PASSWORD"] and "${DB_PASSWORD:?" in dsn
    # the tokens file is a declared secret, mounted where the variable points
    [secret] = app["secrets"]
    assert env[ENV_TOKENS_FILE] == f"/run/secrets/{secret['target']}"
    assert secret["target"].endswith(".toml")  # the file's suffix selects the format
    assert "file" in compose["secrets"][secret["source"]]
    assert all(p.startswith("127.0.0.1:") for p in app["ports"])  # TLS goes in front
    # every interpolation is well formed (${NAME}, ${NAME:-default}, ${NAME:?message})
    text = (DEPLOY / "compose.yaml").read_text()
    for ref in re.findall(r"\$\{[^}]*\}", text):
        assert re.fullmatch(r"\$\{[A-Z_][A-Z0-9_]*(?::[-?][^}]*)?\}", ref), ref
    # the image's agent module is the one the Dockerfile copies
    assert (DEPLOY / "app" / "agents.py").is_file()
    cmd = dict(dockerfile())["CMD"]
    assert '"agents:agent"' in cmd
    # two tiers: the server is the image's command in API-only mode, the workers run the same
    # agent module from the same image against the same database, without a port
    assert app["command"] == [*json.loads(cmd), "--api-only"]
    worker = services["worker"]
    # the same image, built once (by the interlock service), never pulled from a registry
    assert "build" not in worker and worker["image"] == app["image"]
    assert worker["pull_policy"] == "never"
    assert worker["command"] == ["interlock", "worker", "agents:agent"]
    assert worker["depends_on"] == app["depends_on"]
    assert worker["environment"][DB_ENV] == dsn
    assert {k: v for k, v in worker["environment"].items() if k != DB_ENV} == {
        k: v for k, v in env.items() if k not in (DB_ENV, ENV_TOKENS_FILE)}
    assert "ports" not in worker and worker["healthcheck"] == {"disable": True}
    assert worker["deploy"]["replicas"] >= 2


def test_dockerfile_has_the_expected_steps() -> None:
    steps = dockerfile()
    kinds = [k for k, _ in steps]
    assert kinds[0] == "FROM"
    m = re.fullmatch(r"python:3\.(\d+)-slim", steps[0][1])
    assert m and int(m.group(1)) >= 11  # requires-python
    assert "USER" in kinds and dict(steps)["USER"] != "root"
    assert kinds.index("COPY") < kinds.index("RUN")
    assert "HEALTHCHECK" in kinds and "/api/health" in dict(steps)["HEALTHCHECK"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_dockerfile_install_command_works_against_a_built_wheel(tmp_path: Path) -> None:
    steps = dockerfile()
    # the wheel, built as docs/deploying.md says
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist),
                    str(ROOT)], check=True, timeout=300, capture_output=True)
    assert [p.name for p in dist.iterdir()] == ["interlock-0.1.0-py3-none-any.whl"]
    # the image's Python environment: a fresh venv, the Dockerfile's RUN line as written
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    [install] = [args for kind, args in steps if kind == "RUN" and "pip install" in args]
    install = install.replace("/tmp/dist", str(dist))
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(["bash", "-c", install], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not dist.exists()  # the RUN line cleans up after itself
    # the image's command serves the example agent; the health check passes
    cmd = [str(a) for a in json.loads(dict(steps)["CMD"])]  # exec form: a JSON list
    port = _free_port()
    cmd[cmd.index("--port") + 1] = str(port)
    cmd[cmd.index("--host") + 1] = "127.0.0.1"
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[[reviewers]]\nid = "alice"\nroles = ["dba"]\n'
                      'token = "deploy-test-token-0123456789"\n')
    run_env = {**env, DB_ENV: f"sqlite:///{tmp_path / 'interlock.db'}",
               ENV_TOKENS_FILE: str(tokens), "OPENAI_API_KEY": "test-key",
               "AGENT_MODEL": "openai:gpt-4.1-mini"}
    server = subprocess.Popen(cmd, cwd=DEPLOY / "app", env=run_env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        give_up = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.communicate()[0]
                assert time.monotonic() < give_up, "the server did not start"
                time.sleep(0.2)
        assert r.json() == {"ok": True, "checkpointer": "SqliteCheckpointer", "writes": None,
                            "write_error": None, "live_updates": "polling every 0.5 s",
                            "live_updates_error": None}
        me = httpx.get(f"http://127.0.0.1:{port}/api/me",
                       headers={"Authorization": "Bearer deploy-test-token-0123456789"}, timeout=5)
        assert me.json() == {"id": "alice", "roles": ["dba"], "auth": True}
        check = shlex.split(dict(steps)["HEALTHCHECK"].split(" CMD ", 1)[1])
        check = [a.replace("8000", str(port)) for a in check]
        assert subprocess.run(check, env=env, timeout=30).returncode == 0
    finally:
        server.terminate()
        server.wait(timeout=30)
