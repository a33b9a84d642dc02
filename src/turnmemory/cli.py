"""The ``turnmemory`` command: ``try``, ``chat``, ``run``, ``sessions``, ``show``, ``rewind``, ``config``,
``proxy``, ``analyze``.

Each area registers its own subcommands on the shared typer app; this module only assembles them. Help
is plain text (it reads the same at 80 columns, piped or not); ``-h`` is ``--help``.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``turnmemory`` console script."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:  # answered without the extras, which a library-only install lacks
        print(f"turnmemory {_version()}")
        return
    try:
        import typer
    except ImportError:
        print(f"turnmemory: the command line needs the 'agent' extra: {_install_hint()}", file=sys.stderr)
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

    for register in _registrars(args):
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


def _install_hint() -> str:
    """How to add the extras to this installation: from the directory it was installed from (a
    checkout, as its PEP 610 ``direct_url.json`` records), else from PyPI."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution
    from urllib.parse import unquote, urlparse

    try:
        origin = json.loads(distribution("turnmemory").read_text("direct_url.json") or "{}")
    except (PackageNotFoundError, ValueError):
        origin = {}
    url = urlparse(origin.get("url", "")) if isinstance(origin, dict) else urlparse("")
    if url.scheme != "file" or not isinstance(origin.get("dir_info"), dict):
        return "pip install 'turnmemory[all]'"
    place = unquote(url.path)
    where = "." if os.path.realpath(place) == os.path.realpath(os.getcwd()) else place
    editable = "-e " if origin["dir_info"].get("editable") else ""
    return f"pip install {editable}'{where}[all]'"


_AREAS: dict[str, tuple[str, ...]] = {
    "turnmemory.agent.command": ("try", "chat", "run", "sessions", "show", "rewind", "config"),
    "turnmemory.proxy.command": ("proxy",),
    "turnmemory.analysis.command": ("analyze",),
}
"""Each area's module and the subcommands its ``register(app)`` adds, in the order help lists them:
the agent first, in the order a user meets them, then the proxy and the analysis."""


def _registrars(args: list[str]) -> list:  # type: ignore[type-arg]
    """Each area's ``register(app)``, or only the named subcommand's area (the others are not imported:
    a headless run starts sooner)."""
    named = [module for module, commands in _AREAS.items() if args and args[0] in commands]
    return [__import__(module, fromlist=["register"]).register for module in named or _AREAS]


if __name__ == "__main__":
    main()
