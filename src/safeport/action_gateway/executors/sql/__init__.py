"""Read-only queries on PostgreSQL: the connection, the role's inspection and the query run."""

__all__ = []
