"""What running bash in the sandbox costs: the bash tool's wall time per command, off against
``workspace-write``, side by side and interleaved; and what keeping the map of nested repositories
costs, by workspace size.

    .venv/bin/python benchmarks/sandbox.py [--runs N]

Commands, in this repository: ``true`` (the fixed cost: bubblewrap sets up its namespaces and mounts),
``git status --short`` and ``ls -lR src``. Each row is the median of ``--runs`` calls of the tool's
``run_command`` (spill files, the gate, watchdog registration, the git protection and the cleanup
included). The second table times :class:`~turnmemory.agent.bash._git_guard.Repositories` on synthetic
trees (directories of 20 files): the first walk, and a refresh with nothing changed (what each
contained command pays, twice).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from turnmemory.agent.bash._git_guard import Repositories
from turnmemory.agent.bash._sandbox import open_sandbox, sandbox_unavailable
from turnmemory.agent.tools import ToolContext
from turnmemory.agent.tools.shell import run_command

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("true", "git status --short", "ls -lR src")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    unavailable = sandbox_unavailable()
    if unavailable is not None:
        print(f"no sandbox to measure: {unavailable}", file=sys.stderr)
        return 1
    sandbox, _ = open_sandbox("workspace-write", str(ROOT))
    with tempfile.TemporaryDirectory() as spill:
        contexts = {
            "off": ToolContext(workspace=str(ROOT), spill_dir=spill),
            "workspace-write": ToolContext(workspace=str(ROOT), spill_dir=spill, sandbox=sandbox),
        }
        print("| command | off | workspace-write | extra | ratio |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for command in COMMANDS:
            times: dict[str, list[float]] = {name: [] for name in contexts}
            for _ in range(args.runs):
                for name, ctx in contexts.items():
                    start = time.perf_counter()
                    run_command(command, 60, ctx)
                    times[name].append(time.perf_counter() - start)
            off, boxed = (statistics.median(times[name]) * 1000 for name in contexts)
            extra = f"{boxed - off:+.1f} ms | {boxed / off:.2f}x"
            print(f"| `{command}` | {off:.1f} ms | {boxed:.1f} ms | {extra} |")
    print()
    _walks(args.runs)
    return 0


def _walks(runs: int) -> None:
    print("| entries | directories | first walk | refresh, nothing changed |")
    print("| ---: | ---: | ---: | ---: |")
    for directories in (100, 1_000, 10_000):
        with tempfile.TemporaryDirectory() as root:
            for number in range(directories):
                folder = Path(root, f"d{number // 100}", f"e{number}")
                folder.mkdir(parents=True)
                for name in range(20):
                    (folder / f"f{name}").touch()
            start = time.perf_counter()
            repositories = Repositories(root)
            repositories.refresh()
            first = time.perf_counter() - start
            time.sleep(0.2)  # past the window in which a just-changed directory is listed again
            refreshes = []
            for _ in range(min(runs, 10)):
                start = time.perf_counter()
                repositories.refresh()
                refreshes.append(time.perf_counter() - start)
            entries = directories * 21 + directories // 100
            refresh = statistics.median(refreshes) * 1000
            print(
                f"| {entries} | {directories + directories // 100} | {first * 1000:.0f} ms | {refresh:.1f} ms |"
            )


if __name__ == "__main__":
    sys.exit(main())
