"""The review server: HTTP API, reviewer auth, audit endpoints, live web inbox.

Needs the ``server`` extra (``pip install -e '.[server]'`` in a checkout)::

    from interlock.server import create_app
    app = create_app(agent)            # any ASGI server
    # or: interlock serve mymodule:agent --db sqlite:///interlock.db
"""

from __future__ import annotations

from ..errors import MissingDependency

try:
    import fastapi  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingDependency("interlock.server", "server", exc.name or "fastapi") from None

from .app import create_app
from .auth import Identity, TokenAuth, check_bind
from .limits import Limits
from .run import build_server, serve

__all__ = ["Identity", "Limits", "TokenAuth", "build_server", "check_bind", "create_app",
           "serve"]
