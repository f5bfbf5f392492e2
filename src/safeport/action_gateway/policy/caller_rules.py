"""Which processes may propose actions: the `[callers]` rules of gateway.toml (pure).

No `[callers]` table means any process of the gateway's own uid may propose (approval still
applies) — the socket already refuses every other uid, and `sp policy check` states this default
out loud. A table with ``rules = []`` denies everyone: an empty rule list never means "allow all".
A rule matches when every field it sets matches; any matching rule admits the caller.

A rule that names a program (``exe``, ``exe_sha256``, ``team_id``, ``signature``) is about the
binary the kernel maps in the process (``/proc/PID/exe``): its path, digest and package record.
That is all it can be about. Whatever the process writes about itself — its command line, its
environment, its own files, its name — is a claim, never proof, so:

- it never admits an *interpreter* (python, node, a shell, ``ld.so`` run as a program …): the
  script is read from the command line, which the interpreter can rewrite before it connects, so
  the packaged ``python3`` "running" a standard-library module may be running anything. A rule
  admits one only if it says so, ``interpreter = "any script"``: that interpreter, whatever it
  runs.
- it never admits a requester whose environment injects code (``PYTHONPATH``, ``LD_PRELOAD`` …,
  see ``environment.py``), could not be read, or whose Python loads code before its script from a
  place another uid can change (a virtual environment's ``.pth``, ``sitecustomize``, see
  ``python_startup.py``): the genuine binary with a shadow module path runs the shadow's code.

``signature = "package"`` asks that the executable match a root-owned package record; the script
an interpreter claims to run is shown on the card as a claim and vouches for nothing.
"""

from __future__ import annotations

from safeport.action_gateway.identity.model import PeerIdentity, ProcessInfo
from safeport.errors import Denied
from safeport.shared.schemas.config import CallerRule, Callers


class CallerRefused(Denied):
    """The peer is not a caller the accepted policy admits."""


def check_caller(
    callers: Callers | None, peer: PeerIdentity, admitted_uids: frozenset[int]
) -> None:
    """Return if ``peer`` may propose under ``callers``; raise :class:`CallerRefused` otherwise.

    ``admitted_uids`` is the gateway's own uid in same-user mode, and the install's named humans
    when the gateway runs as its own account."""
    if peer.uid not in admitted_uids:
        raise CallerRefused("the caller runs as a user this gateway does not serve")
    if callers is None:
        return
    if not callers.rules:
        raise CallerRefused("the policy admits no callers (`[callers] rules = []`)")
    if not any(rule_matches(rule, peer) for rule in callers.rules):
        if peer.process.interpreter and any(
            rule.interpreter is None
            and rule_matches(rule.model_copy(update={"interpreter": "any script"}), peer)
            for rule in callers.rules
        ):
            raise CallerRefused(
                "the caller is an interpreter, whose script is only what its command line "
                'claims; a rule admits one only with `interpreter = "any script"`'
            )
        raise CallerRefused("the caller matches no `[callers]` rule")


def rule_matches(rule: CallerRule, peer: PeerIdentity) -> bool:
    head = peer.process
    names_program = any(
        value is not None for value in (rule.exe, rule.exe_sha256, rule.team_id, rule.signature)
    )
    if names_program and (head.code_injected or _unattested_interpreter(rule, head)):
        return False
    if rule.signature == "package" and not _packaged(head):
        return False
    if rule.signature == "valid" and head.signature != "valid":
        return False
    if rule.uid is not None and peer.uid != rule.uid:
        return False
    if rule.exe is not None and head.exe != rule.exe:
        return False
    if rule.exe_sha256 is not None and head.exe_sha256 != rule.exe_sha256:
        return False
    if rule.team_id is not None and head.team_id != rule.team_id:
        return False
    return rule.ancestor_exe is None or any(
        proc.exe == rule.ancestor_exe for proc in peer.chain[1:]
    )


def _packaged(proc: ProcessInfo) -> bool:
    # The binary only: an interpreter's script is a claim (see _unattested_interpreter).
    return proc.signature == "package"


def _unattested_interpreter(rule: CallerRule, proc: ProcessInfo) -> bool:
    """An interpreter runs whatever its command line says, and the process writes that line;
    only a rule that admits any script may name one."""
    return proc.interpreter and rule.interpreter != "any script"


def describe_default(callers: Callers | None) -> str:
    """The sentence `sp policy check` prints about who may propose."""
    if callers is None:
        return (
            "callers: no [callers] table — any process running as your user may propose actions "
            "(approval still applies); add [callers] rules to narrow this"
        )
    if not callers.rules:
        return "callers: `rules = []` — no process may propose actions"
    return f"callers: {len(callers.rules)} rule(s); a process must match one to propose"
