"""`python -m safeport.context_server --root DIR [--root DIR]... [--origin NAME]`."""

from __future__ import annotations

import argparse
import sys

from safeport.errors import Error
from safeport.shared.platform_support import refuse_unsupported_platform


def main(argv: list[str] | None = None) -> int:
    refuse_unsupported_platform("safeport context server")
    # Imported after the platform check: the server needs Linux modules (fcntl, resource).
    from safeport.context_server.server import ServeOptions, serve

    parser = argparse.ArgumentParser(
        prog="python -m safeport.context_server",
        description="Serve a workspace read-only over MCP stdio.",
    )
    parser.add_argument("--root", action="append", default=[], help="a folder to serve")
    parser.add_argument("--profile", choices=["reader", "agent"], default="reader")
    parser.add_argument("--origin", default="unknown", help="a label recorded in the journal")
    args = parser.parse_args(argv)
    try:
        serve(ServeOptions(roots=args.root, profile=args.profile, origin=args.origin))
    except Error as exc:
        sys.stderr.write(f"safeport context server: {exc.diagnostic()}\n")
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
