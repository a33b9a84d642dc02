"""The ``turnmemory`` command: ``analyze``, ``run``, ``chat``, ``sessions``, ``show``, ``config``.

Each area registers its own subcommands on the shared typer app; this module only assembles them. Help
is plain text (it reads the same at 80 columns, piped or not); ``-h`` is ``--help``.
"""

from __future__ import annotations

import os
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
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback(invoke_without_command=True)
    def root(
        show_version: bool = typer.Option(False, "--version", help="Show the version and exit."),
    ) -> None:
        """Turn-boundary tool-history memory for coding agents."""
        if show_version:
            print(f"turnmemory {_version()}")
            raise typer.Exit(0)

    for register in _registrars(sys.argv[1:] if argv is None else argv):
        register(app)
    try:
        app(args=argv, prog_name="turnmemory")
    except BrokenPipeError:
        # the reader went away (``turnmemory analyze ... | head``): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(141) from None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("turnmemory")
    except PackageNotFoundError:
        return "unknown (not installed)"


_AREAS: dict[str, tuple[str, ...]] = {
    "turnmemory.analysis.command": ("analyze",),
    "turnmemory.agent.command": ("config", "run", "chat", "sessions", "show", "rewind"),
}
"""Each area's module and the subcommands its ``register(app)`` adds, in the order help lists them."""


def _registrars(args: list[str]) -> list:  # type: ignore[type-arg]
    """Each area's ``register(app)``, or only the named subcommand's area (the others are not imported:
    a headless run starts sooner)."""
    named = [module for module, commands in _AREAS.items() if args and args[0] in commands]
    return [__import__(module, fromlist=["register"]).register for module in named or _AREAS]


if __name__ == "__main__":
    main()
