"""Serving settings: the roots, and ``context.toml`` (which can only hide more, never less).

```toml
roots = ["~/src/app"]            # used when no --root is given
projects = ["app", "lib"]        # optional allowlist of top-level folders of each root

[private]
folders = ["secrets", "customer-exports"]
patterns = ["*.vault", "prod-*.yaml", "config/prod/*.yaml", "**/secrets/*.json"]

[secrets]
allow = ["fp1:…"]                # values allowed back, by keyed fingerprint (`sp context allow`)
redaction_off = ["~/src/app"]    # roots served without redaction: loud (status, doctor, journal)
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

from safeport.context_server.policy.content_secrets import ContentSecrets
from safeport.context_server.policy.display_names import display_name
from safeport.context_server.policy.private_names import path_pattern_problem
from safeport.context_server.policy.read_policy import ReadPolicy
from safeport.context_server.workspace.fingerprint_key import load_key
from safeport.context_server.workspace.model import ServedRoot
from safeport.errors import ConfigError, UsageError
from safeport.shared.findings import Finding
from safeport.shared.paths import SafeportPaths
from safeport.shared.secret_scan import is_fingerprint


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


class SecretsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    redaction_off: list[str] = Field(default_factory=list)

    @field_validator("allow")
    @classmethod
    def _fingerprints_only(cls, values: list[str]) -> list[str]:
        for number, value in enumerate(values):
            if not is_fingerprint(value):
                # The entry itself is never repeated: it may be a value pasted by mistake.
                raise ValueError(
                    f"entry {number + 1} is not a fingerprint (fp1: and 64 hex digits, as "
                    "`sp context scan` prints them); never write a secret's value here"
                )
        return values


class ContextSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    roots: list[str] = Field(default_factory=list)
    projects: list[str] | None = None
    private: PrivateSettings = Field(default_factory=PrivateSettings)
    secrets: SecretsSettings = Field(default_factory=SecretsSettings)


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


def unredacted_roots(settings: ContextSettings, roots: Sequence[ServedRoot]) -> list[ServedRoot]:
    """The served roots ``[secrets] redaction_off`` names (a path that is no served root,
    or is only inside one, turns nothing off)."""
    wanted = {Path(os.path.realpath(Path(p).expanduser())) for p in settings.secrets.redaction_off}
    return [root for root in roots if root.path in wanted]


def content_secrets(
    settings: ContextSettings,
    paths: SafeportPaths,
    roots: Sequence[ServedRoot],
    *,
    create_key: bool = False,
) -> ContentSecrets:
    """What the served roots' files are withheld of. Without a key (none made yet), no
    fingerprint can match: every value stays withheld."""
    allowed = frozenset(settings.secrets.allow)
    key = load_key(paths, create=create_key) if allowed or create_key else None
    off = frozenset(root.path for root in unredacted_roots(settings, roots))
    return ContentSecrets(
        allowed=allowed,
        key=key,
        unredacted_roots=off,
        off_anywhere=bool(settings.secrets.redaction_off),
    )


def redaction_off(paths: SafeportPaths) -> list[str]:
    """The folders ``[secrets] redaction_off`` names, as real paths (`sp status`, `sp doctor`):
    each is served without redaction whenever it is a served root."""
    settings = load_settings(paths.context_config)
    return [os.path.realpath(Path(p).expanduser()) for p in settings.secrets.redaction_off]


def redaction_findings(paths: SafeportPaths) -> list[Finding]:
    """`sp doctor`'s word on ``[secrets]``: a warning for each root served unredacted."""
    try:
        off = redaction_off(paths)
    except ConfigError as exc:
        return [Finding("context.toml", "fail", exc.message, "fix the file, or remove it")]
    return [
        Finding(
            f"secret redaction {root}",
            "warn",
            "OFF: secrets inside this root's files are served to agents as written",
            f"remove it from redaction_off under [secrets] in {paths.context_config}",
        )
        for root in off
    ]
