"""Environment variables that put other code into a program (pure; one rule for every caller).

The gateway refuses to start with the loader's and Python's variables set (the process that holds
the keys must run only its own code), ``sp`` refuses to send a passphrase to a gateway that has
them, and a requester that carries any of them is flagged on its card and admitted by no
``[callers]`` rule that names a program by path or digest: the genuine ``sp`` started with
``PYTHONPATH`` pointing at a shadow package runs the shadow's code, whatever its digest says.

Names are matched exactly as the programs read them (the environment is case-sensitive on every
platform the gateway runs on): ``pythonpath`` is inert for Python, so it is not flagged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

Runtime = Literal["loader", "python", "node", "perl", "ruby", "shell", "java", "library"]
ALL_RUNTIMES: frozenset[Runtime] = frozenset(
    {"loader", "python", "node", "perl", "ruby", "shell", "java", "library"}
)
# The gateway and its listener check are Python programs started by the dynamic loader.
GATEWAY_RUNTIMES: frozenset[Runtime] = frozenset({"loader", "python"})

# PYTHON* variables that only change buffering, bytecode caching or text encoding; every other
# one injects code or changes what is imported: PYTHONPATH, PYTHONSTARTUP, PYTHONHOME,
# PYTHONBREAKPOINT, PYTHONINSPECT and even PYTHONWARNINGS (a warning category is imported by name).
HARMLESS_PYTHON_VARIABLES = frozenset(
    {"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONUTF8"}
)

_EXACT: dict[str, Runtime] = {
    "LD_LIBRARY_PATH": "loader",
    "GCONV_PATH": "loader",  # glibc's iconv loads modules from here
    "NODE_OPTIONS": "node",  # --require / --import run code before the program
    "NODE_PATH": "node",
    "NODE_REPL_EXTERNAL_MODULE": "node",
    "PERL5LIB": "perl",
    "PERL5OPT": "perl",
    "PERLLIB": "perl",
    "PERL5DB": "perl",
    "RUBYOPT": "ruby",
    "RUBYLIB": "ruby",
    "BASH_ENV": "shell",  # sourced by every non-interactive bash
    "ENV": "shell",  # sourced by sh/dash (interactive) and bash in POSIX mode
    "ZDOTDIR": "shell",
    "JAVA_TOOL_OPTIONS": "java",  # -javaagent: runs code in any JVM
    "_JAVA_OPTIONS": "java",
    "JDK_JAVA_OPTIONS": "java",
    "CLASSPATH": "java",
    "ELECTRON_RUN_AS_NODE": "node",  # an Electron app (a signed, packaged binary) becomes node
    # Libraries that load modules named here into whatever program links them (any OpenSSL
    # user loads a provider or engine from its configuration; GTK, GIO and Qt load plugins).
    "OPENSSL_CONF": "library",
    "OPENSSL_MODULES": "library",
    "OPENSSL_ENGINES": "library",
    "GTK_MODULES": "library",
    "GTK3_MODULES": "library",
    "GTK_PATH": "library",
    "GIO_EXTRA_MODULES": "library",
    "GIO_MODULE_DIR": "library",
    "QT_PLUGIN_PATH": "library",
    "QT_QPA_PLATFORM_PLUGIN_PATH": "library",
    "GST_PLUGIN_PATH": "library",
    "GST_PLUGIN_SYSTEM_PATH": "library",
    "SASL_PATH": "library",
}
_PREFIXES: tuple[tuple[str, Runtime], ...] = (
    ("LD_PRELOAD", "loader"),  # also LD_PRELOAD_32/64 on some systems
    ("LD_AUDIT", "loader"),
    ("DYLD_", "loader"),  # macOS: DYLD_INSERT_LIBRARIES, DYLD_LIBRARY_PATH, …
    ("BASH_FUNC_", "shell"),  # exported shell functions replace commands by name
)


def injecting_runtime(name: str) -> Runtime | None:
    """The runtime whose code ``name`` can change, or None for a variable that cannot."""
    found = _EXACT.get(name)
    if found is not None:
        return found
    for prefix, runtime in _PREFIXES:
        if name.startswith(prefix):
            return runtime
    if name.startswith("PYTHON") and name not in HARMLESS_PYTHON_VARIABLES:
        return "python"
    return None


def injected_variables(
    env: Mapping[str, str], runtimes: frozenset[Runtime] = ALL_RUNTIMES
) -> list[str]:
    """Names in ``env`` that would inject code into a program of ``runtimes``, sorted."""
    return sorted(name for name in env if injecting_runtime(name) in runtimes)


def injected_entries(
    entries: Iterable[tuple[str, str]], runtimes: frozenset[Runtime] = ALL_RUNTIMES
) -> list[tuple[str, str]]:
    """The (name, value) pairs that inject code, in order, duplicates kept (a raw environment
    block can hold one name twice; a program may read either)."""
    return [(name, value) for name, value in entries if injecting_runtime(name) in runtimes]


def parse_environ(raw: bytes) -> list[tuple[str, str]]:
    """``/proc/PID/environ`` (NUL-separated ``NAME=value``) as pairs; an entry without ``=``
    is skipped, as libc's getenv never finds it."""
    pairs = []
    for entry in raw.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name:
            pairs.append(
                (name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "replace"))
            )
    return pairs
