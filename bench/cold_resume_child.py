"""Child process for figure (c): resume one paused thread (50 cycles of history) cold.

Prints one JSON line: seconds spent importing, opening the store, and in the resume call.
The parent measures the whole process (interpreter start to exit) around it.
"""

from __future__ import annotations

import time

T_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--system", choices=["langchain", "interlock"], required=True)
    p.add_argument("--backend", choices=["sqlite", "postgres"], required=True)
    p.add_argument("--thread", required=True)
    p.add_argument("--sqlite-path")
    p.add_argument("--pg-dsn")
    p.add_argument("--pg-schema")
    a = p.parse_args()

    t0 = time.perf_counter()
    if a.system == "langchain":
        import lc_side

        if a.backend == "sqlite":
            import langgraph.checkpoint.sqlite
        else:
            import langgraph.checkpoint.postgres  # noqa: F401
        cls: type = lc_side.LangChainSystem
    else:
        import il_side

        if a.backend == "postgres":
            import interlock.storage.postgres  # noqa: F401
        cls = il_side.InterlockSystem
    t1 = time.perf_counter()

    kwargs = {"sqlite_path": a.sqlite_path, "pg_dsn": a.pg_dsn}
    if a.pg_schema:
        kwargs["pg_schema"] = a.pg_schema
    system = cls(a.backend, **kwargs)
    if a.system == "interlock":
        system.open()  # the LangChain side opened its connection and ran setup() above
    t2 = time.perf_counter()

    system.resume(a.thread)
    t3 = time.perf_counter()
    system.close()
    print(json.dumps({
        "startup_s": t0 - T_START,
        "import_s": t1 - t0,
        "open_s": t2 - t1,
        "resume_s": t3 - t2,
    }))


if __name__ == "__main__":
    main()
