"""Who is on the other end of a socket, as plain values.

A :class:`PeerIdentity` is taken once when a connection is accepted: the peer's uid and pid from
the kernel, then the process chain up to 16 hops with start times, executables and their digests.
Before every request the gateway asks :class:`IdentityProbe.verify` whether the peer is still that
same process: a pid that exited and was reused, or a process that exec'd another program, is no
longer the peer that connected, and nothing it asks for is served.

The platform parts (reading ``/proc``, running ``codesign``) live in ``identity_linux`` and
``identity_macos``; this module holds the values and the rules that do not touch the system.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from safeport.errors import Denied
from safeport.shared.audit import JournalBody

MAX_CHAIN = 16

# macOS (codesign): valid, unsigned, invalid. Linux (package records, see installed_files):
# package, user-package, modified, not-packaged. "unsupported": nothing could be checked.
SignatureStatus = Literal[
    "valid",
    "unsigned",
    "invalid",
    "unsupported",
    "package",
    "user-package",
    "modified",
    "not-packaged",
]
# Whether the requester's environment was read for variables that inject code (environment.py).
EnvironStatus = Literal["read", "unreadable", "unsupported"]

# Programs whose code signature (or digest) names a runtime, not the code it runs. What they run
# is only what their command line claims, so no rule naming a program admits one by default.
_INTERPRETERS = re.compile(
    r"^(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|ruby[0-9.]*|perl[0-9.]*|php[0-9.]*|"
    r"sh|bash|dash|zsh|ksh|mksh|fish|tcsh|csh|busybox)$"
)
# Packaged programs that run code they are given (gdb's Python, a Tcl or Lua script, vim's
# `libcall`, sqlite3's `.load`, a Java class): interpreters too, with no script grammar read here.
# No list is complete, which is why `signature` alone is not a rule (schemas.config.CallerRule).
_CODE_HOSTS = re.compile(
    r"^(gdb|gdb-multiarch|lldb|tclsh[0-9.]*|wish[0-9.]*|expect|lua[0-9.]*|luajit|java|jshell|"
    r"jrunscript|Rscript|R|julia|guile[0-9.]*|gawk|mawk|nawk|awk|original-awk|vim(\.\w+)?|"
    r"nvim|emacs[\w.-]*|sqlite3?|gjs|osascript|pwsh|irb|erl|escript|sbcl|clisp|ocaml)$"
)
# Shells and launchers are *wrappers*: they start the next program and are nobody's MCP host.
_SHELLS = re.compile(r"^(sh|bash|dash|zsh|ksh|mksh|fish|tcsh|csh|busybox)$")
_LAUNCHERS = re.compile(
    r"^(env|uv|uvx|npx|npm|pnpm|pnpx|yarn|bunx|pipx|poetry|hatch|pdm|nohup|setsid|timeout|sudo|"
    r"doas|runuser|setpriv|su|nice|ionice|chrt|taskset|stdbuf|time|script|tini|dumb-init|"
    r"corepack)$"
)
# Terminal multiplexers and emulators hold many sessions; none of them is a client.
_TERMINALS = re.compile(
    r"^(tmux|tmux: server|screen|SCREEN|zellij|byobu|abduco|dtach|"
    r"gnome-terminal|gnome-terminal-server|kgx|ptyxis|ptyxis-agent|konsole|yakuake|xterm|uxterm|"
    r"urxvt|urxvtd|rxvt|alacritty|kitty|wezterm|wezterm-gui|wezterm-mux-server|foot|st|"
    r"xfce4-terminal|mate-terminal|lxterminal|qterminal|terminator|tilix|guake|terminology|"
    r"sakura|ghostty|iTerm2|iTerm|Terminal|warp|Warp|tabby|Tabby|hyper|Hyper)$"
)


class IdentityChanged(Denied):
    """The peer is no longer the process that connected (exited, exec'd, or its pid reused)."""


class IdentityUnavailable(Denied):
    """The peer's identity could not be read (it exited at once, or /proc hides it)."""


@dataclass(frozen=True)
class ProcessInfo:
    """One process in a peer's chain."""

    pid: int
    start_time: int  # kernel ticks since boot on Linux; stable for the life of the process
    uid: int
    name: str
    exe: str
    exe_sha256: str | None
    signature: SignatureStatus = "unsupported"
    team_id: str | None = None
    authority: str | None = None
    interpreter: bool = False
    launcher: bool = False
    script: str | None = None
    script_sha256: str | None = None
    origin: str | None = None  # "dpkg python3.11-minimal", "pip safeport 0.1.0" (Linux)
    script_signature: SignatureStatus | None = None
    script_origin: str | None = None
    script_changed: bool = False  # the script file changed after the process started
    environ: EnvironStatus = "unsupported"
    injected_env: tuple[tuple[str, str], ...] = ()  # (name, value) of code-injecting variables
    label: str | None = None  # a context server's --origin: its client entry's label (claimed)

    @property
    def instance(self) -> tuple[int, int]:
        """(pid, start time): what tells this process apart from a later one with its pid."""
        return (self.pid, self.start_time)

    @property
    def shell(self) -> bool:
        return is_shell(self.name)

    @property
    def terminal(self) -> bool:
        """A terminal multiplexer or emulator (also one written in an interpreted language,
        like terminator): it holds many sessions, so it is nobody's client.

        The name alone is not enough: an agent could run its own program as ``tmux`` between
        itself and its host, so the host would no longer count as the client. A terminal must be
        an installed file (a package record matches, or on macOS a valid signature)."""
        vouched = self.signature in ("package", "valid")
        if is_terminal(self.name):
            return vouched
        script = self.script or ""
        return (
            self.interpreter
            and vouched
            and self.script_signature == "package"
            and is_terminal(script.rsplit("/", 1)[-1])
        )

    @property
    def wrapper(self) -> bool:
        """A shell or launcher: it starts the next program and is not itself a host."""
        return self.launcher or self.shell or is_launcher(self.name)

    @property
    def code_injected(self) -> bool:
        """Variables that inject code are set, or the environment could not be read to tell."""
        return bool(self.injected_env) or self.environ == "unreadable"

    def signature_text(self) -> str:
        return describe_signature(self.signature, self.origin, self.authority)

    def as_record(self) -> JournalBody:
        """The journal/card form: identities and digests, never arguments; of the environment
        only the names of variables that inject code, and their values."""
        record: dict[str, object] = {
            "pid": self.pid,
            "start": self.start_time,
            "uid": self.uid,
            "exe": self.exe,
            "sha256": self.exe_sha256,
            "signature": self.signature,
        }
        if self.origin:
            record["origin"] = self.origin
        if self.team_id:
            record["team_id"] = self.team_id
        if self.interpreter:
            record["interpreter"] = True
            record["script"] = self.script
            record["script_sha256"] = self.script_sha256
            if self.script_signature is not None:
                record["script_signature"] = self.script_signature
                record["script_origin"] = self.script_origin
            if self.script_changed:
                record["script_changed"] = True
        if self.environ != "unsupported":
            record["environ"] = self.environ
        if self.injected_env:
            record["injected_env"] = [list(pair) for pair in self.injected_env]
        return record


@dataclass(frozen=True)
class PeerIdentity:
    """The peer of one connection, as resolved when it was accepted."""

    uid: int
    gid: int
    chain: tuple[ProcessInfo, ...]  # chain[0] is the peer itself, then its parents
    pidfd: int | None = None  # a pidfd held for the connection's life, where the kernel gives one
    fingerprint: tuple[object, ...] = ()  # what ``verify`` compares (exe inode, cmdline digest)

    @property
    def process(self) -> ProcessInfo:
        return self.chain[0]

    @property
    def pid(self) -> int:
        return self.chain[0].pid

    @property
    def instance(self) -> tuple[int, int, str]:
        """Requester instance for grants: pid, start time and executable digest (§8)."""
        head = self.chain[0]
        return (head.pid, head.start_time, head.exe_sha256 or "")

    def client(self) -> ProcessInfo | None:
        """The MCP host that runs the requester: its nearest ancestor that is not a wrapper.

        Wrappers (shells, ``env``, ``npx``, ``uvx``, ``uv run``, ``timeout``, ``nice``,
        ``setsid`` …, and an interpreter running one, such as ``node …/npx-cli.js``) are skipped;
        an interpreter running anything else (node, python) *is* a host. A terminal multiplexer
        or emulator, or init, ends the search with no client: tmux or a terminal window holds
        the human's other panes and tabs too, so it must never be mistaken for the agent's
        program.
        """
        for proc in self.chain[1:]:
            if proc.pid == 1 or proc.terminal:
                return None
            if not proc.wrapper:
                return proc
        return None

    def wrappers(self) -> tuple[ProcessInfo, ...]:
        """The wrappers between the requester and its client (or the terminal, or init)."""
        found = []
        for proc in self.chain[1:]:
            if proc.pid == 1 or proc.terminal or not proc.wrapper:
                break
            found.append(proc)
        return tuple(found)

    def as_record(self) -> JournalBody:
        return {"uid": self.uid, "chain": [proc.as_record() for proc in self.chain]}


def describe_signature(
    status: SignatureStatus, origin: str | None, authority: str | None = None
) -> str:
    """The words a card uses for a signature status: ``dpkg python3.11-minimal: matches``."""
    if status == "package":
        return f"{origin}: matches"
    if status == "user-package":
        return f"{origin}: matches (record writable by a user)"
    if status == "modified":
        return f"{origin}: MODIFIED since installed"
    if status == "not-packaged":
        return "not from a package"
    if status == "valid":
        return f"signed: {authority}" if authority else "signed"
    return {"unsigned": "unsigned", "invalid": "INVALID signature"}.get(status, "not checked")


def describe_claimed_script(status: SignatureStatus, origin: str | None) -> str:
    """What the file at an interpreter's claimed script path is. Never "matches": the path comes
    from the command line, which the process writes, so a packaged file there proves nothing
    about what the interpreter runs."""
    if status == "package":
        return f"the file at that path is {origin}'s, as installed"
    if status == "user-package":
        return f"the file at that path is {origin}'s (record writable by a user)"
    if status == "modified":
        return f"the file at that path is {origin}'s, MODIFIED since installed"
    if status == "not-packaged":
        return "the file at that path is from no package"
    return "the file at that path was not checked"


def is_interpreter(name: str) -> bool:
    return bool(_INTERPRETERS.match(name)) or is_code_host(name)


def is_code_host(name: str) -> bool:
    """A program that runs code it is given but has no script operand (see _CODE_HOSTS)."""
    return bool(_CODE_HOSTS.match(name))


def is_launcher(name: str) -> bool:
    return bool(_LAUNCHERS.match(name))


def is_shell(name: str) -> bool:
    return bool(_SHELLS.match(name))


def is_terminal(name: str) -> bool:
    return bool(_TERMINALS.match(name))


def descends_from(descendant: PeerIdentity, ancestor: ProcessInfo) -> bool:
    """Whether ``ancestor`` (that exact instance) is ``descendant`` or one of its parents."""
    return any(proc.instance == ancestor.instance for proc in descendant.chain)


def walk_chain(
    pid: int, read: Callable[[int, bool], tuple[ProcessInfo, int]]
) -> tuple[ProcessInfo, ...]:
    """The process and its parents, at most :data:`MAX_CHAIN`, stopping below pid 1.

    ``read(pid, first)`` gives one process and its parent's pid (``first`` for the requester
    itself, whose environment the platform may read). The requester's own error propagates; a
    parent that exited meanwhile (``OSError``) ends the chain there."""
    procs: list[ProcessInfo] = []
    current = pid
    while current > 0 and len(procs) < MAX_CHAIN:
        try:
            info, parent = read(current, not procs)
        except OSError:
            if not procs:
                raise
            break
        procs.append(info)
        if current == 1:
            break
        current = parent
    return tuple(procs)


def check_unchanged(identity: PeerIdentity, now: tuple[object, ...] | None) -> None:
    """Raise :class:`IdentityChanged` unless ``now`` (the platform's fingerprint of the process
    at that pid, None when it is gone) is the one taken when the peer connected."""
    if now is None:
        raise IdentityChanged("the requesting process has exited")
    if now != identity.fingerprint:
        raise IdentityChanged("the requesting process is not the one that connected")


class IdentityProbe(Protocol):
    """Reads identities from the system; one implementation per platform."""

    def resolve(self, sock: socket.socket) -> PeerIdentity:
        """Identify the peer of a freshly accepted connection."""
        ...

    def verify(self, identity: PeerIdentity) -> None:
        """Raise :class:`IdentityChanged` unless the peer is still the same process."""
        ...

    def alive(self, identity: PeerIdentity) -> bool:
        """Whether the process instance still exists (for reaping session grants)."""
        ...

    def release(self, identity: PeerIdentity) -> None:
        """Close what :meth:`resolve` holds open (the pidfd)."""
        ...
