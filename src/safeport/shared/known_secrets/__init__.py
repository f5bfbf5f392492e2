"""Known secrets (the credential an action runs with): finding them in any form we can name in
what leaves the gateway, and cutting messages without leaving a fragment of one.

Unlike :mod:`safeport.shared.secret_scan`, which finds secrets it was never told about by their
shape, everything here is given the secret's exact value and looks for that value only.
"""

from safeport.shared.known_secrets.shortening import first_line, secret_forms, shorten
from safeport.shared.known_secrets.views import PIECE, KnownSecrets

__all__ = ["PIECE", "KnownSecrets", "first_line", "secret_forms", "shorten"]
