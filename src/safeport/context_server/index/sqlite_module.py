"""The SQLite the index runs on: the standard library's ``sqlite3`` module, built against a
current SQLite where the ``pysqlite3-binary`` wheel installs (Linux on x86-64).

FTS5 removes a row of a table that keeps its text by tokenizing that text again to learn what
to remove, so a changed file cost the index about twice a new one, and the table kept a
second copy of every file's text. SQLite 3.43 added tables that keep no text and delete
without it (``contentless_delete``); the SQLite Python links is the system's (3.40 on Debian
12). ``pysqlite3`` is that same module compiled against a current SQLite and nothing more (no
SQL extension of its own, none that an environment variable turns on): the same connections,
transactions and errors, so nothing else changes. Elsewhere the system's module serves, with
a table that keeps no text where its SQLite is 3.43 or later and one that stores the text where
it is older (``sqlite_store.create_schema``); an index file made by the other kind is rebuilt,
never read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3
else:
    try:
        from pysqlite3 import dbapi2 as sqlite3
    except ImportError:  # no wheel for this machine: the system's SQLite
        import sqlite3

# FTS5 tables without text that delete rows without it (SQLite 3.43).
CONTENTLESS_DELETE = sqlite3.sqlite_version_info >= (3, 43, 0)

__all__ = ["CONTENTLESS_DELETE", "sqlite3"]
