"""The one way safeport starts its own code: an isolated interpreter that imports installed files.

``python -m safeport`` puts the working folder first on ``sys.path``, and MCP clients start their
servers in the project folder, so any cloned repository holding a top-level ``safeport/`` package
(or a ``sitecustomize.py``, or a ``mcp/`` that the server imports) would run as the user the moment
its client starts, and in the agent profile that hijacked process is the very requester the
gateway checks. ``python -I`` drops the working folder (it implies ``-P`` since 3.11) together with
``PYTHONPATH``, ``PYTHONHOME``, every other ``PYTHON*`` variable and the user site, so the child
can only import what is installed beside the interpreter.

Every command line safeport writes (client entries, service files) or spawns (the demo, ``sp``
subprocesses) comes from here; a test launches each one from a folder full of hostile code.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

PACKAGE = "safeport"
ISOLATED = "-I"


def sp_command(args: Sequence[str], *, python: str | None = None) -> list[str]:
    """``sp ARGS…`` as an argv that runs this installation's own code whatever the folder."""
    return module_command(PACKAGE, args, python=python)


def module_command(module: str, args: Sequence[str], *, python: str | None = None) -> list[str]:
    """``python -I -m MODULE ARGS…`` with this installation's interpreter."""
    if not (module == PACKAGE or module.startswith(PACKAGE + ".")):
        raise ValueError(f"only safeport's own modules are started this way, not {module!r}")
    return [python or sys.executable, ISOLATED, "-m", module, *args]


def imports_from_working_folder(argv: Sequence[str]) -> bool:
    """Whether a command line would run code from the folder it is started in: a relative
    program or script path (resolved there), ``python -m``/``-c`` without ``-I`` (or ``-P`` with
    ``-E``), or any of these behind ``env``.

    Used to flag entries an older version wrote. An absolute script operand
    (``/venv/bin/python /venv/bin/sp``) puts the script's own folder first, not the working
    folder, so it is not flagged; neither is a program this function does not know, whose
    entry ``--check`` reports as different anyway.
    """
    if not argv:
        return False
    command, rest = argv[0], list(argv[1:])
    if not command.startswith("/"):
        return True  # looked up relative to the working folder (or through a PATH with `.`)
    name = command.rsplit("/", 1)[-1]
    if name == "env":
        return _env_runs_project_code(rest)
    if not _PYTHON.match(name):
        return False
    flags: set[str] = set()
    while rest:
        arg = rest.pop(0)
        if arg == "-":
            return True  # the program comes from stdin
        if arg == "--":
            return bool(rest) and not rest[0].startswith("/")
        if not arg.startswith("-"):
            return not arg.startswith("/")  # a relative script resolves in the working folder
        if arg.startswith("--"):
            if arg in _LONG_WITH_VALUE and rest:
                rest.pop(0)
            continue
        for position, letter in enumerate(arg[1:], start=1):
            if letter in "mc":
                return not ("I" in flags or {"P", "E"} <= flags)
            if letter in "WX":  # the rest of the word, or the next word, is the option's value
                if position == len(arg) - 1 and rest:
                    rest.pop(0)
                break
            flags.add(letter)
    return False


# python, python3, python3.13, python3.13t, python3-dbg, pypy3, ...
_PYTHON = re.compile(r"^(python|pypy)[0-9.]*[a-z]*(-dbg)?$")
_LONG_WITH_VALUE = frozenset({"--check-hash-based-pycs"})


def _env_runs_project_code(args: list[str]) -> bool:
    """``env [-i] [-u NAME] [NAME=VALUE]... PROGRAM ARGS``: judge PROGRAM's command line."""
    while args:
        arg = args[0]
        if arg in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
            return True  # rewrites the command line or the folder: not something to vouch for
        if arg.startswith("-") or "=" in arg:
            args = args[1:]
            continue
        return imports_from_working_folder(args)
    return False
