"""The agent's rooms import as docs/architecture.md says: no cycle among its modules, the bash
subpackage beneath the rest of the agent, and nothing of the library importing the agent."""

from __future__ import annotations

import ast
from pathlib import Path

import turnmemory

SOURCE = Path(turnmemory.__file__).parent
AGENT = "turnmemory.agent"


def _module(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The ``turnmemory`` modules ``path`` imports when it is loaded (function-local and
    ``TYPE_CHECKING`` imports left out: they do not run at import time)."""
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                ).strip(".")
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("turnmemory")}


GRAPH = {_module(path): _imports(path) for path in SOURCE.rglob("*.py")}


def _agent_edges() -> dict[str, set[str]]:
    modules = {name for name in GRAPH if name.startswith(AGENT)}
    return {
        name: {target for target in GRAPH[name] if target in modules and target != name} for name in modules
    }


def test_the_agent_modules_import_one_another_without_a_cycle() -> None:
    edges = _agent_edges()
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in sorted(edges[name]):
            if state.get(target) == "open" and not name.startswith(f"{target}."):
                cycle = [*path[path.index(target) :], target] if target in path else [name, target]
                raise AssertionError(f"an import cycle among the agent's modules: {' -> '.join(cycle)}")
            if target not in state:
                visit(target, [*path, target])
        state[name] = "done"

    assert len(edges) > 40, "the agent's modules were found"
    for name in sorted(edges):
        if name not in state:
            visit(name, [name])


def test_the_bash_subpackage_imports_nothing_of_the_agent_above_it() -> None:
    bash = f"{AGENT}.bash"
    beneath = (f"{bash}.", f"{AGENT}._credentials")  # and the agent package itself, which imports nothing
    above = {
        (name, target)
        for name, targets in _agent_edges().items()
        if name == bash or name.startswith(f"{bash}.")
        for target in targets
        if target not in (AGENT, bash) and not target.startswith(beneath)
    }
    assert f"{bash}._grammar" in GRAPH, "the bash subpackage was found"
    assert not above, f"bash/ imports the agent above it: {sorted(above)}"


def test_no_layer_below_the_agent_imports_it() -> None:
    upward = {
        (name, target)
        for name, targets in GRAPH.items()
        if not name.startswith((AGENT, "turnmemory.cli"))
        for target in targets
        if target.startswith(AGENT)
    }
    assert not upward, f"modules below the agent import it: {sorted(upward)}"
