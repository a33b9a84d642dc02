"""The integrations package imports no framework; a framework module without its extra says what to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "pydantic_ai", "agents", "litellm")


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_the_package_and_compact_import_no_framework() -> None:
    done = _python(
        "import sys, turnmemory.integrations as i\n"
        "i.compact([{'role': 'user', 'content': 'x'}])\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("langchain", "langchain", "langchain"),
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("openai_agents", "agents", "agents"),
        ("litellm", "litellm", "litellm"),
    ],
)
def test_a_missing_extra_is_one_clear_line(module: str, blocked: str, extra: str) -> None:
    done = _python(
        f"import sys\nsys.modules[{blocked!r}] = None\n"
        f"try:\n    import turnmemory.integrations.{module}\n"
        "except ImportError as error:\n    print(error)\n"
    )
    assert done.returncode == 0, done.stderr
    assert f"pip install 'turnmemory[{extra}]'" in done.stdout
    assert len(done.stdout.strip().splitlines()) == 1
