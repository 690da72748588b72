"""The build helper of the real-app tests (``ui_apps``): the cache key follows the vendored
files and Node.js, and a failed npm step fails the test under CI with npm's own words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import conftest

from . import ui_apps


def _app(root: Path) -> Path:
    app = root / "agent-inbox"
    app.mkdir(parents=True)
    # a lockfile that does not match package.json: npm ci refuses before any download
    (app / "package.json").write_text(json.dumps(
        {"name": "broken", "version": "1.0.0", "dependencies": {"left-pad": "1.3.0"}}))
    (app / "package-lock.json").write_text(json.dumps(
        {"name": "broken", "version": "1.0.0", "lockfileVersion": 3,
         "packages": {"": {"name": "broken", "version": "1.0.0"}}}))
    return app


def test_the_key_follows_the_sources_and_node(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    app = _app(tmp_path)
    monkeypatch.setattr(ui_apps, "THIRD_PARTY", tmp_path)
    key = ui_apps.source_key("agent-inbox", "v20.20.2")
    assert key.startswith("agent-inbox-")
    assert ui_apps.source_key("agent-inbox", "v22.1.0") != key
    (app / "yarn.lock").write_text("# upstream's lock: not part of the build\n")
    assert ui_apps.source_key("agent-inbox", "v20.20.2") == key
    (app / "src.js").write_text("export {};\n")
    assert ui_apps.source_key("agent-inbox", "v20.20.2") != key


def test_a_failed_build_fails_under_ci_with_npms_words(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    ui_apps._tools()  # node and npm are here (or this test reports that they are not)
    _app(tmp_path / "third_party")
    monkeypatch.setattr(ui_apps, "THIRD_PARTY", tmp_path / "third_party")
    monkeypatch.setenv("INTERLOCK_UI_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(conftest, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception) as failed:
        ui_apps.built_app("agent-inbox")
    message = str(failed.value)
    assert "building agent-inbox failed: `npm ci` exited with" in message
    assert "in sync" in message  # npm's own explanation, from the end of its output
    (build,) = [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]
    assert not (build / ".interlock-built").exists()  # the next run builds again
