"""What the grep tool's safety costs: ripgrep walking a tree itself, against the tool's way.

    .venv/bin/python benchmarks/search.py [TREE...] [--runs N]

For each tree (default: this repository, a git work tree, and the virtualenv's ``site-packages``, a
large tree outside git), side by side and interleaved, the median of ``--runs`` searches for a pattern
that matches nothing (every file is read to the end):

- **rg walks**: ``rg`` given the directory, reading ``.gitignore`` files itself (what the tool did
  before; a ``.gitignore`` that is a FIFO or a link to ``/dev/zero`` hangs or floods it);
- **tool, rg**: :func:`~turnmemory.agent.tools.search.grep_files` with ripgrep: the safe listing
  (``git ls-files``, or the walker), each file checked (regular, not over the size limit, not binary),
  then ``rg`` on those files;
- **tool, Python**: the same listing and checks, then the Python scan.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

from turnmemory.agent.tools._base import Deadline
from turnmemory.agent.tools._listing import list_files
from turnmemory.agent.tools.search import grep_files

ROOT = Path(__file__).resolve().parents[1]
PATTERN = "zq9_no_such_text_zq9"


def _rg_walks(rg: str, tree: str) -> None:
    command = [rg, "--no-config", "--line-number", "--no-heading", "--color=never", "--no-require-git"]
    command += ["--hidden", "--glob", "!.git", "--sort", "path", "--no-messages", "-e", PATTERN, "--", tree]
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def _median(runs: int, contenders: dict[str, Callable[..., object]]) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, search in contenders.items():
            start = time.perf_counter()
            search()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rg = shutil.which("rg")
    if rg is None:
        print("ripgrep is not installed: nothing to compare", file=sys.stderr)
        return 1
    trees = args.trees or [ROOT, Path(sysconfig.get_paths()["purelib"])]
    print("| tree | files listed | rg walks | tool, rg | vs rg walks | tool, Python | vs rg walks |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for tree in trees:
        root = str(tree.resolve())
        files = len(list_files(root, Deadline(600)))
        medians = _median(
            args.runs,
            {
                "walk": lambda root=root: _rg_walks(rg, root),
                "tool": lambda root=root: grep_files(PATTERN, root, None, ripgrep=rg, deadline=Deadline(600)),
                "python": lambda root=root: grep_files(
                    PATTERN, root, None, ripgrep=None, deadline=Deadline(600)
                ),
            },
        )
        walk = medians["walk"]
        print(
            f"| {tree.name} | {files:,} | {walk * 1000:,.0f} ms | {medians['tool'] * 1000:,.0f} ms | "
            f"{medians['tool'] / walk:.1f}x | {medians['python'] * 1000:,.0f} ms | {medians['python'] / walk:.1f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
