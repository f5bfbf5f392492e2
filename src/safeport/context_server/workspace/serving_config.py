"""Serving settings: the roots, and ``context.toml`` (which can only hide more, never less).

```toml
roots = ["~/src/app"]            # used when no --root is given
projects = ["app", "lib"]        # optional allowlist of top-level folders of each root

[private]
folders = ["secrets", "customer-exports"]
patterns = ["*.vault", "prod-*.yaml", "config/prod/*.yaml", "**/secrets/*.json"]
```

A pattern without ``/`` matches one name anywhere; one with ``/`` matches the path relative to
each root (``**`` for any number of folders), and hides everything below a folder it names.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from safeport.context_server.policy.display_names import display_name
from safeport.context_server.policy.private_names import path_pattern_problem
from safeport.context_server.policy.read_policy import ReadPolicy
from safeport.context_server.workspace.gate import ServedRoot
from safeport.errors import ConfigError, UsageError
from safeport.shared.paths import SafeportPaths


class PrivateSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    folders: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)

    @field_validator("folders", "patterns")
    @classmethod
    def _paths_are_plain(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            problem = path_pattern_problem(pattern) if "/" in pattern else None
            if problem:
                raise ValueError(f"pattern {pattern!r}: {problem}")
        return patterns


class ContextSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    roots: list[str] = Field(default_factory=list)
    projects: list[str] | None = None
    private: PrivateSettings = Field(default_factory=PrivateSettings)


def load_settings(path: Path) -> ContextSettings:
    """Read ``context.toml``; a missing file means the defaults."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ContextSettings()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return ContextSettings.model_validate(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    except ValidationError as exc:
        where = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"{path}: {where}") from None


def served_roots(cli_roots: Sequence[str], settings: ContextSettings) -> list[ServedRoot]:
    """Roots from the command line, else from ``context.toml``; none at all is refused."""
    given = list(cli_roots) or [str(Path(r).expanduser()) for r in settings.roots]
    if not given:
        raise UsageError(
            "no workspace root is configured",
            hint='pass --root DIR, or add roots = ["DIR"] to context.toml',
        )
    roots: list[ServedRoot] = []
    names: set[str] = set()
    for raw in given:
        path = Path(os.path.realpath(raw))
        if not path.is_dir():
            raise UsageError(f"the root {raw} is not a folder", hint="pass an existing folder")
        if path == Path("/"):
            raise UsageError("the filesystem root cannot be served", hint="pass a project folder")
        if any(r.path == path for r in roots):
            continue
        # Root names are shown and sent back like any other name: display form.
        base = display_name(os.fsencode(path.name))
        name = base
        n = 2
        while name in names:
            name = f"{base}-{n}"
            n += 1
        names.add(name)
        roots.append(ServedRoot(name, path))
    return roots


def read_policy(settings: ContextSettings, paths: SafeportPaths) -> ReadPolicy:
    """The defaults, tightened by the user's settings and by safeport's own folders."""
    locations: list[PurePosixPath] = []
    for folder in paths.private_dirs():
        locations.append(PurePosixPath(folder))
        locations.append(PurePosixPath(os.path.realpath(folder)))
    return ReadPolicy().tightened(
        folders=settings.private.folders,
        patterns=settings.private.patterns,
        locations=dict.fromkeys(locations),
        projects=settings.projects,
    )
