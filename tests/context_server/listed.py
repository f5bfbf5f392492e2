"""Reading a listing's or a tree's grouped entries back as one record per name, for tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GROUPS = (("files", "file"), ("directories", "directory"), ("symlinks", "symlink"))


def listed(result: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """name (or path) -> {"type", "size", "blocked"} as the groups say, in name order; every
    name must be in exactly one type group, and every blocked name in one of them."""
    out: dict[str, dict[str, Any]] = {}
    typed = [(name, kind) for group, kind in GROUPS for name in result[group]]
    typed += [(name, "other") for name in result["others"]]
    for name, kind in typed:
        assert name not in out, f"{name} is in two groups"
        size = result["files"][name] if kind == "file" else 0
        out[name] = {"type": kind, "size": size, "blocked": result["blocked"].get(name, "")}
    assert set(result["blocked"]) <= set(out), "a blocked name is in no group"
    return dict(sorted(out.items()))


def names(result: Mapping[str, Any]) -> list[str]:
    """Every listed name (or path), in the order a listing pages them."""
    return list(listed(result))
