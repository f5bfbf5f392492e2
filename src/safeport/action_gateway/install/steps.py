"""The steps of an install or uninstall as values, and carrying them out.

A :class:`Step` is one command with a fixed argv (never through a shell), one folder or one
file; `--print` renders them and :func:`carry_out` performs them in order. Folders and files are
owned and moded through descriptors opened without following links, so an entry swapped for a
link between creating and chowning it is refused rather than followed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from safeport.errors import EnvironmentProblem
from safeport.shared.known_secrets import shorten
from safeport.shared.text_lines import split_lines


@dataclass(frozen=True)
class Step:
    """One thing to do. Exactly one of ``run``, ``folder`` or ``file`` is set."""

    what: str
    run: tuple[str, ...] | None = None
    folder: Path | None = None
    file: Path | None = None
    content: str = ""
    mode: int = 0o644
    owner: tuple[int, int] = (0, 0)
    owner_name: str = "root"  # the owner as a person reads it (before useradd, no uid yet)
    remove: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    def render(self, *, verbose: bool = True) -> str:
        """The step: what and how; a file's content only when ``verbose``."""
        if self.run is not None:
            return f"{self.what}\n    $ {' '.join(self.run)}"
        target = self.folder or self.file
        if self.remove:
            return f"{self.what}\n    remove {target}"
        kind = "folder" if self.folder is not None else "file"
        head = f"{self.what}\n    {kind} {target} mode {self.mode:04o} owner {self.owner_name}"
        if self.file is None:
            return head
        lines = split_lines(self.content)
        if not verbose:
            count = f"{len(lines)} line{'s' if len(lines) != 1 else ''}"
            return f"{head} ({count}; --verbose shows it)"
        body = "".join(f"    | {line}\n" for line in lines)
        return f"{head}\n{body}".rstrip("\n")


def carry_out(steps: Sequence[Step]) -> None:
    """Perform the steps in order; stop at the first failure with what failed."""
    for step in steps:
        if step.run is not None:
            done = subprocess.run(step.run, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise EnvironmentProblem(
                    f"`{' '.join(step.run)}` failed: {shorten(done.stderr.strip(), 300)}"
                )
        elif step.remove:
            _remove(step)
        elif step.folder is not None:
            make_folder(step.folder, step.mode, step.owner)
        elif step.file is not None:
            _write_file(step.file, step.content, step.mode, step.owner)


def make_folder(path: Path, mode: int, owner: tuple[int, int]) -> None:
    """Create, then change owner and mode through a descriptor opened without following links,
    so a folder swapped for a link after the mkdir is refused rather than chowned."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise EnvironmentProblem(f"{path} is not a folder ({exc.strerror})") from None
    try:
        os.fchown(fd, *owner)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _write_file(path: Path, content: str, mode: int, owner: tuple[int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    temp = path.with_name(f".{path.name}.new")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, content.encode("utf-8"))
        os.fchown(fd, *owner)
        os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)
    temp.replace(path)


def _remove(step: Step) -> None:
    if step.folder is not None:
        shutil.rmtree(step.folder, ignore_errors=True)
    elif step.file is not None:
        step.file.unlink(missing_ok=True)
