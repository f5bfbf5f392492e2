"""The read policy: which workspace paths an agent may see, decided without touching the disk.

Everything here is pure. The workspace module (the only I/O) asks these questions in the order
DESIGN.md §11 fixes: the literal request is parsed and checked for privacy before anything is
looked up, so a private path gets the same answer whether or not it exists; the resolved path is
then checked again (scope, ignored, private), and only then the file's type.

Names are compared after NFC normalisation and casefolding: ``.ENV`` on a case-sensitive disk is
still an environment file, and a decomposed ``é`` (NFD, as macOS writes it) matches the composed
one a user typed into ``context.toml``.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from safeport.context_server.names import UndisplayableName, raw_name
from safeport.errors import Denied

BlockReason = Literal["private", "ignored", "out-of-scope", "binary", "unreadable-type"]

MAX_PATH_CHARS = 4096
_NAME_CACHE_SIZE = 50_000
MAX_COMPONENT_BYTES = 255

# Folders whose contents are user data rather than code (data/backup/export/log/media), and the
# credential folders of common tools. Matched against every component of a path.
DEFAULT_PRIVATE_FOLDERS: tuple[str, ...] = (
    "data",
    "backup",
    "backups",
    "export",
    "exports",
    "log",
    "logs",
    "media",
    "secret",
    "secrets",
    ".secrets",
    ".ssh",
    ".gnupg",
    ".password-store",
    # cloud and object-store command-line tools
    ".aws",
    ".azure",
    "gcloud",
    ".gcloud",
    ".oci",
    ".mc",
    ".pulumi",
    # containers and clusters
    ".docker",
    ".kube",
    ".minikube",
    ".helm",
)

# Name globs for secret-bearing files. Each is matched against the whole (normalised) name of
# every component, never as a substring: `tokenizer.py` and `keyboard.py` stay readable.
DEFAULT_PRIVATE_PATTERNS: tuple[str, ...] = (
    # environment files in every spelling (.env, .env.prod, .env-prod, .env_prod, .envrc,
    # .envprod) and folders named like them (.envs/.production/.django)
    ".env*",
    "*.env",
    # databases, event streams, logs
    "*.db",
    "*.db3",
    "*.sqlite",
    "*.sqlite3",
    "*.mdb",
    "*.jsonl",
    "*.ndjson",
    "*.log",
    # keys, certificates, keystores, password stores
    "*.pem",
    "*.key",
    "*.crt",
    "*.cer",
    "*.der",
    "*.csr",
    "*.p8",
    "*.pk8",
    "*.p12",
    "*.pfx",
    "*.pkcs12",
    "*.jks",
    "*.keystore",
    "*.keychain",
    "*.keychain-db",
    "*.gpg",
    "*.pgp",
    "*.asc",
    "*.ppk",
    "*.kdbx",
    "*.keytab",
    "*.mobileprovision",
    "secring.*",
    "*_key",
    # Terraform state, variables and CLI credentials
    "*.tfstate",
    "*.tfstate.*",
    "*.tfvars",
    "*.tfvars.json",
    ".terraformrc",
    "terraform.rc",
    "*.tfrc.json",
    # Kubernetes: kubeconfigs and secret manifests
    "kubeconfig",
    "kubeconfig[._-]*",
    "*.kubeconfig",
    "k3s.yaml",
    ".dockerconfigjson",
    # cloud and object-store CLI configuration
    "credentials",
    ".credentials",
    "*.credentials",
    "application_default_credentials.json",
    "*service[-_]account*.json",
    "serviceaccountkey*.json",
    "client_secret*.json",
    "accesstokens.json",
    "azureprofile.json",
    "msal_token_cache.*",
    ".boto",
    ".s3cfg",
    ".passwd-s3fs",
    "passwd-s3fs",
    "rclone.conf",
    ".rclone.conf",
    ".b2_account_info",
    ".databrickscfg",
    ".vault-token",
    # container registry auth
    ".dockercfg",
    "auth.json",
    # VPN profiles
    "*.ovpn",
    "*.nmconnection",
    "*.pcf",
    "wg[0-9]*.conf",
    # package registries, databases, web servers, git, shells
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".mylogin.cnf",
    ".htpasswd",
    "htpasswd",
    ".htdigest",
    ".git-credentials",
    ".gitcookies",
    "settings-security.xml",
    ".*_history",
    "known_hosts",
    "authorized_keys",
    # secret stores named as such
    "*.secret",
    "*.secrets",
)

# Data files named as secrets (`db-secret.yaml`, `secrets.prod.json`, `app_secrets.toml`):
# Kubernetes and Helm manifests, CI variables. Code (`secrets_scanner.py`) keeps its name.
_SECRET_DATA_FILE = re.compile(
    r"(?:(?:.*[-_.])?secrets?|secrets?\..*)\.(?:ya?ml|json|toml|ini|conf|cfg|properties|xml|env|txt)"
)
_SECRET_DATA_HINT = "*secret(s).<yaml|json|toml|ini|conf|cfg|properties|xml|env|txt>"  # noqa: S105 - a description, not a value
_CREDENTIALS_FILE = re.compile(r"credentials\.(?:json|toml|ya?ml|xml|ini|db|csv|txt|conf|cfg)")

# OpenSSH's key file names for every key type, under any suffix (`id_rsa.pub`, `id_rsa-cert.pub`,
# `id_rsa_work`, `id_rsa-old`, `id_rsa2`), and keys named `<anything>_<type>` as ssh-keygen -f
# users name them (`deploy_ed25519`). Not `id_*`, which would also hide `id_utils.py`.
_KEY_TYPES = r"(?:rsa|dsa|ecdsa|ed25519|ecdsa_sk|ed25519_sk|xmss)"
_SSH_KEY_NAME = re.compile(rf"id_{_KEY_TYPES}(?:[^a-z].*)?|.+[_.-]{_KEY_TYPES}(?:-cert)?(?:\.pub)?")
# A key extension anywhere after the first dot (`tls.key.2019`, `server.pem.orig`).
_KEY_SEGMENTS = frozenset(
    ["pem", "key", "ppk", "p8", "pk8", "p12", "pfx", "jks", "keystore", "kdbx"]
)

# Editor, backup and copy decorations around a name (stripped one at a time, every form checked):
# `.env~`, `id_rsa.bak`, `id_rsa-old`, `.id_rsa.swp` (vim), `#id_rsa#` and `.#id_rsa` (emacs),
# `id_rsa copy`, `id_rsa (2)`, `id_rsa.~1~`, compressed copies, and `.txt` appended.
_DECORATION_WORDS = frozenset(
    [
        *("bak", "bk", "bkp", "backup", "old", "orig", "rej", "save", "saved", "sav", "copy"),
        *("tmp", "temp", "swp", "swo", "swn", "swx", "txt", "prev", "previous", "new", "last"),
    ]
)
_COMPRESSED = frozenset(["gz", "bz2", "xz", "zip", "7z", "tar", "tgz", "zst"])
_NUMBERED_BACKUP = re.compile(r"\.~\d+~\Z")
_COPY_NUMBER = re.compile(r" \(\d+\)\Z")
_DECORATION_AROUND = (
    re.compile(r"\A\.(.+)\.sw[a-p]\Z"),  # vim swap file of `name`
    re.compile(r"\A#(.+)#\Z"),  # emacs auto-save
    re.compile(r"\A\.#(.+)\Z"),  # emacs lock
    re.compile(r"\A(?:copy of |backup of )(.+)\Z"),
)
_MAX_FORMS = 64

# Generated or vendored folders: never code the user wrote, often huge.
DEFAULT_IGNORED_FOLDERS: tuple[str, ...] = (
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".cache",
    ".gradle",
    ".next",
    ".nuxt",
    ".terraform",
    "dist",
    "build",
    "target",
    "htmlcov",
    ".eggs",
)
_IGNORED_SUFFIXES: tuple[str, ...] = (".egg-info",)

# Text a model can usefully read. Anything else is `unreadable-type`; allowed files are still
# sniffed for NUL bytes (`binary`) before a byte is served.
TEXT_EXTENSIONS: frozenset[str] = frozenset(
    [
        ".py",
        ".pyi",
        ".pyx",
        ".pxd",
        ".ipynb",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".cxx",
        ".hh",
        ".hpp",
        ".hxx",
        ".m",
        ".mm",
        ".rs",
        ".go",
        ".java",
        ".kt",
        ".kts",
        ".scala",
        ".groovy",
        ".gradle",
        ".cs",
        ".fs",
        ".vb",
        ".swift",
        ".dart",
        ".rb",
        ".php",
        ".pl",
        ".pm",
        ".lua",
        ".r",
        ".jl",
        ".ex",
        ".exs",
        ".erl",
        ".hrl",
        ".clj",
        ".cljs",
        ".edn",
        ".hs",
        ".ml",
        ".mli",
        ".elm",
        ".nim",
        ".zig",
        ".v",
        ".sv",
        ".vhd",
        ".vhdl",
        ".js",
        ".mjs",
        ".cjs",
        ".jsx",
        ".ts",
        ".tsx",
        ".vue",
        ".svelte",
        ".astro",
        ".html",
        ".htm",
        ".xhtml",
        ".css",
        ".scss",
        ".sass",
        ".less",
        ".styl",
        ".json",
        ".json5",
        ".jsonc",
        ".yaml",
        ".yml",
        ".toml",
        ".ini",
        ".cfg",
        ".conf",
        ".properties",
        ".xml",
        ".xsd",
        ".xsl",
        ".svg",
        ".md",
        ".markdown",
        ".rst",
        ".txt",
        ".adoc",
        ".tex",
        ".bib",
        ".org",
        ".csv",
        ".tsv",
        ".sql",
        ".graphql",
        ".gql",
        ".proto",
        ".thrift",
        ".avsc",
        ".sh",
        ".bash",
        ".zsh",
        ".fish",
        ".ps1",
        ".psm1",
        ".bat",
        ".cmd",
        ".mk",
        ".cmake",
        ".make",
        ".dockerfile",
        ".tf",
        ".tfvars",
        ".hcl",
        ".nix",
        ".bzl",
        ".bazel",
        ".star",
        ".lock",
        ".sum",
        ".mod",
        ".patch",
        ".diff",
        ".rej",
        ".in",
        ".tmpl",
        ".tpl",
        ".j2",
        ".jinja",
        ".jinja2",
        ".mustache",
        ".hbs",
        ".ejs",
        ".erb",
        ".haml",
        ".pug",
        ".liquid",
        ".gitignore",
        ".gitattributes",
        ".gitmodules",
        ".editorconfig",
        ".dockerignore",
        ".prettierrc",
        ".eslintrc",
        ".babelrc",
        ".npmignore",
        ".flake8",
        ".pylintrc",
        ".coveragerc",
        ".mailmap",
        ".rules",
        ".example",
        ".sample",
        ".template",
        ".dist",
        ".default",
    ]
)
BINARY_EXTENSIONS: frozenset[str] = frozenset(
    [
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".icns",
        ".webp",
        ".tif",
        ".tiff",
        ".psd",
        ".mp3",
        ".mp4",
        ".m4a",
        ".wav",
        ".flac",
        ".ogg",
        ".mov",
        ".avi",
        ".mkv",
        ".webm",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".zst",
        ".7z",
        ".rar",
        ".tar",
        ".jar",
        ".war",
        ".whl",
        ".egg",
        ".exe",
        ".dll",
        ".so",
        ".dylib",
        ".a",
        ".o",
        ".obj",
        ".lib",
        ".class",
        ".pyc",
        ".pyo",
        ".wasm",
        ".bin",
        ".dat",
        ".pdf",
        ".doc",
        ".docx",
        ".xls",
        ".xlsx",
        ".ppt",
        ".pptx",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".iso",
        ".dmg",
        ".img",
        ".pkl",
        ".pickle",
        ".npy",
        ".npz",
        ".parquet",
        ".h5",
        ".onnx",
        ".pt",
        ".safetensors",
    ]
)
TEXT_NAMES: frozenset[str] = frozenset(
    [
        "makefile",
        "gnumakefile",
        "dockerfile",
        "containerfile",
        "vagrantfile",
        "jenkinsfile",
        "procfile",
        "gemfile",
        "rakefile",
        "brewfile",
        "justfile",
        "license",
        "licence",
        "copying",
        "notice",
        "authors",
        "contributors",
        "changelog",
        "changes",
        "readme",
        "todo",
        "install",
        "manifest",
        "codeowners",
        "owners",
        "pipfile",
        "cargo.lock",
    ]
)


class NameGlobs:
    """fnmatch globs split by shape, so the common ones cost a set lookup or a str method:
    exact names, ``*<suffix>``, ``<prefix>*``; only the rest go through one regex."""

    def __init__(self, patterns: Iterable[str]) -> None:
        exact: set[str] = set()
        suffixes: list[str] = []
        prefixes: list[str] = []
        other: list[str] = []
        for pattern in patterns:
            body = pattern[1:] if pattern.startswith("*") else pattern
            head = pattern[:-1] if pattern.endswith("*") else pattern
            if not _has_wildcard(pattern):
                exact.add(pattern)
            elif pattern.startswith("*") and not _has_wildcard(body):
                suffixes.append(body)
            elif pattern.endswith("*") and not _has_wildcard(head):
                prefixes.append(head)
            else:
                other.append(pattern)
        self.exact = frozenset(exact)
        self.suffixes = tuple(suffixes)
        self.prefixes = tuple(prefixes)
        joined = "|".join(f"(?:{fnmatch.translate(p)})" for p in other)
        self.other = re.compile(joined or r"(?!)", re.DOTALL)

    def match(self, name: str) -> bool:
        return (
            name in self.exact
            or name.endswith(self.suffixes)
            or name.startswith(self.prefixes)
            or self.other.match(name) is not None
        )


def _has_wildcard(text: str) -> bool:
    return any(ch in text for ch in "*?[")


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


def normalise(name: str) -> str:
    """The form names are compared in: NFC, then casefolded."""
    return unicodedata.normalize("NFC", name).casefold()


def undecorated_forms(name: str) -> list[str]:
    """The normalised name and every form left by stripping editor/backup decorations.

    Invisible format characters and surrounding blanks or dots are dropped first: `.env ` and
    `.env\u200b` are the same file to a person reading a listing. Decorations nest in any
    order (`.#.aws#.swp~`), and stripping one can hide another, so every way of stripping is
    followed, not only the first that applies (bounded: a hostile name costs a few dozen forms).
    """
    folded = normalise(name)
    if not folded.isascii() and any(unicodedata.category(ch) == "Cf" for ch in folded):
        folded = "".join(ch for ch in folded if unicodedata.category(ch) != "Cf")
    forms = [folded]
    seen = {folded}
    frontier = [folded]
    while frontier and len(forms) < _MAX_FORMS:
        form = frontier.pop(0)
        for stripped in _strip_options(form):
            if stripped and stripped not in seen and len(forms) < _MAX_FORMS:
                seen.add(stripped)
                forms.append(stripped)
                frontier.append(stripped)
    return forms


def _strip_options(form: str) -> list[str]:
    """Each form one decoration shorter than ``form``."""
    options = []
    trimmed = form.lstrip(" \t").rstrip(" \t.")  # never a leading dot: `.env ` is `.env`
    if trimmed and trimmed != form:
        options.append(trimmed)
    first, last = form[:1], form[-1:]
    if first in (".", "#", "c", "b"):
        options += [m.group(1) for around in _DECORATION_AROUND if (m := around.match(form))]
    if last == "~":
        m = _NUMBERED_BACKUP.search(form)
        options.append(form[: m.start()] if m else form[:-1])
    if last == ")" and (m := _COPY_NUMBER.search(form)):
        options.append(form[: m.start()])
    cut = max(form.rfind(sep) for sep in "._- ")
    if cut > 0:
        tail = form[cut + 1 :]
        if (
            tail in _DECORATION_WORDS
            or tail.isdigit()
            or (form[cut] == "." and tail in _COMPRESSED)
        ):
            options.append(form[:cut])
    return options


@dataclass(frozen=True)
class RequestPath:
    """A request path split into components, relative to one served root."""

    root: str  # the root's display name
    parts: tuple[str, ...]

    @property
    def display(self) -> str:
        return "/".join(self.parts) if self.parts else "."


def parse_request_path(text: object, root_names: Sequence[str]) -> RequestPath:
    """Turn a tool's ``path`` argument into components, or refuse it with a clear sentence.

    Paths are relative to the served root (with several roots, the first component names the
    root). Absolute paths, ``..``, Windows forms and control characters are refused outright:
    nothing a well-behaved client sends needs them, and each has been an escape elsewhere.
    """
    if not isinstance(text, str):
        raise InvalidInput("invalid path: expected a string")
    if text == "":
        raise InvalidInput('invalid path: empty; use "." for the root')
    if len(text) > MAX_PATH_CHARS:
        raise InvalidInput(f"invalid path: longer than {MAX_PATH_CHARS} characters")
    if "\x00" in text:
        raise InvalidInput("invalid path: contains a NUL byte")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        raise InvalidInput("invalid path: contains a control character")
    if "\\" in text or re.match(r"^[A-Za-z]:", text):
        raise InvalidInput(
            "invalid path: Windows-style paths are not accepted; use forward slashes "
            "relative to the workspace root"
        )
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        raise InvalidInput(
            "invalid path: URLs are not accepted; use a path relative to the workspace root"
        )
    if text.startswith("/") or text.startswith("~"):
        raise InvalidInput(
            "invalid path: absolute paths are not accepted; use a path relative to the "
            "workspace root (see list_roots)"
        )
    parts = tuple(p for p in text.split("/") if p not in ("", "."))
    if ".." in parts:
        raise InvalidInput("invalid path: '..' is not accepted; use a path inside the workspace")
    for part in parts:
        try:
            raw = raw_name(part)
        except UndisplayableName:
            raise InvalidInput(
                "invalid path: a %XX escape this server never writes; use names exactly as listed"
            ) from None
        if len(raw) > MAX_COMPONENT_BYTES:
            raise InvalidInput(
                f"invalid path: a component is longer than {MAX_COMPONENT_BYTES} bytes"
            )
    if len(root_names) <= 1:
        return RequestPath(root_names[0] if root_names else "", parts)
    if not parts:
        return RequestPath("", ())  # the virtual top that lists the roots
    if parts[0] not in root_names:
        raise InvalidInput(
            "invalid path: with several roots, start the path with a root name (see list_roots)"
        )
    return RequestPath(parts[0], parts[1:])


@dataclass(frozen=True)
class ReadPolicy:
    """What is private, ignored and readable; tightened (never loosened) by ``context.toml``."""

    private_folders: frozenset[str] = frozenset(normalise(n) for n in DEFAULT_PRIVATE_FOLDERS)
    private_patterns: tuple[str, ...] = tuple(normalise(p) for p in DEFAULT_PRIVATE_PATTERNS)
    ignored_folders: frozenset[str] = frozenset(normalise(n) for n in DEFAULT_IGNORED_FOLDERS)
    # Absolute locations that are private wherever a root contains them (safeport's own folders).
    private_locations: tuple[PurePosixPath, ...] = ()
    # Optional allowlist of top-level folders of each root; loose files at the root stay readable.
    projects: frozenset[str] | None = None
    max_read_bytes: int = 128 * 1024
    max_file_bytes: int = 64 * 1024 * 1024
    _globs: NameGlobs = field(init=False, repr=False, compare=False)
    _locations: frozenset[str] = field(init=False, repr=False, compare=False)
    _location_prefixes: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _private_cache: dict[str, bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # The check runs for every listed entry and every walked file: globs by shape.
        object.__setattr__(self, "_globs", NameGlobs(self.private_patterns))
        locations = frozenset(str(loc) for loc in self.private_locations)
        prefixes = tuple(loc.rstrip("/") + "/" for loc in locations)
        object.__setattr__(self, "_locations", locations)
        object.__setattr__(self, "_location_prefixes", prefixes)
        object.__setattr__(self, "_private_cache", {})

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
        return ReadPolicy(
            private_folders=self.private_folders | {normalise(f) for f in folders},
            private_patterns=self.private_patterns + tuple(normalise(p) for p in patterns),
            ignored_folders=self.ignored_folders,
            private_locations=self.private_locations + tuple(locations),
            projects=narrowed,
            max_read_bytes=self.max_read_bytes,
            max_file_bytes=self.max_file_bytes,
        )

    # -- names --------------------------------------------------------------------------------

    def is_private_name(self, name: str) -> bool:
        known = self._private_cache.get(name)
        if known is not None:
            return known
        verdict = any(self._is_private_form(form) for form in undecorated_forms(name))
        if len(self._private_cache) > _NAME_CACHE_SIZE:
            self._private_cache.clear()  # names repeat across calls; a crude bound is enough
        self._private_cache[name] = verdict
        return verdict

    def _is_private_form(self, form: str) -> bool:
        if form in self.private_folders or self._globs.match(form):
            return True
        if _SSH_KEY_NAME.fullmatch(form) or _SECRET_DATA_FILE.fullmatch(form):
            return True
        if _CREDENTIALS_FILE.fullmatch(form):
            return True
        segments = form.split(".")
        return any(seg in _KEY_SEGMENTS for seg in segments[1:])

    def is_ignored_name(self, name: str) -> bool:
        folded = normalise(name)
        return folded in self.ignored_folders or folded.endswith(_IGNORED_SUFFIXES)

    def entry_verdict(
        self, name: str, absolute: str, *, is_dir: bool, top_level: bool
    ) -> BlockReason | None:
        """A listed entry inside a folder that already passed every check: only its own name
        (and its own location) can add a reason, so the folder's components are not re-checked."""
        if self.is_private_name(name) or self.is_private((), absolute):
            return "private"
        if self.is_ignored_name(name):
            return "ignored"
        if top_level and self.out_of_projects((name,), is_dir=is_dir):
            return "out-of-scope"
        return None

    # -- whole paths --------------------------------------------------------------------------

    def is_private(self, parts: Sequence[str], absolute: PurePosixPath | str | None = None) -> bool:
        """Any private component, or a location inside one of safeport's own folders."""
        if any(self.is_private_name(p) for p in parts):
            return True
        if absolute is None or not self._locations:
            return False
        # String prefixes ending in "/" compare whole components (a sibling such as
        # /srv/ws/.sp-notes is not inside /srv/ws/.sp), and cost far less than pathlib.
        text = str(absolute)
        return text in self._locations or (text + "/").startswith(self._location_prefixes)

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
                _SECRET_DATA_HINT,
                "credentials.<data extension>",
                "<anything>.<key extension>.<anything>",
            ],
            "private_copies": "editor, backup and copy forms of every private name "
            "(~, .bak, .old, -old, .orig, .swp, .save, .copy, .txt, (1), compressed …)",
            "private_locations": len(self.private_locations),
            "ignored_folders": [*sorted(self.ignored_folders), "*.egg-info"],
            "projects": sorted(self.projects) if self.projects is not None else None,
            "readable_extensions": len(TEXT_EXTENSIONS),
            "max_read_bytes": self.max_read_bytes,
        }


def narrow_scope(configured: Sequence[str], client: Sequence[str]) -> tuple[str, ...]:
    """Intersect the configured roots with a client's roots (all real, absolute paths).

    A client root inside a configured root narrows to it; one that contains a configured root
    leaves that root whole; one elsewhere adds nothing. Client roots never widen what is served.
    """
    scope: list[str] = []
    for offered in client:
        for root in configured:
            if within(offered, (root,)):
                scope.append(offered)
            elif within(root, (offered,)):
                scope.append(root)
    return tuple(dict.fromkeys(scope))


def within(path: str, prefixes: Sequence[str]) -> bool:
    """Component-wise containment on normalised absolute path strings."""
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


def looks_binary(head: bytes) -> bool:
    """A NUL byte in the first block marks binary content, as git and grep decide."""
    return b"\x00" in head[:8192]
