"""The workspace's value types, and what listing and walking need of the workspace.

Below ``gate.py``, ``listing.py``, ``resolve.py`` and ``walk.py``, so each names a served root,
a checked location or the workspace without importing the gate that uses them.
:class:`WorkspaceView` is the part of :class:`~safeport.context_server.workspace.gate.Workspace`
a listing or a walk reads: its policy, the client's scope, the root descriptors, the folder-name
cache and the resolution of a request.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple, Protocol

from safeport.context_server.policy.read_policy import BlockReason, ReadPolicy
from safeport.context_server.workspace.folder_pages import FolderPages


@dataclass(frozen=True)
class ServedRoot:
    """A configured root: its display name and its real (symlink-free) location."""

    name: str
    path: Path


@dataclass(frozen=True)
class Located:
    """A request that passed every path check: where it is and what it was when checked."""

    root: ServedRoot
    parts: tuple[str, ...]  # resolved, relative to the root, display names
    kind: Literal["file", "directory", "other"]
    st: os.stat_result

    @property
    def absolute(self) -> str:
        return "/".join((str(self.root.path), *self.parts))

    @property
    def relative(self) -> str:
        return "/".join(self.parts) if self.parts else "."


class BeneathRoots(Protocol):
    """Descriptors on the roots held since start-up (``resolve.RootDescriptors``)."""

    def open_beneath(
        self, root: ServedRoot, parts: Sequence[str], *, final_dir: bool = False
    ) -> int: ...


EntryType = Literal["file", "directory", "symlink", "other"]


class Entry(NamedTuple):
    """One name in a folder listing; blocked entries keep their name and say why."""

    name: str
    type: EntryType
    size: int | None
    blocked: BlockReason | None


@dataclass(frozen=True)
class FolderPage:
    entries: tuple[Entry, ...]
    total: int


class NameCache(Protocol):
    """Sorted names of recently listed folders (``listing.FolderNames``)."""

    def get(self, dir_fd: int, st: os.stat_result) -> tuple[list[str], list[str]]: ...


class WorkspaceView(Protocol):
    """What a listing or a walk reads of the workspace."""

    @property
    def policy(self) -> ReadPolicy: ...

    @property
    def scope(self) -> tuple[str, ...] | None: ...

    @property
    def descriptors(self) -> BeneathRoots: ...

    @property
    def folder_names(self) -> NameCache: ...

    @property
    def folder_pages(self) -> FolderPages[FolderPage]: ...

    def resolve(
        self, root: ServedRoot, parts: Sequence[str]
    ) -> tuple[ServedRoot, tuple[str, ...], os.stat_result]: ...
