"""Folders: one page of a listing, and a bounded tree."""

from __future__ import annotations

import re

from safeport.context_server.operations import Operations, clamp
from safeport.context_server.policy import InvalidInput, Refused
from safeport.context_server.results import (
    DirectoryEntry,
    DirectoryListing,
    DirectoryTree,
    TreeEntry,
)
from safeport.context_server.workspace import Entry, Located

_OFFSET_CURSOR = re.compile(r"o1\.([0-9]{1,3})\.([0-9]{1,9})")


class FolderOperations(Operations):
    """``list_directory`` and ``directory_tree``."""

    def list_directory(self, path: str, limit: int, cursor: str | None) -> DirectoryListing:
        limit = clamp(limit, 1, 1000, 200)
        offset = _parse_offset(cursor)[1] if cursor else 0
        if self._is_virtual_top(path):
            every = [DirectoryEntry(name=r.name, type="directory") for r in self.workspace.roots]
            page, total = every[offset : offset + limit], len(every)
        else:
            located = self.workspace.locate(path)
            folder = self.workspace.list_folder(located, offset, limit)
            page = [_listed(e) for e in folder.entries]
            total = folder.total
        more = offset + limit < total
        return DirectoryListing(
            path=path,
            entries=page,
            next_cursor=f"o1.0.{offset + limit}" if more else None,
            total_entries=total,
        )

    def directory_tree(self, path: str, max_depth: int, max_entries: int) -> DirectoryTree:
        max_depth = clamp(max_depth, 1, 10, 3)
        max_entries = clamp(max_entries, 1, 5000, 500)
        out: list[TreeEntry] = []
        truncated = False
        stack: list[tuple[Located, int]] = [(loc, 1) for loc in reversed(self._folders(path))]
        while stack:
            folder, depth = stack.pop()
            children: list[tuple[Located, int]] = []
            # Only as many entries as the tree still has room for (plus one, to know).
            room = max_entries - len(out) + 1
            for e in self.workspace.list_folder(folder, 0, room).entries:
                if len(out) >= max_entries:
                    truncated = True
                    break
                child_path = self.workspace.display(folder.root, (*folder.parts, e.name))
                out.append(
                    TreeEntry(
                        path=child_path,
                        type=e.type,
                        depth=depth,
                        size=e.size or 0,
                        blocked=e.blocked or "",
                    )
                )
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
            entries=out,
            truncated=truncated,
            max_depth=max_depth,
            max_entries=max_entries,
        )


def _listed(e: Entry) -> DirectoryEntry:
    return DirectoryEntry(name=e.name, type=e.type, size=e.size or 0, blocked=e.blocked or "")


def _parse_offset(cursor: object) -> tuple[int, int]:
    if not isinstance(cursor, str) or not (m := _OFFSET_CURSOR.fullmatch(cursor)):
        raise InvalidInput(
            "invalid cursor: pass back a next_cursor value exactly, or omit it to start over"
        )
    return int(m.group(1)), int(m.group(2))
