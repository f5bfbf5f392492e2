"""Validate proposal arguments against the declared params (pure; no I/O).

A value passes only by a full match of its constraint; a value starting with ``-`` is refused
unless the command lists the param in ``allow_leading_dash``, because a leading dash turns data
into an option for the remote program (``-oProxyCommand=…``). Rejections name the param and the
rule, never the raw value, so hostile input is not echoed into replies or journals.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from functools import lru_cache

from safeport.errors import Denied
from safeport.shared.schemas.config_params import ParamSpec

ArgValue = str | int
_FORBIDDEN_CHARS = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATES = re.compile("[\ud800-\udfff]")
# An int param without bounds still has to be a number every consumer can take: a 64-bit
# signed integer (Python would render 10**5000 only until its digit limit, JSON peers less).
_INT_RANGE = (-(2**63), 2**63 - 1)


class ArgumentRejected(Denied):
    """An argument does not satisfy its declared constraint."""


def validate_args(
    params: Mapping[str, ParamSpec],
    args: Mapping[str, object],
    *,
    allow_leading_dash: Collection[str] = (),
) -> dict[str, ArgValue]:
    """Return the arguments, typed, if every one is declared and valid; raise otherwise."""
    extra = sorted(set(args) - set(params))
    if extra:
        raise ArgumentRejected(f"undeclared argument `{_safe_name(extra[0])}`")
    missing = sorted(set(params) - set(args))
    if missing:
        raise ArgumentRejected(f"missing argument `{missing[0]}`")
    return {
        name: _validate_one(name, spec, args[name], name in allow_leading_dash)
        for name, spec in params.items()
    }


def _validate_one(name: str, spec: ParamSpec, value: object, dash_ok: bool) -> ArgValue:
    if spec.type == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise ArgumentRejected(f"argument `{name}` must be an integer")
        if not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
            raise ArgumentRejected(f"argument `{name}` is not a 64-bit integer")
        if spec.min is not None and value < spec.min:
            raise ArgumentRejected(f"argument `{name}` is below its minimum {spec.min}")
        if spec.max is not None and value > spec.max:
            raise ArgumentRejected(f"argument `{name}` is above its maximum {spec.max}")
        if value < 0 and not dash_ok:
            raise ArgumentRejected(f"argument `{name}` may not start with '-'")
        return value
    if not isinstance(value, str):
        raise ArgumentRejected(f"argument `{name}` must be a string")
    if len(value) > spec.max_length:
        raise ArgumentRejected(f"argument `{name}` is longer than {spec.max_length} characters")
    if _FORBIDDEN_CHARS.search(value):
        raise ArgumentRejected(f"argument `{name}` contains a control character")
    if _SURROGATES.search(value):
        # JSON can carry a lone UTF-16 surrogate (\ud800) that no UTF-8 encoder accepts.
        raise ArgumentRejected(f"argument `{name}` is not valid Unicode text")
    if value.startswith("-") and not dash_ok:
        raise ArgumentRejected(f"argument `{name}` may not start with '-'")
    if spec.enum is not None:
        if value not in spec.enum:
            raise ArgumentRejected(f"argument `{name}` is not one of the allowed values")
        return value
    assert spec.pattern is not None  # ParamSpec guarantees exactly one constraint
    if not _compiled(spec.pattern).fullmatch(value):
        raise ArgumentRejected(f"argument `{name}` does not match its pattern")
    return value


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _safe_name(name: str) -> str:
    return name if re.fullmatch(r"[a-z][a-z0-9_]{0,63}", name) else "<invalid name>"
