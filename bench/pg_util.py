"""Postgres helpers: one schema per system, sizes of its tables, server settings."""

from __future__ import annotations

from typing import Any


def connect(dsn: str) -> Any:
    import psycopg

    return psycopg.connect(dsn, autocommit=True)


def reset_schema(dsn: str, schema: str) -> None:
    with connect(dsn) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        conn.execute(f'CREATE SCHEMA "{schema}"')


def drop_schema(dsn: str, schema: str) -> None:
    with connect(dsn) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def analyze_schema(dsn: str, schema: str) -> None:
    """``ANALYZE`` every table of ``schema``: the planner's statistics after a bulk fill, as
    autovacuum would have gathered them by then in a running system (it may be off on a test
    server: without statistics the planner guesses, and a text search reads far more rows)."""
    with connect(dsn) as conn:
        conn.execute(f'SET search_path = "{schema}"')
        conn.execute("ANALYZE")


def schema_bytes(dsn: str, schema: str) -> int:
    """``pg_total_relation_size`` (heap + indexes + TOAST) summed over the schema's tables."""
    with connect(dsn) as conn:
        row = conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'p')",
            (schema,),
        ).fetchone()
    return int(row[0])


def schema_tables(dsn: str, schema: str) -> dict[str, int]:
    with connect(dsn) as conn:
        rows = conn.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'p') ORDER BY 1",
            (schema,),
        ).fetchall()
    return {r[0]: int(r[1]) for r in rows}


def server_info(dsn: str) -> dict[str, str]:
    with connect(dsn) as conn:
        out = {}
        for name in ("server_version", "synchronous_commit", "fsync", "wal_sync_method",
                     "shared_buffers"):
            out[name] = str(conn.execute(f"SHOW {name}").fetchone()[0])
    return out


def available(dsn: str) -> str | None:
    try:
        with connect(dsn) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return str(exc)
    return None
