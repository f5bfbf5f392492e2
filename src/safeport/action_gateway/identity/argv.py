"""What a process's command line says it runs: the grammar of interpreters, shells and ld.so.

Pure parsing of ``argv``: the script an interpreter runs (or that it runs code given inline or
from standard input), the program ``ld.so`` is asked to run and the options that inject code
into it, and whether an interpreter is only launching the next program (``npx``, ``uv``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from safeport.action_gateway.identity.model import (
    is_code_host,
    is_interpreter,
    is_launcher,
    is_shell,
)

# The dynamic loader run as a program (`ld.so /tmp/tool`): the loader is a packaged file, but
# what runs is its operand, so it is treated as an interpreter whose script is that program.
LOADER = re.compile(
    r"^(ld-linux[-\w.]*\.so(\.\d+)*|ld\.so|ld-musl-[\w.]+\.so(\.\d+)*|ld64\.so\.\d+)$"
)
_LOADER_INJECTING = {"--preload", "--audit", "--library-path", "--glibc-hwcaps-prepend"}
_LOADER_OPTIONS_WITH_VALUE = _LOADER_INJECTING | {
    "--argv0",
    "--inhibit-rpath",
    "--glibc-hwcaps-mask",
}
PYTHON_NAME = re.compile(r"^python(\d+\.\d+)?[a-z]*$")


@dataclass(frozen=True)
class LaunchRole:
    """What a process is, by its program's name and its command line."""

    interpreter: bool  # its signature or digest names a runtime; ``script`` is what runs
    launcher: bool  # it starts the next program and is nobody's host
    script: str | None  # for an interpreter: see :func:`script_argument`
    loader: bool = False  # ld.so run as a program; ``script`` is the program it loads
    loader_options: tuple[tuple[str, str], ...] = ()  # its options that inject code


def launch_role(name: str, argv: list[str]) -> LaunchRole:
    """The role of a process named ``name`` (its executable's file name) run as ``argv``."""
    loader = bool(LOADER.match(name))
    interpreter = is_interpreter(name) or loader
    launcher = is_launcher(name) or (interpreter and not loader and runs_launcher(argv))
    if not interpreter or is_code_host(name):
        return LaunchRole(interpreter=interpreter, launcher=launcher, script=None)
    if loader:
        program, options = loader_program(argv)
        return LaunchRole(True, launcher, program, loader=True, loader_options=tuple(options))
    return LaunchRole(True, launcher, script_argument(argv))


def script_argument(argv: list[str]) -> str | None:
    """What an interpreter runs: its script file, ``-`` for a program read from standard input,
    ``-c`` for code on the command line (``-c``/``-e``/``-r`` …) or ``-m module``; None when no
    operand names one (an interactive interpreter reads its program from standard input too).

    Only a file operand can be vouched for, so the parse follows each family's own grammar:
    options that take a value (``-W ignore``, ``-I dir``), letters combined in one word (``-Ic``,
    ``-we``), ``--``, and ``-`` (standard input, never the next operand)."""
    family = _family(Path(argv[0]).name if argv else "")
    code, stdin, valued = _CODE_OPTIONS[family], _STDIN_OPTIONS[family], _VALUE_OPTIONS[family]
    attached_only = _ATTACHED_ONLY.get(family, set())
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg == "-":
            return "-"
        if arg == "--":
            return argv[index + 1] if index + 1 < len(argv) else None
        if arg.startswith("--"):
            name, equals, _ = arg[1:].partition("=")
            if name in code:
                return "-c"
            index += 2 if name in valued and not equals else 1
            continue
        if not arg.startswith("-") and not (family == "shell" and arg.startswith("+")):
            return arg
        letters = arg[1:]
        for position, letter in enumerate(letters):
            rest = letters[position + 1 :]
            if letter in code:
                return "-c"
            if letter in stdin:
                return "-"
            if family == "python" and letter == "m":
                module = rest or (argv[index + 1] if index + 1 < len(argv) else "")
                return f"-m {module}" if module else None
            if letter in valued or arg[0] + letter in valued:
                if not rest and letter not in attached_only:
                    index += 1  # the value is the next element
                break
        index += 1
    return None


