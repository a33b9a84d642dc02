"""The ``turnmemory`` command: ``analyze``, ``run``, ``chat``, ``sessions``, ``show``.

Each area registers its own subcommands on the shared typer app; this module only assembles them.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``turnmemory`` console script."""
    try:
        import typer
    except ImportError:
        print(
            "turnmemory: the command line needs the 'agent' extra: pip install 'turnmemory[all]'",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
    app = typer.Typer(
        name="turnmemory",
        help="Turn-boundary tool-history memory for coding agents.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for register in _registrars():
        register(app)
    app(args=argv, prog_name="turnmemory")


def _registrars() -> list:  # type: ignore[type-arg]
    """Each area's ``register(app)``; an area that is not importable yet is skipped."""
    found = []
    for module in ("turnmemory.analysis.command", "turnmemory.agent.command"):
        try:
            found.append(__import__(module, fromlist=["register"]).register)
        except ModuleNotFoundError as error:
            if error.name is None or not module.startswith(error.name):
                raise
    return found


if __name__ == "__main__":
    main()
