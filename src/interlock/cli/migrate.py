"""``interlock migrate``: create or upgrade the Postgres tables, as the role that owns them."""

from __future__ import annotations

import click

from ..storage.postgres_conn import redact_url
from ._common import DB_ENV, CliUsageError, out


@click.command("migrate", short_help="Create or upgrade the Postgres tables (owner role).")
@click.option("--db", "db", metavar="URL", envvar=DB_ENV, required=True,
              help="postgresql://owner@host/db?schema=interlock (env: INTERLOCK_DB).")
def migrate(db: str) -> None:
    """Create the schema and the interlock tables if missing, and apply pending migrations.

    Run it as the role that owns the schema before starting (or upgrading) the servers and
    workers, which can then run as a role with data privileges only (docs/deploying.md).
    Safe while other processes use the database; a second run changes nothing. Migrations
    are exempt from the session's statement_timeout.

    \b
    Examples:
      interlock migrate --db 'postgresql://interlock_owner@db/agents?schema=interlock'
    """
    from ..storage.postgres import PostgresCheckpointer
    from ..storage.postgres_conn import is_conninfo

    if not db.startswith(("postgresql://", "postgres://")) and not is_conninfo(db):
        raise CliUsageError(
            f"--db {redact_url(db)!r}: interlock migrate is for Postgres; SQLite files are "
            f"created and migrated by the first process that opens them.")
    store = PostgresCheckpointer(db, migrate=True)
    before, after = store.migrate()
    console = out()
    where = f"schema {store.schema!r} at {store!r}"
    if before == after:
        console.print(f"Nothing to do: {where} is at version {after}.", highlight=False,
                      markup=False)
    else:
        console.print(f"Migrated {where} from version {before} to {after}.", highlight=False,
                      markup=False)
