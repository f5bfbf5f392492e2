"""Render a declared SSH command into the one string the remote shell will see (pure).

The remote side of SSH always hands the command string to the user's login shell, so the only
safe way to pass data is to quote every word: the declared argv with each ``{param}`` replaced by
its validated value, then :func:`shlex.join`. A value such as ``x; touch /tmp/owned`` or
``-oProxyCommand=…`` reaches the remote program as one literal argument, never as syntax.
Arguments are validated again here (the ladder did it first) so that this module is safe on its
own: nothing that fails the declared constraint is ever rendered.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.policy.arguments import ArgumentRejected, validate_args
from safeport.shared.schemas.config import SshCommand
from safeport.shared.schemas.config_params import PLACEHOLDER

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# sshd runs the command as one argument of `$SHELL -c`, and Linux refuses a single argument of
# 128 KiB or more (MAX_ARG_STRLEN); OpenSSH also drops a connection whose packet exceeds
# 256 KiB. Quoting can grow a value fivefold (each `'` becomes `'"'"'`), so the limit is checked
# on the rendered string, before anything is sent.
MAX_COMMAND_BYTES = 128 * 1024 - 1


def render_argv(command: SshCommand, args: Mapping[str, object]) -> list[str]:
    """The declared argv with validated values substituted; raise ``invalid_target`` otherwise."""
    try:
        values = validate_args(command.params, args, allow_leading_dash=command.allow_leading_dash)
    except ArgumentRejected as exc:
        raise ActionError("invalid_target", exc.message) from None
    argv = [PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), part) for part in command.argv]
    for word in argv:
        # A control character in a declared word is a config mistake; in a value it was
        # already refused. Either way a newline must never reach the remote shell.
        if _CONTROL.search(word):
            raise ActionError("invalid_target", "the rendered command contains a control character")
    return argv


def render_command(command: SshCommand, args: Mapping[str, object]) -> str:
    """The exact command string sent in the SSH ``exec`` request."""
    rendered = shlex.join(render_argv(command, args))
    if len(rendered.encode("utf-8")) > MAX_COMMAND_BYTES:
        raise ActionError(
            "invalid_target",
            f"the rendered command is longer than {MAX_COMMAND_BYTES} bytes once quoted",
        )
    return rendered
