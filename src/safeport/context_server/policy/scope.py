"""The client's roots: which absolute paths they leave in scope, by path strings alone.

A client may narrow what is served to the folders it names (MCP roots), never widen it; these
pure functions intersect the two and answer whether a resolved path is inside the scope or a
folder above it (still listable, so a client can find its way down).
"""

from __future__ import annotations

from collections.abc import Sequence


def narrow_scope(configured: Sequence[str], client: Sequence[str]) -> tuple[str, ...]:
    """Intersect the configured roots with a client's roots (all real, absolute paths).

    A client root inside a configured root narrows to it; one that contains a configured root
    leaves that root whole; one elsewhere adds nothing. Client roots never widen what is served.
    """
    scope: list[str] = []
    for offered in client:
        for root in configured:
            if within(offered, (root,)):
                scope.append(offered)
            elif within(root, (offered,)):
                scope.append(root)
    return tuple(dict.fromkeys(scope))


def within(path: str, prefixes: Sequence[str]) -> bool:
    """Component-wise containment on normalised absolute path strings."""
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


def is_above(path: str, scope: Sequence[str]) -> bool:
    """Whether ``path`` is a folder that contains one of the scope's folders."""
    return any(s.startswith(path.rstrip("/") + "/") for s in scope)
