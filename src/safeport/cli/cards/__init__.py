"""`sp approvals`, `sp approver` and `sp sessions`: the cards a human answers, as lines or a
full screen, and the session grants those answers leave behind."""

__all__ = []
