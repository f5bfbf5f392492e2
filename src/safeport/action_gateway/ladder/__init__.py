"""The decision ladder: every proposal climbs the same rungs (who asks, what policy declares,
arguments, rates, approval, execution, filtered result); a refusal names its rung."""

__all__ = []
