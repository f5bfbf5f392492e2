"""Folders: one page of a listing, and a bounded tree, both as entries grouped by type."""

from __future__ import annotations

import re
from typing import Any

from safeport.context_server.operations.base import Operations, clamp
from safeport.context_server.operations.tool_results import DirectoryListing, DirectoryTree
from safeport.context_server.policy.read_policy import BlockReason, InvalidInput, Refused
from safeport.context_server.workspace.model import Entry, Located

_OFFSET_CURSOR = re.compile(r"o1\.([0-9]{1,3})\.([0-9]{1,9})")


class FolderOperations(Operations):
    """``list_directory`` and ``directory_tree``."""

    def list_directory(self, path: str, limit: int, cursor: str | None) -> DirectoryListing:
        limit = clamp(limit, 1, 1000, 200)
        offset = _parse_offset(cursor)[1] if cursor else 0
        groups = Grouping()
        if self._is_virtual_top(path):
            names = [r.name for r in self.workspace.roots]
            groups.directories.extend(names[offset : offset + limit])
            total = len(names)
        else:
            located = self.workspace.locate(path)
            folder = self.workspace.list_folder(located, offset, limit)
            for e in folder.entries:
                groups.add(e.name, e)
            total = folder.total
        more = offset + limit < total
        return DirectoryListing(
            path=path,
            **groups.fields(),
            next_cursor=f"o1.0.{offset + limit}" if more else None,
            total_entries=total,
        )

    def directory_tree(self, path: str, max_depth: int, max_entries: int) -> DirectoryTree:
        max_depth = clamp(max_depth, 1, 10, 3)
        max_entries = clamp(max_entries, 1, 5000, 500)
        groups = Grouping()
        count = 0
        truncated = False
        stack: list[tuple[Located, int]] = [(loc, 1) for loc in reversed(self._folders(path))]
        while stack:
            folder, depth = stack.pop()
            children: list[tuple[Located, int]] = []
            # Only as many entries as the tree still has room for (plus one, to know).
            room = max_entries - count + 1
            for e in self.workspace.list_folder(folder, 0, room).entries:
                if count >= max_entries:
                    truncated = True
                    break
                child_path = self.workspace.display(folder.root, (*folder.parts, e.name))
                groups.add(child_path, e)
                count += 1
                if e.type == "directory" and e.blocked is None and depth < max_depth:
                    try:
                        children.append((self.workspace.locate(child_path), depth + 1))
                    except Refused:
                        continue
            if truncated:
                break
            stack.extend(reversed(children))
        return DirectoryTree(
            path=path,
            **groups.fields(),
            truncated=truncated,
            max_depth=max_depth,
            max_entries=max_entries,
        )


class Grouping:
    """Listed entries by type, under the key a client sees (a name, or a path in a tree)."""

    def __init__(self) -> None:
        self.files: dict[str, int] = {}
        self.directories: list[str] = []
        self.symlinks: list[str] = []
        self.others: list[str] = []
        self.blocked: dict[str, BlockReason] = {}

    def add(self, key: str, e: Entry) -> None:
        if e.type == "file":
            self.files[key] = e.size or 0
        elif e.type == "directory":
            self.directories.append(key)
        elif e.type == "symlink":
            self.symlinks.append(key)
        else:
            self.others.append(key)
        if e.blocked is not None:
            self.blocked[key] = e.blocked

    def fields(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "directories": self.directories,
            "symlinks": self.symlinks,
            "others": self.others,
            "blocked": self.blocked,
        }


def _parse_offset(cursor: object) -> tuple[int, int]:
    if not isinstance(cursor, str) or not (m := _OFFSET_CURSOR.fullmatch(cursor)):
        raise InvalidInput(
            "invalid cursor: pass back a next_cursor value exactly, or omit it to start over"
        )
    return int(m.group(1)), int(m.group(2))
