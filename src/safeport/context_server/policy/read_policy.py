"""The read policy: which workspace paths an agent may see, decided without touching the disk.

Everything here is pure. The workspace (the only I/O) asks these questions in a fixed order: the
literal request is parsed (``request_path.py``) and checked for privacy before anything is
looked up, so a private path gets the same answer whether or not it exists; the resolved path
is then checked again (scope, ignored, private), and only then the file's type.

Every listed entry and every walked file is judged, so what a name alone decides is cached per
policy, by name and entry type (:meth:`ReadPolicy.name_verdict`). A verdict that also depends
on where the entry is (safeport's own folders, the project allowlist, the client's roots) or on
what it is beyond its type (a link's target, a hard link) is never cached.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from safeport.context_server.policy.private_names import (
    NameGlobs,
    PathGlobs,
    is_builtin_secret_form,
    normalise,
    undecorated_forms,
)
from safeport.context_server.policy.private_tables import (
    DEFAULT_PRIVATE_FOLDERS,
    DEFAULT_PRIVATE_PATTERNS,
    SECRET_DATA_HINT,
)
from safeport.context_server.policy.public_material import (
    PublicRule,
    holds_only_public_material,
    public_rule,
)
from safeport.context_server.policy.readable_tables import (
    BINARY_EXTENSIONS,
    DEFAULT_IGNORED_FOLDERS,
    IGNORED_SUFFIXES,
    TEXT_EXTENSIONS,
    TEXT_NAMES,
)
from safeport.errors import Denied

BlockReason = Literal["private", "ignored", "out-of-scope", "binary", "unreadable-type"]
# What a name-only verdict is asked about: a folder is entered, a file is read, anything else
# (a link, a special file) is judged elsewhere by what it is.
NameKind = Literal["file", "directory", "other"]

PrivateRule = Literal["credential-name", "private-folder", "private-pattern"]
_DEFAULT_FOLDERS = frozenset(normalise(n) for n in DEFAULT_PRIVATE_FOLDERS)
_DEFAULT_GLOBS = NameGlobs(normalise(p) for p in DEFAULT_PRIVATE_PATTERNS)

# Names repeat across calls and walks; a crude bound is enough (cleared when reached).
_NAME_CACHE_SIZE = 50_000
_UNKNOWN = object()


class Refused(Denied):
    """A tool request the read policy turned down; the message is a stable, path-free sentence."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# The sentences every tool returns. They name the rule, never the path or anything behind it.
SENTENCES: dict[str, str] = {
    "private": "refused: the path is private under the read policy",
    "ignored": "refused: the path is inside an ignored (generated) folder",
    "out-of-scope": "refused: the path is outside the served workspace",
    "binary": "refused: the file is binary, not text",
    "unreadable-type": "refused: not a readable text file (type, special file or hard link)",
    "not-found": "not found: no such file or folder in the served workspace",
    "changed": "refused: the file changed while it was being opened; try again",
    "too-large": "refused: the file is over the size this tool reads",
    "holds-secret": "refused: the file holds a secret, and its hash would confirm a guess of it",
    "not-a-file": "refused: the path is a folder, not a file",
    "not-a-folder": "refused: the path is a file, not a folder",
    "too-many-links": "refused: the path follows more than 40 symbolic links (a loop or an "
    "over-long chain)",
}


def refusal(reason: str) -> Refused:
    return Refused(reason, SENTENCES[reason])


