"""What in a requester's environment puts other code into its program.

Variables that inject code (``LD_PRELOAD``, ``PYTHONPATH``, ``NODE_OPTIONS`` …) and, for Python,
a user site that runs ``*.pth`` lines before the script. Everything is read as the requester
would read it (``peer_files``), and every value shown on a card is bounded.
"""

from __future__ import annotations

from pathlib import Path

from safeport.action_gateway.environment import injected_entries, parse_environ
from safeport.action_gateway.identity import EnvironStatus
from safeport.action_gateway.peer_files import PeerFiles
from safeport.action_gateway.process_argv import PYTHON_NAME, python_flags

_MAX_ENVIRON_BYTES = 1024 * 1024
_MAX_SHOWN_VALUE = 200


def injected_environment(
    base: Path,
) -> tuple[EnvironStatus, tuple[tuple[str, str], ...], dict[str, str]]:
    """The requester's variables that inject code (and all of them, for the checks that need
    one); an environment that cannot be read whole (another uid, a non-dumpable process, padded
    past the limit) is "unreadable", which no ``[callers]`` rule by path or digest admits."""
    try:
        with open(base / "environ", "rb") as handle:
            raw = handle.read(_MAX_ENVIRON_BYTES + 1)
    except OSError:
        return "unreadable", (), {}
    if len(raw) > _MAX_ENVIRON_BYTES:
        return "unreadable", (), {}
    pairs = parse_environ(raw)
    found = injected_entries(pairs)
    return "read", tuple((name, bounded(value)) for name, value in found), dict(pairs)


def python_user_site(
    files: PeerFiles, name: str, argv: list[str], env: dict[str, str]
) -> tuple[tuple[str, str], ...]:
    """A Python that reads its user site runs every ``*.pth`` line and ``usercustomize`` /
    ``sitecustomize`` found there, before its script: code the agent can write with no variable
    set at all. Flagged like an injecting variable unless ``-I``/``-s``, ``PYTHONNOUSERSITE``
    or a virtual environment turns the user site off."""
    flags = python_flags(argv)
    if "I" in flags or "s" in flags or (env.get("PYTHONNOUSERSITE") and "E" not in flags):
        return ()
    if _in_isolated_venv(files, argv, env):
        return ()  # a virtual environment leaves the user site out
    version = PYTHON_NAME.match(name)
    home = env.get("HOME", "")
    userbase = env.get("PYTHONUSERBASE") if "E" not in flags else None
    userbase = userbase or (f"{home}/.local" if home.startswith("/") else "")
    if not version or not version.group(1) or not userbase:
        return ()
    site = f"{userbase}/lib/python{version.group(1)}/site-packages"
    # Listed as the requester would list it: a folder it cannot read is not its user site's
    # problem, and must not become a way to list someone else's.
    entries = files.list_folder(site)
    if entries is None:
        return ()
    names = sorted(
        entry
        for entry in entries
        if entry.endswith(".pth") or entry in ("usercustomize.py", "sitecustomize.py")
    )
    if not names:
        return ()
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return (("python user site", bounded(f"{site}: {shown}")),)


def _in_isolated_venv(files: PeerFiles, argv: list[str], env: dict[str, str]) -> bool:
    """Whether the interpreter started as a virtual environment's (``pyvenv.cfg`` beside the
    program named by argv[0], as Python itself looks) without the system site packages."""
    program = argv[0] if argv else ""
    if "/" not in program:
        found = [f"{d}/{program}" for d in env.get("PATH", "").split(":") if d.startswith("/")]
        program = next((c for c in found if files.exists(c)), "")
    elif not program.startswith("/"):
        try:
            program = f"{(files.base / 'cwd').readlink()}/{program}"
        except OSError:
            return False
    if not program:
        return False
    folder = Path(program).parent
    for cfg in (folder / "pyvenv.cfg", folder.parent / "pyvenv.cfg"):
        text = files.read_text(str(cfg))
        if text is None:
            continue
        settings = {
            key.strip().lower(): value.strip().lower()
            for key, _, value in (line.partition("=") for line in text.splitlines())
        }
        return settings.get("include-system-site-packages", "false") != "true"
    return False


def bounded(value: str) -> str:
    if len(value) <= _MAX_SHOWN_VALUE:
        return value
    return f"{value[:_MAX_SHOWN_VALUE]}… ({len(value) - _MAX_SHOWN_VALUE} more characters)"
