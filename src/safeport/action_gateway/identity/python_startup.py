"""What a Python requester loads before its script, and whether anyone but root could change it.

CPython runs code before the script from places its command line and environment select: the
standard library found from a virtual environment's ``pyvenv.cfg`` ``home``, every ``*.pth``
line in the site folders (the venv's own, the system's, the user site), the folders those lines
add, and ``sitecustomize`` / ``usercustomize`` wherever they lie on that path. A venv whose
``python`` links to the packaged interpreter runs the packaged binary with the venv's own site
folders: the binary is the package's, its site is not.

Each place is read as the requester reads it (``peer_files``) and counts as injected code when a
uid other than root or the gateway's own account could change it: its owner, or a folder above
it, or group/other write bits. The requester's own uid is never trusted (in same-user mode it is
the gateway's too, and it is the agent's), except root's: root can change the gateway itself.

Which places apply follows CPython 3.11's ``getpath`` and ``site`` exactly: ``pyvenv.cfg`` is the
first of ``dirname(executable)`` and its parent, ``executable`` being argv[0] (searched on PATH
when it has no slash); ``include-system-site-packages`` defaults to true, and only a venv that
leaves the system site out turns the user site off; ``-s``, ``-I`` and (without ``-E``/``-I``)
``PYTHONNOUSERSITE`` turn it off too; ``-S`` skips ``site`` entirely. argv[0], the environment
and the working folder are the requester's own words, so all of this is a best reading of a
claim: it flags what it finds, it cannot prove that nothing else ran.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from pathlib import PurePosixPath

from safeport.action_gateway.identity.argv import PYTHON_NAME, python_flags
from safeport.action_gateway.identity.peer_files import PeerFiles

_SHOWN_PER_PLACE = 5
_CUSTOMIZE = ("sitecustomize", "usercustomize")

Finding = tuple[str, str]


def python_startup(
    files: PeerFiles,
    exe: str,
    name: str,
    argv: list[str],
    env: dict[str, str],
    *,
    trusted: frozenset[int],
) -> tuple[Finding, ...]:
    """(place, what and why) for each place that puts code another uid can change into this
    Python before its script; ``trusted`` are the owners that may (root, the gateway's account)."""
    version = PYTHON_NAME.match(name)
    if not version or not version.group(1):
        return (("python startup", f"{name}: which Python this is is unknown, nothing checked"),)
    lib = f"python{version.group(1)}"
    flags = python_flags(argv)
    ignore_env = bool(flags & {"E", "I"})
    found: list[Finding] = []
    looks = _Looks(files, trusted)
    program = _program(files, argv, env)
    venv = _venv(files, program) if program else None
    start = files.real_path(program) if program else None
    system_site = True
    sites: list[tuple[str, str]] = []
    if venv is not None:
        prefix, cfg_path, settings = venv
        if settings is None:
            found.append(("python venv", f"{cfg_path}: unreadable, so its settings are unknown"))
            settings = {}
        system_site = settings.get("include-system-site-packages", "true").lower() == "true"
        home = settings.get("home")
        if home:
            # getpath looks for the standard library from here: os.py and encodings come from it.
            start = files.real_path(f"{home}/{PurePosixPath(program).name}") or f"{home}/python"
            for place in (home, f"{PurePosixPath(home).parent}/lib/{lib}"):
                why = looks.changeable(place)
                if why:
                    found.append(("python venv home", f"{cfg_path} home {home}: {why}"))
                    break
        sites += [("python venv", folder) for folder in _site_folders(prefix, lib, venv=True)]
    prefixes = _prefixes(files, start, lib, exe)
    found += _stdlib_findings(looks, prefixes, lib, program)
    if "S" in flags:
        return tuple(found)  # no `site`: no .pth, no customize modules, no user site
    if system_site:
        for prefix in dict.fromkeys(prefixes):
            sites += [("python site", folder) for folder in _site_folders(prefix, lib)]
    user_site = _user_site(files, lib, env, ignore_env)
    no_user_site = bool(flags & {"s", "I"}) or bool(env.get("PYTHONNOUSERSITE") and not ignore_env)
    if user_site and system_site and not no_user_site:
        sites.append(("python user site", user_site))
    seen: set[str] = set()
    for label, folder in sites:
        if folder not in seen:
            seen.add(folder)
            found += _site_folder(looks, label, folder)
    return tuple(found)


def _stdlib_findings(
    looks: _Looks, prefixes: tuple[str, str], lib: str, program: str
) -> list[Finding]:
    """The standard library (a folder, or the zip CPython looks for first) under each prefix,
    when another uid could change it: ``os.py`` and ``encodings`` run before any script."""
    found: list[Finding] = []
    for prefix in dict.fromkeys(p for p in prefixes if p.startswith("/")):
        zipped = f"{prefix}/lib/python{lib[6:].replace('.', '')}.zip"
        for place in (f"{prefix}/lib/{lib}", zipped):
            why = looks.changeable(place)
            if why:
                found.append(("python stdlib", f"{place} (found from {program}): {why}"))
                break
    return found


def _site_folder(looks: _Looks, label: str, folder: str) -> list[Finding]:
    """A site folder: its ``.pth`` files and customize modules, and the folders ``.pth`` lines
    add (where a customize module is imported from too)."""
    entries = looks.files.list_folder(folder)
    if entries is None:
        return []  # absent, or closed to the requester: Python did not read it either
    code = sorted(e for e in entries if e.endswith(".pth") or _is_customize(e))
    found: list[Finding] = []
    why = looks.changeable(folder)
    if why is None:
        why = next((w for e in code if (w := looks.changeable(f"{folder}/{e}"))), None)
    if why:
        found.append((label, f"{folder}: {_names(code) or 'no code yet'} ({why})"))
    for entry in code:
        if entry.endswith(".pth"):
            for added in _pth_folders(looks.files, folder, entry):
                found += _customize_in(looks, added, f"{folder}/{entry}")
    return found


def _customize_in(looks: _Looks, folder: str, pth: str) -> list[Finding]:
    entries = looks.files.list_folder(folder)
    names = sorted(e for e in entries or () if _is_customize(e))
    for entry in names:
        why = looks.changeable(f"{folder}/{entry}")
        if why:
            return [("python .pth folder", f"{folder} (added by {pth}): {_names(names)} ({why})")]
    return []


def _pth_folders(files: PeerFiles, folder: str, entry: str) -> list[str]:
    """The folders a ``.pth`` file adds to sys.path (lines that are not comments or imports)."""
    text = files.read_text(f"{folder}/{entry}") or ""
    added = []
    for line in text.splitlines():
        line = line.rstrip()
        if not line or line.startswith("#") or line.startswith(("import ", "import\t")):
            continue
        added.append(line if line.startswith("/") else f"{folder}/{line}")
    return added[:50]


def _site_folders(prefix: str, lib: str, *, venv: bool = False) -> list[str]:
    """Site folders of a prefix: CPython's ``lib/pythonX.Y/site-packages`` and Debian's
    ``dist-packages`` folders (for a venv too, as Debian's site.py adds them)."""
    folders = [f"{prefix}/lib/{lib}/site-packages"]
    folders += [f"{prefix}/local/lib/{lib}/dist-packages", f"{prefix}/lib/python3/dist-packages"]
    if not venv:
        folders.append(f"{prefix}/lib/{lib}/dist-packages")
    return folders


def _user_site(files: PeerFiles, lib: str, env: dict[str, str], ignore_env: bool) -> str | None:
    userbase = env.get("PYTHONUSERBASE") if not ignore_env else None
    if not userbase:
        home = env.get("HOME")
        if home is None:
            try:
                home = pwd.getpwuid(files.credentials.fsuid).pw_dir
            except KeyError:
                return None
        userbase = f"{home}/.local" if home.startswith("/") else ""
    return f"{userbase}/lib/{lib}/site-packages" if userbase else None


def _program(files: PeerFiles, argv: list[str], env: dict[str, str]) -> str:
    """The program CPython's getpath starts from: argv[0], searched on PATH when it has no
    slash (it need not be the binary the kernel ran: ``exec -a`` picks any argv[0])."""
    program = argv[0] if argv else ""
    if "/" not in program:
        found = [f"{d}/{program}" for d in env.get("PATH", "").split(":") if d.startswith("/")]
        program = next((c for c in found if files.exists(c)), "")
    elif not program.startswith("/"):
        try:
            program = f"{(files.base / 'cwd').readlink()}/{program}"
        except OSError:
            return ""
    return os.path.normpath(program) if program else ""


def _prefixes(files: PeerFiles, start: str | None, lib: str, exe: str) -> tuple[str, str]:
    """(prefix, exec_prefix) as getpath finds them: the first folder above the program's real
    folder holding ``lib/pythonX.Y/os.py`` (the standard library) and ``…/lib-dynload``
    (extension modules); the packaged binary's own prefix when none does."""
    built = str(PurePosixPath(exe.removesuffix(" (deleted)")).parent.parent)
    found = []
    for landmarks in ((f"lib/{lib}/os.py", f"lib/{lib}/os.pyc"), (f"lib/{lib}/lib-dynload",)):
        folder = PurePosixPath(start).parent if start else None
        while folder is not None:
            if any(files.exists(f"{folder}/{mark}") for mark in landmarks):
                break
            folder = folder.parent if folder != folder.parent else None
        found.append(str(folder) if folder is not None else built)
    return found[0], found[1]


def _venv(files: PeerFiles, program: str) -> tuple[str, str, dict[str, str] | None] | None:
    """(venv prefix, its pyvenv.cfg, its settings or None if unreadable) when the interpreter
    started as a virtual environment's: ``pyvenv.cfg`` beside the program argv[0] names, or one
    folder up, the first that exists (as Python itself looks)."""
    folder = PurePosixPath(program).parent
    for cfg in (folder / "pyvenv.cfg", folder.parent / "pyvenv.cfg"):
        if not files.exists(str(cfg)):
            continue
        text = files.read_text(str(cfg))
        if text is None:
            return str(cfg.parent), str(cfg), None
        settings = {}
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                settings[key.strip().lower()] = value.strip()
        return str(cfg.parent), str(cfg), settings
    return None


class _Looks:
    """The requester's view of owners and modes, each path walked once per identity (a venv
    holds dozens of ``.pth`` files under the same folders)."""

    def __init__(self, files: PeerFiles, trusted: frozenset[int]) -> None:
        self.files = files
        self.trusted = trusted
        self._stats: dict[str, os.stat_result | None] = {}
        self._groups: dict[int, bool] = {}

    def changeable(self, path: str) -> str | None:
        """Why a uid outside ``trusted`` could change ``path`` (it, or a folder above it), or
        None. A folder above that others may write is safe only with the sticky bit (``/tmp``)."""
        place = os.path.normpath(path)
        first = True
        while True:
            why = self._problem(place, above=not first)
            if why:
                return why
            parent = str(PurePosixPath(place).parent)
            if parent == place:
                return None  # the root, or the top of a path that was not absolute
            place, first = parent, False

    def _problem(self, place: str, *, above: bool) -> str | None:
        if place not in self._stats:
            self._stats[place] = self.files.stat(place)
        st = self._stats[place]
        if st is None:
            return None
        if st.st_uid not in self.trusted:
            return f"{place} is owned by uid {st.st_uid}"
        sticky = above and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX
        if sticky:
            return None
        if st.st_mode & 0o002:
            return f"{place} is writable by others"
        if st.st_mode & 0o020 and self._outsiders_in(st.st_gid):
            return f"{place} is writable by group {st.st_gid}, which has members besides root"
        return None

    def _outsiders_in(self, gid: int) -> bool:
        """Whether a uid outside ``trusted`` holds group ``gid``: the requester itself, a listed
        member, or an account whose primary group it is. Debian's /usr/local/lib/python3.X is
        root:staff 2775, and staff with no members lets no one else write there."""
        if gid not in self._groups:
            creds = self.files.credentials
            held = gid == creds.fsgid or gid in creds.groups
            self._groups[gid] = held or group_has_outsider(*_group_members(gid), self.trusted)
        return self._groups[gid]


def group_has_outsider(known: bool, members: frozenset[int], trusted: frozenset[int]) -> bool:
    """Pure: a group no account database knows may be anyone's; else any member not trusted."""
    return not known or bool(members - trusted)


def _group_members(gid: int) -> tuple[bool, frozenset[int]]:
    """(whether the group is known, the uids of its listed members and of accounts whose
    primary group it is); a listed name with no account counts as an unknown uid."""
    try:
        listed = grp.getgrgid(gid).gr_mem
    except KeyError:
        return False, frozenset()
    uids = {entry.pw_uid for entry in pwd.getpwall() if entry.pw_gid == gid}
    for name in listed:
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            uids.add(-1)
    return True, frozenset(uids)


def _is_customize(entry: str) -> bool:
    return entry.split(".", 1)[0] in _CUSTOMIZE and entry != "__pycache__"


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN_PER_PLACE])
    more = len(names) - _SHOWN_PER_PLACE
    return shown + (f" and {more} more" if more > 0 else "")