class InvalidInput(Refused):
    """Malformed input (a path, cursor or number); the sentence says what to send instead."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid", message)


@dataclass(frozen=True)
class ReadPolicy:
    """What is private, ignored and readable; tightened (never loosened) by ``context.toml``."""

    private_folders: frozenset[str] = frozenset(normalise(n) for n in DEFAULT_PRIVATE_FOLDERS)
    private_patterns: tuple[str, ...] = tuple(normalise(p) for p in DEFAULT_PRIVATE_PATTERNS)
    # Patterns holding `/`: matched against the path relative to its root (PathGlobs).
    private_paths: tuple[str, ...] = ()
    ignored_folders: frozenset[str] = frozenset(normalise(n) for n in DEFAULT_IGNORED_FOLDERS)
    # Absolute locations that are private wherever a root contains them (safeport's own folders).
    private_locations: tuple[PurePosixPath, ...] = ()
    # Optional allowlist of top-level folders of each root; loose files at the root stay readable.
    projects: frozenset[str] | None = None
    max_read_bytes: int = 128 * 1024
    max_file_bytes: int = 64 * 1024 * 1024
    _globs: NameGlobs = field(init=False, repr=False, compare=False)
    _paths: PathGlobs = field(init=False, repr=False, compare=False)
    _locations: frozenset[str] = field(init=False, repr=False, compare=False)
    _location_prefixes: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _private_cache: dict[str, bool] = field(init=False, repr=False, compare=False)
    _public_rules: dict[str, PublicRule | None] = field(init=False, repr=False, compare=False)
    _verdicts: dict[tuple[str, str], BlockReason | None] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        # The check runs for every listed entry and every walked file: globs by shape.
        object.__setattr__(self, "_globs", NameGlobs(self.private_patterns))
        object.__setattr__(self, "_paths", PathGlobs(self.private_paths))
        locations = frozenset(str(loc) for loc in self.private_locations)
        prefixes = tuple(loc.rstrip("/") + "/" for loc in locations)
        object.__setattr__(self, "_locations", locations)
        object.__setattr__(self, "_location_prefixes", prefixes)
        object.__setattr__(self, "_private_cache", {})
        object.__setattr__(self, "_public_rules", {})
        object.__setattr__(self, "_verdicts", {})

    def tightened(
        self,
        *,
        folders: Iterable[str] = (),
        patterns: Iterable[str] = (),
        locations: Iterable[PurePosixPath] = (),
        projects: Iterable[str] | None = None,
    ) -> ReadPolicy:
        """A policy that hides more. There is deliberately no way to hide less."""
        narrowed = self.projects
        if projects is not None:
            wanted = frozenset(normalise(p) for p in projects)
            narrowed = wanted if narrowed is None else narrowed & wanted
        # A folder or pattern holding `/` names a path below the root, never one name.
        given = [normalise(p) for p in [*patterns, *(f for f in folders if "/" in f)]]
        return ReadPolicy(
            private_folders=self.private_folders | {normalise(f) for f in folders if "/" not in f},
            private_patterns=self.private_patterns + tuple(p for p in given if "/" not in p),
            private_paths=self.private_paths + tuple(p for p in given if "/" in p),
            ignored_folders=self.ignored_folders,
            private_locations=self.private_locations + tuple(locations),
            projects=narrowed,
            max_read_bytes=self.max_read_bytes,
            max_file_bytes=self.max_file_bytes,
        )

    # -- names --------------------------------------------------------------------------------

    def name_verdict(self, name: str, kind: NameKind) -> BlockReason | None:
        """What the name alone says about an entry of this kind: private, ignored, or (for a
        file) its type. Cached per policy, by (name, kind): the verdict is a function of those
        two and of this frozen policy only, so it can never go stale; a new policy starts empty.
        The kind must come from the entry as it is now (a fresh ``d_type`` or ``lstat``)."""
        key = (name, kind)
        known = self._verdicts.get(key, _UNKNOWN)
        if known is not _UNKNOWN:
            return known  # type: ignore[return-value]
        verdict: BlockReason | None = None
        if self.is_private_name(name):
            verdict = "private"
        elif self.is_ignored_name(name):
            verdict = "ignored"
        elif kind == "file":
            verdict = self.type_verdict(name)
        if len(self._verdicts) > _NAME_CACHE_SIZE:
            self._verdicts.clear()
        self._verdicts[key] = verdict
        return verdict

    def is_private_name(self, name: str) -> bool:
        known = self._private_cache.get(name)
        if known is not None:
            return known
        verdict = any(self._is_private_form(form) for form in undecorated_forms(name))
        if len(self._private_cache) > _NAME_CACHE_SIZE:
            self._private_cache.clear()
        self._private_cache[name] = verdict
        return verdict

    def _is_private_form(self, form: str) -> bool:
        if form in self.private_folders or self._globs.match(form):
            return True
        return is_builtin_secret_form(form)

    def private_rule(self, name: str) -> PrivateRule | None:
        """Which rule makes a name private: safeport's own (credential and key files, and
        their copies), or the ``[private]`` folders or patterns of ``context.toml``. For the
        person's scan report; the agent only ever hears "private"."""
        forms = undecorated_forms(name)
        if any(
            f in _DEFAULT_FOLDERS or _DEFAULT_GLOBS.match(f) or is_builtin_secret_form(f)
            for f in forms
        ):
            return "credential-name"
        if any(f in self.private_folders for f in forms):
            return "private-folder"
        if any(self._globs.match(f) for f in forms):
            return "private-pattern"
        return None

    def public_rule(self, name: str) -> PublicRule | None:
        """The content check a name that looks like key material asks for (certificates, SSH
        public keys), or None. Judged on every undecorated form: ``ca.crt.txt`` is a
        certificate file to a reader, and the stricter check wins."""
        known = self._public_rules.get(name, _UNKNOWN)
        if known is not _UNKNOWN:
            return known  # type: ignore[return-value]
        rules = {public_rule(form) for form in undecorated_forms(name)}
        rule: PublicRule | None = None
        if "certificates" in rules:
            rule = "certificates"
        elif "ssh-public-keys" in rules:
            rule = "ssh-public-keys"
        if len(self._public_rules) > _NAME_CACHE_SIZE:
            self._public_rules.clear()
        self._public_rules[name] = rule
        return rule

    def content_verdict(self, name: str, data: bytes, size: int) -> BlockReason | None:
        """What a file's content says, for a name whose content decides: "private" unless
        ``data`` is the whole file (``size`` bytes at open) and holds public material only.
        Never cached: the same name holds other bytes tomorrow."""
        rule = self.public_rule(name)
        if rule is None:
            return None
        if len(data) != size or not holds_only_public_material(data, rule):
            return "private"
        return None

    def is_ignored_name(self, name: str) -> bool:
        folded = normalise(name)
        return folded in self.ignored_folders or folded.endswith(IGNORED_SUFFIXES)

    # -- whole paths --------------------------------------------------------------------------

    def is_private(self, parts: Sequence[str], absolute: PurePosixPath | str | None = None) -> bool:
        """Any private component, a path a ``[private]`` path pattern names (``parts`` are
        relative to their root), or a location inside one of safeport's own folders."""
        if any(self.is_private_name(p) for p in parts) or self.is_private_path(parts):
            return True
        return absolute is not None and self.is_private_location(str(absolute))

    def is_private_path(self, parts: Sequence[str]) -> bool:
        """Whether a ``[private]`` pattern holding ``/`` names this path or a folder above it."""
        return bool(self.private_paths) and self._paths.match(parts)

    def is_private_location(self, absolute: str) -> bool:
        """Whether an absolute path is, or is inside, one of safeport's own folders."""
        if not self._locations:
            return False
        # String prefixes ending in "/" compare whole components (a sibling such as
        # /srv/ws/.sp-notes is not inside /srv/ws/.sp), and cost far less than pathlib.
        return absolute in self._locations or (absolute + "/").startswith(self._location_prefixes)

    def locations_in(self, folder: str) -> tuple[bool, frozenset[str]]:
        """For the entries of one folder, what ``is_private_location(f"{folder}/{name}")``
        says of each: (every entry is, the names that are). A name holds no ``/``, so only a
        location at or above the folder, or one naming an entry itself, can match."""
        inside = folder + "/"
        if inside.startswith(self._location_prefixes):
            return True, frozenset()
        ends = (p[len(inside) : -1] for p in self._location_prefixes if p.startswith(inside))
        return False, frozenset(e for e in ends if e and "/" not in e)

    def is_ignored(self, parts: Sequence[str]) -> bool:
        return any(self.is_ignored_name(p) for p in parts)

    def out_of_projects(self, parts: Sequence[str], *, is_dir: bool) -> bool:
        """With a project allowlist, only its folders (and loose files at the root) are served."""
        if self.projects is None or not parts:
            return False
        if len(parts) == 1 and not is_dir:
            return False
        return normalise(parts[0]) not in self.projects

    def literal_verdict(
        self, parts: Sequence[str], absolute: PurePosixPath | str
    ) -> BlockReason | None:
        """The first check, on the path exactly as requested, before anything is looked up."""
        if self.is_private(parts, absolute):
            return "private"
        return None

    def resolved_verdict(
        self, parts: Sequence[str], absolute: PurePosixPath | str, *, is_dir: bool
    ) -> BlockReason | None:
        """The checks on the resolved path inside a root: ignored, private, project scope."""
        if self.is_ignored(parts):
            return "ignored"
        if self.is_private(parts, absolute):
            return "private"
        if self.out_of_projects(parts, is_dir=is_dir):
            return "out-of-scope"
        return None

    def type_verdict(self, name: str) -> BlockReason | None:
        """Readable types: an allowlist of text extensions and names; files without one pass."""
        folded = normalise(name)
        if folded in TEXT_NAMES or folded.startswith(("readme", "license", "changelog")):
            return None
        dot = folded.rfind(".")
        suffix = folded[dot:] if 0 < dot < len(folded) - 1 else ""
        if suffix == "" or suffix in TEXT_EXTENSIONS:
            return None
        if suffix in BINARY_EXTENSIONS:
            return "binary"
        if folded.startswith(".") and folded.count(".") == 1:
            return None  # dotfiles such as .bashrc (private ones are caught before this)
        return "unreadable-type"

    def summary(self) -> dict[str, object]:
        """What a client may show a person about the rules in force."""
        return {
            "private_folders": sorted(self.private_folders),
            "private_patterns": [
                *self.private_patterns,
                "id_<ssh key type><any suffix>",
                "<name>_<ssh key type>[.pub]",
                SECRET_DATA_HINT,
                "credentials.<data extension>",
                "<anything>.<key extension>.<anything>",
            ],
            "public_material": "authorized_keys, known_hosts, *.pub and certificates "
            "(.pem, .crt, .cer, .csr) are served only when they hold public keys, "
            "certificates and requests, and nothing private or unparseable",
            "private_copies": "editor, backup and copy forms of every private name "
            "(~, .bak, .old, -old, .orig, .swp, .save, .copy, .txt, (1), compressed …)",
            "private_paths": list(self.private_paths),
            "private_locations": len(self.private_locations),
            "ignored_folders": [*sorted(self.ignored_folders), "*.egg-info"],
            "projects": sorted(self.projects) if self.projects is not None else None,
            "readable_extensions": len(TEXT_EXTENSIONS),
            "max_read_bytes": self.max_read_bytes,
        }


def looks_binary(head: bytes) -> bool:
    """A NUL byte in the first block marks binary content, as git and grep decide."""
    return b"\x00" in head[:8192]
