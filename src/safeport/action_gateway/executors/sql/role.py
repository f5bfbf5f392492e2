"""What a database role holds, and whether the policy allows it (the decision is pure).

Read with the role's own connection, at accept, on every new connection, and (the cheap part:
superuser, the server-file roles, where it may create objects) again in every query's
transaction, so a role made superuser (or given CREATE) after the policy was accepted is refused
on its next call, pooled connection or not.
Membership is counted whether or not it is inherited: a member can ``SET ROLE`` to what it does
not inherit.
"""

from __future__ import annotations

from dataclasses import dataclass

from safeport.shared.schemas.config import SqlDatabase

FILE_ROLES = ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program")

# Superuser (itself or a role it can become) and the server-file roles: one row, cheap enough to
# ask inside every query's transaction.
PRIVILEGE_QUERY = (
    "SELECT coalesce(bool_or(r.rolsuper), false),"
    " coalesce(array_agg(r.rolname ORDER BY r.rolname) FILTER (WHERE r.rolname IN"
    " ('pg_read_server_files', 'pg_write_server_files', 'pg_execute_server_program')),"
    " '{}'),"
    # Functions that reach the server's files, superuser-only by default: EXECUTE granted on one
    # (to it or a role it belongs to) reads the data directory at least, pg_hba.conf and the
    # server's key, without any of the roles above. A superuser is reported as such.
    " (SELECT coalesce(array_agg(DISTINCT f.proname ORDER BY f.proname), '{}')"
    " FROM pg_proc f JOIN pg_roles m ON pg_has_role(current_user, m.oid, 'MEMBER')"
    " WHERE f.proname IN ('pg_read_file', 'pg_read_binary_file', 'pg_ls_dir', 'pg_stat_file',"
    " 'lo_import', 'lo_export', 'pg_file_write', 'pg_file_rename', 'pg_file_unlink',"
    " 'pg_file_sync', 'pg_logdir_ls')"
    " AND NOT m.rolsuper AND has_function_privilege(m.oid, f.oid, 'EXECUTE'))"
    # Attributes that reach past table privileges: CREATEROLE grants itself the roles above (up
    # to PostgreSQL 15), REPLICATION streams every table, BYPASSRLS reads what row security hides.
    ", array_remove(ARRAY[CASE WHEN bool_or(r.rolcreaterole) THEN 'CREATEROLE' END,"
    " CASE WHEN bool_or(r.rolreplication) THEN 'REPLICATION' END,"
    " CASE WHEN bool_or(r.rolbypassrls) THEN 'BYPASSRLS' END], NULL)"
    # Where it (or a role it belongs to) may create objects: a schema (functions and operators
    # a query would find on its search_path, tables that fill the disk) or the database itself
    # (new schemas). An owner may grant itself back CREATE. TEMPORARY is not counted: PUBLIC
    # holds it by default, and a temporary object lives and dies with its own session. (No
    # format(): this text is also sent with bound values, where '%' is the driver's.)
    ", (SELECT coalesce(array_agg(DISTINCT c.name ORDER BY c.name), '{}') FROM ("
    " SELECT 'schema ' || quote_ident(n.nspname) AS name FROM pg_namespace n"
    " JOIN pg_roles m ON pg_has_role(current_user, m.oid, 'MEMBER')"
    " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')"
    " AND n.nspname !~ '^pg_(toast|temp_)'"
    " AND (has_schema_privilege(m.oid, n.oid, 'CREATE') OR n.nspowner = m.oid)"
    " UNION SELECT 'database ' || quote_ident(current_database()) FROM pg_roles m"
    " WHERE pg_has_role(current_user, m.oid, 'MEMBER')"
    " AND has_database_privilege(m.oid, current_database(), 'CREATE')) c)"
    " FROM pg_roles r WHERE pg_has_role(current_user, r.oid, 'MEMBER')"
)
# Tables (and views, foreign tables) it or any role it belongs to may change; system schemas
# aside. The first few names, and how many.
WRITE_QUERY = (
    "SELECT count(*), coalesce((array_agg(q.name ORDER BY q.name))[1:5], '{}') FROM ("
    " SELECT DISTINCT format('%I.%I', n.nspname, c.relname) AS name"
    " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " JOIN pg_roles r ON pg_has_role(current_user, r.oid, 'MEMBER')"
    " WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')"
    " AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
    " AND n.nspname NOT LIKE 'pg\\_toast%'"
    " AND (has_table_privilege(r.oid, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')"
    " OR has_any_column_privilege(r.oid, c.oid, 'INSERT, UPDATE')"
    # An owner may grant itself back what it revoked from itself.
    " OR c.relowner = r.oid)) q"
)


@dataclass(frozen=True)
class RolePrivileges:
    """What the role can do beyond reading: superuser, server-file roles, writable tables."""

    superuser: bool
    file_roles: tuple[str, ...]
    writable_tables: int | None = None  # None: not read this time (the per-query check)
    writable_examples: tuple[str, ...] = ()
    file_functions: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()
    creatable: tuple[str, ...] = ()  # "schema public", "database app": where it may CREATE


def role_problems(database_id: str, database: SqlDatabase, role: RolePrivileges) -> list[str]:
    """Everything ``role`` holds that the policy did not allow in words, as sentences."""
    found: list[str] = []
    who = f"sql database {database_id!r}: role {database.user!r}"
    if database.allow_superuser is None:
        if role.superuser:
            found.append(f"{who} is a superuser (or can become one)")
        if role.file_roles:
            found.append(f"{who} is a member of {', '.join(role.file_roles)}")
        if role.file_functions:
            found.append(f"{who} may execute {', '.join(role.file_functions)}")
        if role.attributes:
            found.append(f"{who} has {', '.join(role.attributes)}")
    if database.allow_write_privileges is None and role.writable_tables:
        examples = ", ".join(role.writable_examples)
        found.append(f"{who} may write to {role.writable_tables} table(s), e.g. {examples}")
    if database.allow_write_privileges is None and role.creatable:
        found.append(f"{who} may create objects in {', '.join(role.creatable)}")
    return found
