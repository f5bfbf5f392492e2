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
    """Whether a Python command line would put its working folder (or ``PYTHONPATH``) first on
    ``sys.path``: ``python -m …`` or ``python -c …`` without ``-I`` (or ``-P`` with ``-E``).

    Used to flag entries an older version wrote. A script operand (``python /venv/bin/sp``) puts
    the script's own folder first, not the working folder, so it is not flagged here.
    """
    if not argv or not _is_python(argv[0]):
        return False
    flags: set[str] = set()
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg == "--" or not arg.startswith("-") or arg == "-":
            return False  # a script operand, or stdin
        if arg.startswith("--"):
            continue
        for position, letter in enumerate(arg[1:], start=1):
            if letter in "mc":
                return not ("I" in flags or {"P", "E"} <= flags)
            if letter in "WX":  # the rest of the word, or the next word, is the option's value
                if position == len(arg) - 1 and args:
                    args.pop(0)
                break
            flags.add(letter)
    return False


def _is_python(command: str) -> bool:
    name = command.rsplit("/", 1)[-1]
    return name == "python" or (name.startswith("python") and name[6:].replace(".", "").isdigit())
