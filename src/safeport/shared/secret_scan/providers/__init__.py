"""Provider tokens by their published formats: one rule per format, grouped by family
(:mod:`.rules` holds the first ones kept and :data:`RULES`, all of them)."""

from safeport.shared.secret_scan.providers.rules import RULES
from safeport.shared.secret_scan.providers.token_rule import TokenRule

__all__ = ["RULES", "TokenRule"]
