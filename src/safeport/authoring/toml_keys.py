"""Names the scaffolds write into table headers of gateway.toml.

A name given on the command line becomes part of a header (`[credentials.NAME]`), where a dot
would open a nested table and a bracket or a line break would end the header and start text of
its own. So a name is checked against the policy's own rule for names first, and written bare
only when TOML reads it as one key, quoted otherwise (`[credentials."deploy.v2"]`).
"""

from __future__ import annotations

import json
import re

from safeport.errors import ConfigError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def checked_name(value: str, flag: str) -> str:
    """``value`` when it is a policy name; a :class:`ConfigError` naming ``flag`` otherwise."""
    if _NAME.fullmatch(value) is None:
        raise ConfigError(
            f"{flag} {value!r} is not a name: 1 to 64 letters, digits, `_`, `.` or `-`, "
            "starting with a letter or a digit",
            hint="nothing was written",
        )
    return value


def table_key(name: str) -> str:
    """``name`` as one key of a table header: bare when TOML reads it so, else quoted."""
    return name if _BARE.fullmatch(name) else json.dumps(name)
