"""The search index's SQLite file: schema, the rows a refresh compares with, and its writes.

One ``files`` row per indexed file (root, relative path, size, mtime) and its text, secrets
withheld (``shared.secret_scan``), in an FTS5 table with the trigram tokenizer. Where the SQLite
allows (``sqlite_module.py``), that table keeps the text's trigrams and not the text itself,
and deletes a row without reading its text again. ``secure_delete`` zeroes what a removed or
replaced row held, so nothing of a file that became private lingers in free pages of the
database.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from safeport.context_server.index.sqlite_module import CONTENTLESS_DELETE, sqlite3
from safeport.context_server.policy.content_secrets import SecretFinder
from safeport.context_server.policy.read_policy import looks_binary
from safeport.context_server.workspace.walk import WalkedFile
from safeport.errors import EnvironmentProblem
from safeport.shared.secret_scan import redact_spans

MAX_INDEXED_BYTES = 1024 * 1024
# 2: the rows are split over shards by path (index_shards.py); a version 1 file held them all.
# 3: the text is stored redacted; an older file may hold secrets and is dropped.
# 4: the text table keeps no text (``contentless_delete``): only an SQLite of 3.43 or later reads
# it, so a file of the other version is dropped and rebuilt by whichever SQLite runs.
SCHEMA_VERSION = 4 if CONTENTLESS_DELETE else 3
_FTS_OPTIONS = "tokenize='trigram', detail='none'" + (
    ", content='', contentless_delete=1" if CONTENTLESS_DELETE else ""
)

Stored = tuple[int, int, int]  # (row id, size, mtime_ns)
Outcome = Literal["kept", "added", "updated", "dropped", "skipped"]
# Row id (0: a new row, given the next id), root, relative path, size, mtime_ns, text.
Row = tuple[int, str, str, int, int, str]
# 128 rows of 5 values stay far below SQLite's limit of bound values per statement.
_ROWS_PER_STATEMENT = 128
_IDS_PER_STATEMENT = 512


def connect(path: Path) -> sqlite3.Connection:
    try:
        db = sqlite3.connect(path, timeout=10, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA secure_delete=ON")
    except sqlite3.Error as exc:
        raise EnvironmentProblem(
            f"cannot open the search index ({type(exc).__name__})",
            hint="remove the index file under the cache folder and run `sp context index`",
        ) from None
    return db


def create_schema(db: sqlite3.Connection) -> None:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version not in (0, SCHEMA_VERSION):
        db.execute("DROP TABLE IF EXISTS files")
        db.execute("DROP TABLE IF EXISTS fts")
        db.execute("DROP TABLE IF EXISTS walk_record")
    db.execute(
        "CREATE TABLE IF NOT EXISTS files (id INTEGER PRIMARY KEY, root TEXT NOT NULL, "
        "rel TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, "
        "UNIQUE(root, rel))"
    )
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, {_FTS_OPTIONS})")
    # What the last walk proved (``walk_record.py``): one row, in the first shard only.
    db.execute("CREATE TABLE IF NOT EXISTS walk_record (id INTEGER PRIMARY KEY, body TEXT)")
    # The next id a new row gets, never one a row had: a search's cursor is a row id, and a
    # file added after a page was read must not take a place before that page's end.
    db.execute(
        "CREATE TABLE IF NOT EXISTS next_row (id INTEGER PRIMARY KEY CHECK (id = 0), "
        "value INTEGER NOT NULL)"
    )
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    db.commit()


def file_count(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT count(*) FROM files").fetchone()[0])


def all_rows(db: sqlite3.Connection) -> dict[tuple[str, str], Stored]:
    """Every row, by (root, relative path): one query, compared in memory by a full walk."""
    rows = db.execute("SELECT id, root, rel, size, mtime_ns FROM files")
    return {(root, rel): (int(i), int(s), int(m)) for i, root, rel, s, m in rows}


def rows_under(db: sqlite3.Connection, root: str, rel: str) -> dict[str, Stored]:
    """The row for ``rel`` and every row below it (a range on the (root, rel) index)."""
    # Every path below `rel` starts with `rel/`; '/' + 1 is '0', the end of that range.
    rows = db.execute(
        "SELECT id, rel, size, mtime_ns FROM files WHERE root = ? "
        "AND (rel = ? OR (rel >= ? AND rel < ?))",
        (root, rel, rel + "/", rel + "0"),
    )
    return {r: (int(i), int(s), int(m)) for i, r, s, m in rows}


def unchanged(found: WalkedFile, stored: Stored | None) -> bool:
    """Whether the index holds the file as the walk found it (same size and mtime)."""
    return stored is not None and stored[1:] == (found.size, found.mtime_ns)


def plan(
    found: WalkedFile, stored: Stored | None, find: SecretFinder
) -> tuple[Outcome, str | None]:
    """What one walked file's row becomes, and the text to index: kept as is, (re)written
    from its head, or dropped (read failed or binary). The walk read the head only if the row
    was not current."""
    if unchanged(found, stored):
        return "kept", None
    text = _text_of(found.head, find)
    if text is None:
        return ("dropped" if stored is not None else "skipped"), None
    return ("updated" if stored is not None else "added"), text


def write(db: sqlite3.Connection, old: list[int], rows: list[Row]) -> None:
    """Delete the rows ``old`` and their text, then insert ``rows`` and their text.

    A row that replaces one of ``old`` (a changed file) keeps that row's id, so a search that
    resumes after it neither sees the file again nor skips one; a new row gets an id above
    every id ever given (``next_row``). Each statement takes many rows: SQLite tokenizes them
    all in one step, and the thread that runs it needs the interpreter lock only once per
    statement, not once per file (a thread waiting for the lock at every file while the walk
    holds it barely runs)."""
    for start, length in pieces(len(old), _IDS_PER_STATEMENT):
        chunk = old[start : start + length]
        marks = ",".join("?" * len(chunk))
        db.execute(f"DELETE FROM fts WHERE rowid IN ({marks})", chunk)  # noqa: S608
        db.execute(f"DELETE FROM files WHERE id IN ({marks})", chunk)  # noqa: S608
    if not rows:
        return
    fresh = sum(1 for row in rows if not row[0])
    if fresh:
        # Ids picked here, inside the write transaction: one statement per table, no lastrowid.
        first = int(
            db.execute(
                "SELECT max(coalesce((SELECT value FROM next_row WHERE id = 0), 1), "
                "coalesce((SELECT max(id) FROM files), 0) + 1)"
            ).fetchone()[0]
        )
        db.execute(
            "INSERT INTO next_row(id, value) VALUES (0, ?) "
            "ON CONFLICT(id) DO UPDATE SET value = excluded.value",
            (first + fresh,),
        )
        given = iter(range(first, first + fresh))
        rows = [row if row[0] else (next(given), *row[1:]) for row in rows]
    for start, length in pieces(len(rows), _ROWS_PER_STATEMENT):
        batch = rows[start : start + length]
        marks = ",".join("(?, ?, ?, ?, ?)" for _ in batch)
        params = [v for row in batch for v in row[:5]]
        db.execute(f"INSERT INTO files(id, root, rel, size, mtime_ns) VALUES {marks}", params)  # noqa: S608
        marks = ",".join("(?, ?)" for _ in batch)
        params = [v for row in batch for v in (row[0], row[5])]
        db.execute(f"INSERT INTO fts(rowid, body) VALUES {marks}", params)  # noqa: S608


def pieces(count: int, most: int) -> Iterator[tuple[int, int]]:
    """(start, length) pieces of ``count`` items: pieces of ``most`` (a power of two) while
    they fit, then the rest in halving powers of two, so a statement comes in a few lengths.

    ``sqlite3`` keeps each connection's last 128 statements prepared, one per text. With a
    length per batch the cache filled with versions of one statement, each a program for up
    to hundreds of rows: in a cold build SQLite's memory grew with every batch (147 MB at
    20,000 files); with ten lengths at most it stays small, and each is prepared once."""
    start, size = 0, most
    while start < count:
        while size > count - start:
            size //= 2
        yield start, size
        start += size


def merge(db: sqlite3.Connection) -> None:
    """Merge the FTS5 table's segments into one and commit. A build leaves the trigrams in
    many segments that FTS5 merges bit by bit as later writes come: the first refresh after a
    build of 200,000 files paid 5.5 s for 2,000 changed files, where 1.7 s after this merge
    (4.6 s, both shards at once, after a 150 s build)."""
    db.execute("INSERT INTO fts(fts) VALUES('optimize')")
    db.commit()


def forget_removed(db: sqlite3.Connection) -> None:
    """Copy the log into the database and empty it: the log still holds the pages removed
    rows were on (``secure_delete`` zeroes them in the database, not in the log)."""
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _text_of(head: bytes | None, find: SecretFinder) -> str | None:
    """The text to index, or None for a file unread, too large or binary to be worth it."""
    if head is None or len(head) > MAX_INDEXED_BYTES or looks_binary(head):
        return None
    # Only redacted text is ever stored: no query can confirm a piece of a secret, and the
    # database file on disk holds none.
    text = head.decode("utf-8", "replace")
    spans = find(text)
    return redact_spans(text, spans)[0] if spans else text
