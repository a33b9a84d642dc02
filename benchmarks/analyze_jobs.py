"""``turnmemory analyze --jobs``: wall time, CPU time and peak memory with one and two worker processes.

The shared real transcripts (``../shared/data/transcripts``) are linked ``--copies`` times into a
temporary folder (symbolic links: every copy is read and analysed like a file of its own), and
``turnmemory analyze FOLDER --format json`` runs once per ``--jobs`` value; the outputs must be
identical but for the paths. CPU time and peak memory are read from ``/proc`` for the command and
every process below it (its worker processes), every 0.1 s while it runs.

    python benchmarks/analyze_jobs.py [--copies 20] [--jobs 1 2] [--tokenizer o200k|bytes]
"""

from __future__ import annotations

import argparse
import json
import os
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


def _below(root: int) -> list[int]:
    """``root`` and every process below it."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def _usage(pid: int) -> tuple[float, int] | None:
    """CPU seconds so far and peak resident memory in KiB of one process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    peak = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), peak


def run(folder: Path, jobs: int, tokenizer: str) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds of the command and its workers, the largest peak RSS of one of them in
    MiB, and the output."""
    command = [TURNMEMORY, "analyze", str(folder), "--format", "json", "--tokenizer", tokenizer]
    started = time.perf_counter()
    seen: dict[int, tuple[float, int]] = {}
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(
            [*command, "--jobs", str(jobs)], stdout=out, stderr=subprocess.DEVNULL, text=True
        )
        while process.poll() is None:
            for pid in _below(process.pid):
                if (usage := _usage(pid)) is not None:  # a process that has ended reads as zeros
                    before = seen.get(pid, (0.0, 0))
                    seen[pid] = (max(before[0], usage[0]), max(before[1], usage[1]))
            time.sleep(0.1)
        wall = time.perf_counter() - started
        if process.returncode != 0:
            raise SystemExit(f"{' '.join(command)} exited {process.returncode}")
        out.seek(0)
        output = out.read()
    cpu = sum(usage[0] for usage in seen.values())
    return wall, cpu, max((usage[1] for usage in seen.values()), default=0) // 1024, output


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
        load = os.getloadavg()[0]
        print(
            f"{files:,} sessions ({args.copies} copies of {args.data}), {os.cpu_count()} cores, load {load:.1f}\n"
        )
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