_Family = Literal["python", "node", "shell", "perl", "ruby", "php"]
# Per family: options that run code given on the command line, options that read the program
# from standard input, and options that take a value (the rest of their word, or else the next
# element). Names of long options keep one dash (``-require`` for ``--require``).
_CODE_OPTIONS: dict[_Family, set[str]] = {
    "python": {"c"},
    "node": {"e", "p", "-eval", "-print"},
    "shell": {"c"},
    "perl": {"e", "E"},
    "ruby": {"e"},
    "php": {"r", "B", "R", "F", "E"},
}
_STDIN_OPTIONS: dict[_Family, set[str]] = {
    "python": set(),
    "node": set(),
    "shell": {"s"},
    "perl": set(),
    "ruby": set(),
    "php": set(),
}
_VALUE_OPTIONS: dict[_Family, set[str]] = {
    "python": {"W", "X", "Q", "-check-hash-based-pycs"},
    "node": {
        "r", "-require", "-import", "-loader", "-experimental-loader", "C", "-conditions",
        "-input-type", "-title", "-env-file", "-cpu-prof-dir", "-cpu-prof-name",
        "-diagnostic-dir", "-disable-warning", "-heap-prof-dir", "-heap-prof-name",
        "-heapsnapshot-signal", "-icu-data-dir", "-inspect-port", "-debug-port",
        "-openssl-config", "-redirect-warnings", "-report-dir", "-report-directory",
        "-report-filename", "-report-signal", "-secure-heap", "-secure-heap-min",
        "-tls-cipher-list", "-tls-keylog", "-unhandled-rejections", "-use-largepages",
        "-watch-path", "-dns-result-order", "-trace-event-categories",
        "-trace-event-file-pattern", "-experimental-policy", "-policy-integrity",
        "-es-module-specifier-resolution", "-max-http-header-size", "-stack-trace-limit",
    },
    "shell": {"o", "O", "+o", "+O", "-rcfile", "-init-file"},
    "perl": {"I", "M", "m", "x", "i", "0", "l", "C", "d", "D"},
    "ruby": {"I", "r", "C", "E", "F", "x", "0", "K", "W", "T"},
    "php": {"c", "d", "z", "t"},
}  # fmt: skip
# Values these take only in the same word (`-Mstrict`, `-i.bak`, `-0777`): an element after a
# bare one is the script, not its value.
_ATTACHED_ONLY: dict[_Family, set[str]] = {
    "perl": {"m", "x", "i", "0", "l", "C", "d", "D"},
    "ruby": {"x", "0", "K", "W", "T"},
}


def _family(name: str) -> _Family:
    if name.startswith(("node", "deno", "bun")):
        return "node"
    if is_shell(name):
        return "shell"
    if name.startswith("perl"):
        return "perl"
    if name.startswith("ruby"):
        return "ruby"
    if name.startswith("php"):
        return "php"
    return "python"


def loader_program(argv: list[str]) -> tuple[str | None, list[tuple[str, str]]]:
    """``ld.so [options] PROGRAM``: the program it runs, and the options that put other code
    into it (``--preload``, ``--audit``, ``--library-path``, which act like LD_PRELOAD …)."""
    injected: list[tuple[str, str]] = []
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            return (argv[index + 1] if index + 1 < len(argv) else None), injected
        option, equals, value = arg.partition("=")
        if option in _LOADER_OPTIONS_WITH_VALUE:
            if not equals:
                value = argv[index + 1] if index + 1 < len(argv) else ""
                index += 1
            if option in _LOADER_INJECTING:
                injected.append((option, value))
            index += 1
            continue
        if not arg.startswith("-"):
            return arg, injected
        index += 1
    return None, injected


def runs_launcher(argv: list[str]) -> bool:
    """`node …/npx-cli.js`, `python …/bin/uv`, `python -m pipx` and the like launch the next
    program."""
    script = script_argument(argv)
    if script is None or script == "-c":
        return False
    if script.startswith("-m "):
        return is_launcher(script[3:].split(".")[0])
    stem = Path(script).name.split(".")[0].removesuffix("-cli")
    return is_launcher(stem)


def python_flags(argv: list[str]) -> set[str]:
    """The single-letter options before the script, ``-m`` or ``-c``."""
    flags: set[str] = set()
    for arg in argv[1:]:
        if not arg.startswith("-") or arg == "-" or arg.startswith("--"):
            break
        letters = arg[1:]
        for letter in letters:
            if letter in "mcWX":
                return flags | {letter}
            flags.add(letter)
    return flags


def client_label(argv: list[str]) -> str | None:
    """The label an MCP client's entry gives a context server (``sp context serve … --origin
    claude-code``), or None for any other command line. The process wrote its own command
    line, so this is what it claims to be run as, never evidence of who runs it."""
    if "context" not in argv or "serve" not in argv:
        return None
    for index, arg in enumerate(argv):
        if arg == "--origin" and index + 1 < len(argv):
            return argv[index + 1][:64] or None
        if arg.startswith("--origin="):
            return arg.removeprefix("--origin=")[:64] or None
    return None
