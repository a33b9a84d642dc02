from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED = REPO.parent / "shared" / "data" / "transcripts"


def shared_files(directory: str, pattern: str) -> list[Path]:
    """The shared real transcripts of one format; skips the test when they are absent."""
    folder = SHARED / directory
    if not folder.is_dir():
        pytest.skip(f"shared transcripts not found at {folder}")
    return sorted(folder.glob(pattern))


def manifest() -> dict[str, dict[str, object]]:
    """The independent per-file counts (user turns, tool calls) published with the shared data."""
    path = SHARED / "manifest.json"
    if not path.is_file():
        pytest.skip(f"shared transcripts manifest not found at {path}")
    return {entry["file"]: entry for entry in json.loads(path.read_text())}
