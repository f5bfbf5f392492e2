"""Whether the ``safeport`` package this process imported is the installed distribution's.

The context server and the gateway call :func:`verify_installed_package` before they open
anything. A copy of safeport reached through the working folder, ``PYTHONPATH`` or a planted
``*.dist-info`` would otherwise run as the requester the gateway checks (or as the gateway itself)
while every card and log line still said "safeport". ``python -I`` (see ``launch``) keeps such a
copy off ``sys.path`` in the first place; this check refuses to start when something else
got it there anyway.

What counts as installed: a ``safeport-*.dist-info`` in one of the interpreter's site-packages
folders, and either its ``RECORD`` lists every file of the imported package that is loaded
(a regular install), or it is an editable install whose ``RECORD``-listed ``.pth`` file (or
setuptools finder) points at the folder the package was imported from.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import site
import sys
from collections.abc import Sequence
from pathlib import Path

from safeport.errors import EnvironmentProblem

DISTRIBUTION = "safeport"


def verify_installed_package(package: str = DISTRIBUTION) -> None:
    """Raise :class:`EnvironmentProblem` unless every loaded module of ``package`` comes from
    the installed distribution of the same name."""
    module = sys.modules.get(package)
    origin = getattr(module, "__file__", None)
    if origin is None:
        raise _refusal(package, "<unknown>", "it has no file")
    package_dir = Path(origin).resolve().parent
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError as exc:
        raise _refusal(package, str(package_dir), "no installed distribution is found") from exc
    site_dir = Path(str(dist.locate_file(""))).resolve()
    if site_dir not in _site_folders():
        raise _refusal(
            package, str(package_dir), f"its metadata lies outside site-packages ({site_dir})"
        )
    listed = {Path(str(dist.locate_file(f))).resolve() for f in dist.files or ()}
    loaded = _loaded_files(package)
    if package_dir / "__init__.py" in listed:
        stray = sorted(str(path) for path in loaded if path not in listed)
        if stray:
            raise _refusal(package, str(package_dir), f"{stray[0]} is not in its RECORD")
        return
    if _is_editable(dist) and package_dir in _editable_package_dirs(listed, package):
        outside = sorted(str(p) for p in loaded if not p.is_relative_to(package_dir))
        if outside:
            raise _refusal(package, str(package_dir), f"{outside[0]} lies outside it")
        return
    raise _refusal(package, str(package_dir), "that folder is not the installed distribution's")


def verify_outside_served_roots(roots: Sequence[Path], package: str = DISTRIBUTION) -> None:
    """Raise :class:`EnvironmentProblem` when this interpreter's environment or the package
    lies inside a served folder: the agent can write there, and a ``.pth`` file dropped in
    that site-packages runs in every process the interpreter starts, ``-I`` or not."""
    module = sys.modules.get(package)
    origin = getattr(module, "__file__", None)
    ours = [Path(sys.prefix).resolve()]
    if origin:
        ours.append(Path(origin).resolve().parent)
    for root in roots:
        served = Path(root).resolve()
        for path in ours:
            if path.is_relative_to(served):
                raise EnvironmentProblem(
                    f"refusing to serve {served}: it holds {path}, which safeport runs from "
                    "and the agent could change",
                    hint="install safeport in an environment outside the folders you serve",
                )


def _refusal(package: str, where: str, why: str) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"refusing to start: the {package} package imported from {where} is not the installed "
        f"one ({why})",
        hint="start it as `python -I -m safeport …` or through `sp`, and reinstall if it persists",
    )


def _site_folders() -> set[Path]:
    folders = [*site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    return {Path(folder).resolve() for folder in folders}


def _loaded_files(package: str) -> set[Path]:
    files: set[Path] = set()
    for name, module in list(sys.modules.items()):
        if name != package and not name.startswith(package + "."):
            continue
        origin = getattr(module, "__file__", None)
        if origin:
            files.add(Path(origin).resolve())
    return files


def _is_editable(dist: importlib.metadata.Distribution) -> bool:
    text = dist.read_text("direct_url.json")
    if not text:
        return False
    try:
        info = json.loads(text)
    except ValueError:
        return False
    return isinstance(info, dict) and bool(info.get("dir_info", {}).get("editable"))


def _editable_package_dirs(listed: set[Path], package: str) -> set[Path]:
    """Where an editable install says the package lives: the source folders its ``.pth`` adds
    to ``sys.path``, or the mapping in setuptools' finder module."""
    dirs: set[Path] = set()
    for path in listed:
        if path.suffix == ".pth" and path.name.startswith("__editable__"):
            for line in _read(path).splitlines():
                line = line.strip()
                if line and not line.startswith(("#", "import ")):
                    dirs.add((Path(line) / package).resolve())
        elif (
            path.suffix == ".py" and path.name.startswith("__editable__") and "finder" in path.name
        ):
            mapped = _finder_mapping(_read(path)).get(package)
            if mapped:
                dirs.add(Path(mapped).resolve())
    return dirs


def _finder_mapping(source: str) -> dict[str, str]:
    """``MAPPING = {...}`` in setuptools' editable finder, read as a literal (never executed)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "MAPPING":
            try:
                mapping = ast.literal_eval(value)
            except ValueError:
                return {}
            if isinstance(mapping, dict):
                return {str(k): str(v) for k, v in mapping.items()}
    return {}


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
