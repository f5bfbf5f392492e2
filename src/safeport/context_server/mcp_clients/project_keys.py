"""Which folder a client files a project's servers under, found as the client finds it.

Claude Code keeps its local-scope servers in ``~/.claude.json`` under ``projects.<folder>``, and
the folder is not the one it runs in: it is the git top-level above it, and for a linked
worktree the main checkout's (checked with the real ``claude mcp add``: from
``repo/pkg`` it reports ``[project: …/repo]``; from a worktree of ``repo``, ``repo`` again; from
a submodule, the submodule). Outside a repository it is the folder itself. An entry filed under
any other folder is one Claude Code never reads, so the install files it under the same key.

Only the filesystem is read (no ``git`` process), with the same checks Claude Code makes before
it trusts a ``.git`` file's pointers; any pointer that does not check out leaves the top-level
where it is, as there.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_POINTER_LIMIT = 65_536  # bytes read from a .git, commondir or gitdir file, as Claude Code


def claude_code_project(folder: Path) -> Path:
    """The ``projects`` key Claude Code uses for a session started in ``folder``."""
    start = Path(os.path.normpath(folder.absolute()))  # as path.resolve: links kept
    top = git_top_level(start)
    return start if top is None else _main_checkout(top)


def git_top_level(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` that holds a ``.git`` folder or file."""
    for candidate in (folder, *folder.parents):
        if _has_git_entry(candidate / ".git"):
            return candidate
    return None


def _has_git_entry(path: Path) -> bool:
    try:
        return path.is_dir() or path.is_file()  # a link counts by what it points at
    except OSError:
        return False


def _main_checkout(top: Path) -> Path:
    """A linked worktree's main checkout (``.git`` holds ``gitdir: <main>/.git/worktrees/X``,
    whose ``commondir`` and ``gitdir`` point back); any other top-level is its own."""
    pointer = _read_pointer(top / ".git")
    if pointer is None or not pointer.startswith("gitdir:"):
        return top
    gitdir = Path(os.path.normpath(top / pointer.removeprefix("gitdir:").strip()))
    common_text = _read_pointer(gitdir / "commondir")
    back_text = _read_pointer(gitdir / "gitdir")
    if common_text is None or back_text is None:
        return top  # a submodule's gitdir has no commondir: the submodule is the project
    common = Path(os.path.normpath(gitdir / common_text))
    if Path(os.path.normpath(gitdir.parent)) != common / "worktrees":
        return top
    if Path(os.path.realpath(gitdir / back_text)) != Path(os.path.realpath(top)) / ".git":
        return top  # the worktree record does not name this checkout
    if common.name != ".git":
        return top if _has_git_entry(common / ".git") else common  # a bare repository
    return common.parent


def _read_pointer(path: Path) -> str | None:
    """A small text file's content, trimmed; None when absent, too long or not plain text."""
    # Opened without blocking and read only if it is a regular file: a FIFO planted where
    # git keeps a pointer would otherwise hang every command that looks for the project.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, _POINTER_LIMIT + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) > _POINTER_LIMIT or b"\x00" in raw:
        return None
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
