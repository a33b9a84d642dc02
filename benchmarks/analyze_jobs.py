"""``turnmemory analyze --jobs``: wall time, CPU time and peak memory with one and two worker processes.

The shared real transcripts (``../shared/data/transcripts``) are linked ``--copies`` times into a
temporary folder (symbolic links: every copy is read and analysed like a file of its own), and
``turnmemory analyze FOLDER --format json`` runs once per ``--jobs`` value; the outputs must be
identical but for the paths.

    python benchmarks/analyze_jobs.py [--copies 20] [--jobs 1 2] [--tokenizer o200k|bytes]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from turnmemory.transcripts import detect_format, discover

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "transcripts"
TURNMEMORY = str(Path(sys.executable).with_name("turnmemory"))


def link_copies(data: Path, copies: int, into: Path) -> int:
    """Link every session under ``data`` ``copies`` times into ``into``; the number of files made."""
    sessions = [path for path in discover([data]) if detect_format(path) is not None]
    for copy in range(copies):
        folder = into / f"copy{copy:03}"
        folder.mkdir()
        for path in sessions:
            (folder / f"{path.parent.name}__{path.name}").symlink_to(path.resolve())
    return len(sessions) * copies


def run(folder: Path, jobs: int, tokenizer: str) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds of the command and its workers, their peak RSS in MiB, the output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [
            TURNMEMORY,
            "analyze",
            str(folder),
            "--format",
            "json",
            "--tokenizer",
            tokenizer,
            "--jobs",
            str(jobs),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss // 1024, done.stdout


def without_paths(output: str) -> str:
    document = json.loads(output)
    for entry in document["sessions"]:
        entry["path"] = Path(entry["path"]).name
    return json.dumps(document, sort_keys=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--tokenizer", choices=("o200k", "bytes"), default="o200k")
    parser.add_argument("--data", type=Path, default=DATA, help=f"transcripts folder (default: {DATA})")
    args = parser.parse_args()
    if not args.data.is_dir():
        raise SystemExit(f"no transcripts at {args.data}")
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        files = link_copies(args.data, args.copies, folder)
        print(f"{files:,} sessions ({args.copies} copies of {args.data}), {os.cpu_count()} cores\n")
        print("| --jobs | wall | CPU (all processes) | peak RSS of one process | sessions per second |")
        print("|---:|---:|---:|---:|---:|")
        outputs = []
        for jobs in args.jobs:
            wall, cpu, peak, output = run(folder, jobs, args.tokenizer)
            outputs.append(without_paths(output))
            print(f"| {jobs} | {wall:.1f} s | {cpu:.1f} s | {peak:,} MiB | {files / wall:.1f} |", flush=True)
        print(f"\nOutputs identical (paths aside): {'yes' if len(set(outputs)) == 1 else 'NO'}")


if __name__ == "__main__":
    main()
