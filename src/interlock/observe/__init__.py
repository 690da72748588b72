"""What operators see: OpenTelemetry traces, Prometheus metrics and JSON log lines.

All three are optional. :func:`install` turns them on for the process (the CLI does it for
``--otel``, ``--metrics-port`` and ``--log-format json``); until then nothing here imports
OpenTelemetry or ``prometheus_client`` and the run engine's hooks are a single ``is None``
check each. See docs/observability.md.
"""

from .hooks import Observer, RunObserver, current, install, uninstall

__all__ = ["Observer", "RunObserver", "current", "install", "uninstall"]
