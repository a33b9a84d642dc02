"""Our Chat Completions history through the real chat templates of open models, as vLLM and SGLang render them.

Every template in ``../shared/data/chat-templates`` is rendered with every history shape, once as the
full trace of the turns (the raw calls with real arguments and outputs, one assistant message per
provider step, ids as the model's server makes them) and once as ``openai_chat.to_request(history,
model=served_model)``, after each server's preprocessing of the request, in a sandboxed jinja2
environment like transformers' ``apply_chat_template``. Wherever the full trace renders, ours must render
too, and every historical call and result must appear in the prompt in order, with the prose between.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox
import pytest

import turnmemory as tm
from turnmemory.llm import ToolResult, ToolSpec, open_client
from turnmemory.providers import openai_chat
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

CHAT_TEMPLATES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "chat-templates"
MANIFEST = CHAT_TEMPLATES / "templates.json"
ENTRIES: list[dict[str, Any]] = json.loads(MANIFEST.read_text()) if MANIFEST.is_file() else []

Message = dict[str, Any]


# -- the sandbox transformers renders chat templates in ------------------------------------------------


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: Any = None,
    sort_keys: bool = False,
) -> str:
    # transformers' tojson: unlike jinja2's own, no HTML escaping and non-ASCII kept.
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


class _Generation(jinja2.ext.Extension):
    """transformers' ``{% generation %}`` block (it only marks assistant spans)."""

    tags: ClassVar[set[str]] = {"generation"}

    def parse(self, parser: Any) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


@cache
def _environment() -> jinja2.sandbox.ImmutableSandboxedEnvironment:
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


@dataclass(frozen=True)
class Template:
    name: str
    model: str
    compiled: jinja2.Template
    tokens: dict[str, str]
    native_ids: str
    content_format: str


@cache
def template(name: str) -> Template:
    """One template of the manifest, compiled once."""
    entry = next(e for e in ENTRIES if e["name"] == name)
    source = (CHAT_TEMPLATES / entry["file"]).read_text()
    return Template(
        name=name,
        model=entry["served_model"],
        compiled=_environment().from_string(source),
        tokens=entry["tokens"],
        native_ids=entry["native_ids"],
        content_format=_content_format(_environment().parse(source)),
    )


# -- vLLM's content-format detection (vllm/entrypoints/chat_utils.py, "auto") ---------------------------


def _accesses(node: jinja2.nodes.Node, name: str, key: str | None = None) -> bool:
    """Whether ``node`` reads ``name`` (or ``name[key]`` / ``name.key``), through filters, tests and slices."""
    if isinstance(node, jinja2.nodes.Filter | jinja2.nodes.Test):
        return node.node is not None and _accesses(node.node, name, key)
    if isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Slice):
        return _accesses(node.node, name, key)
    if key is None:
        return isinstance(node, jinja2.nodes.Name) and node.ctx == "load" and node.name == name
    if isinstance(node, jinja2.nodes.Getitem):
        return (
            isinstance(node.arg, jinja2.nodes.Const) and node.arg.value == key and _accesses(node.node, name)
        )
    if isinstance(node, jinja2.nodes.Getattr):
        return node.attr == key and _accesses(node.node, name)
    return False


def _content_format(root: jinja2.nodes.Template) -> str:
    """``"openai"`` when the template loops over a message's content, else ``"string"``."""
    lists = ["messages"]
    for assign in root.find_all(jinja2.nodes.Assign):
        if isinstance(assign.target, jinja2.nodes.Name) and any(_accesses(assign.node, n) for n in lists):
            lists.append(assign.target.name)
    loops = list(root.find_all(jinja2.nodes.For))
    items = [
        loop.target.name
        for loop in loops
        if isinstance(loop.target, jinja2.nodes.Name) and any(_accesses(loop.iter, n) for n in lists)
    ]
    for loop in loops:
        if any(_accesses(loop.iter, n, "content") for n in items) or _accesses(loop.iter, "content"):
            return "openai"
    return "string"


# -- the servers' preprocessing ------------------------------------------------------------------------


def _parsed_arguments(message: Message, *, strict: bool) -> None:
    for call in message.get("tool_calls") or ():
        arguments = call["function"].get("arguments")
        if isinstance(arguments, str):
            try:
                call["function"]["arguments"] = json.loads(arguments)
            except ValueError:
                if strict:
                    raise
                call["function"]["arguments"] = {}
        elif not isinstance(arguments, dict | list):
            call["function"]["arguments"] = {}


def vllm_messages(messages: Sequence[Message], content_format: str) -> list[Message]:
    """``parse_chat_messages`` of vLLM's Jinja path: content normalized, ``arguments`` parsed."""
    out: list[Message] = []
    for message in copy.deepcopy(list(messages)):
        content = message.get("content")
        parts = (
            [] if content is None else [content] if isinstance(content, str) else [p["text"] for p in content]
        )
        converted: Message = {"role": message["role"]}
        if content_format == "openai":
            converted["content"] = [{"type": "text", "text": text} for text in parts]
        else:
            converted["content"] = "\n".join(parts)
        if message["role"] == "assistant" and message.get("tool_calls") is not None:
            converted["tool_calls"] = list(message["tool_calls"])
        if message["role"] == "tool":
            if "tool_call_id" in message:
                converted["tool_call_id"] = message["tool_call_id"]
            if isinstance(converted["content"], list):
                converted["content"] = "\n".join(part["text"] for part in converted["content"])
        if isinstance(message.get("name"), str):
            converted["name"] = message["name"]
        out.append(converted)
    for message in out:
        if message["role"] == "assistant" and isinstance(message.get("tool_calls"), list):
            if not message["tool_calls"]:
                del message["tool_calls"]
            else:
                _parsed_arguments(message, strict=False)
    return out


def sglang_messages(messages: Sequence[Message], content_format: str) -> list[Message]:
    """SGLang's ``_apply_jinja_template``: ``arguments`` parsed, ``None`` content as ``""``, nulls dropped."""
    fields = ("role", "content", "tool_call_id", "name", "tool_calls")
    out: list[Message] = []
    for message in copy.deepcopy(list(messages)):
        dumped = {key: message.get(key) for key in fields}
        for call in dumped["tool_calls"] or ():
            call.setdefault("index", None)
        _parsed_arguments(dumped, strict=True)
        if dumped["content"] is None:
            dumped["content"] = ""
        content = dumped["content"]
        if isinstance(content, list):
            texts = [part["text"] for part in content]
            dumped["content"] = (
                [{"type": "text", "text": t} for t in texts]
                if content_format == "openai"
                else " ".join(texts)
            )
        if dumped["role"] == "tool" and isinstance(dumped["content"], list):
            dumped["content"] = " ".join(part["text"] for part in dumped["content"])
        out.append({key: value for key, value in dumped.items() if value is not None})
    return out


def render(tpl: Template, server: str, messages: Sequence[Message], tools: list[dict[str, Any]]) -> str:
    """The prompt ``server`` renders for a Chat Completions ``messages`` list (raises as it would)."""
    context = {"add_generation_prompt": True, **tpl.tokens}
    if server == "vllm":
        return tpl.compiled.render(
            messages=vllm_messages(messages, tpl.content_format), tools=tools, **context
        )
    converted = sglang_messages(messages, tpl.content_format)
    try:
        return tpl.compiled.render(messages=copy.deepcopy(converted), tools=tools, **context)
    except Exception:  # SGLang retries once with the tools unwrapped (some templates want them flat)
        flat = [tool.get("function", tool) for tool in tools]
        return tpl.compiled.render(messages=converted, tools=flat, **context)


SERVERS = ("vllm", "sglang")


# -- history shapes: what the model did, turn by turn ---------------------------------------------------


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]
    output: Any = None
    error: str | None = None


@dataclass(frozen=True)
class Turn:
    user: str
    steps: tuple[tuple[str, tuple[Call, ...]], ...]
    """Each provider step: its prose, then the calls it made (the final step makes none)."""


@dataclass(frozen=True)
class Shape:
    name: str
    turns: tuple[Turn, ...]
    system: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


READ = Call("read_file", {"path": "src/app.py"}, {"content": "def main():\n    return 1\n"})
READ_B = Call("read_file", {"path": "src/util.py"}, {"content": "X = 2\n"})
GREP = Call("grep", {"pattern": "TODO", "path": "src"}, {"matches": ["src/app.py:3: TODO"]})
BASH_OK = Call("bash", {"command": "pytest -q"}, {"exit_code": 0, "stdout": "3 passed"})
BASH_FAIL = Call("bash", {"command": "make test"}, {"exit_code": 2, "stdout": "1 failed"})
EDIT = Call(
    "edit_file", {"path": "src/app.py", "oldString": "1", "newString": "2"}, {"file_changed": "src/app.py"}
)
EDIT_ERR = Call(
    "edit_file", {"path": "src/nope.py", "oldString": "a", "newString": "b"}, error="file not found"
)
WRITE = Call("write_file", {"path": "NOTES.md", "content": "notes"}, {"file_changed": "NOTES.md"})
MCP = Call(
    "call_mcp_tool",
    {"server": "context7", "tool": "query-docs", "arguments": {"q": "jinja"}},
    {"content": [{"type": "text", "text": "docs"}]},
)

SHAPES = [
    Shape(
        "one call per prose step",
        (
            Turn(
                "Please fix the bug in app.",
                (
                    ("Let me look at the entry point first.", (READ,)),
                    ("I see the problem; changing the return value.", (EDIT,)),
                    ("Now the tests.", (BASH_OK,)),
                    ("Fixed: main returns two and the suite passes.", ()),
                ),
            ),
        ),
    ),
    Shape(
        "parallel calls",
        (Turn("Compare the two modules.", (("Reading both modules.", (READ, READ_B)), ("They agree.", ()))),),
    ),
    Shape(
        "sequential calls at one offset",
        (
            Turn(
                "Find the open work items.",
                (
                    ("Searching the sources.", (GREP,)),
                    ("", (READ,)),
                    ("", (BASH_OK,)),
                    ("There is one open item in app.", ()),
                ),
            ),
        ),
    ),
    Shape(
        "call at offset zero",
        (Turn("What does app do?", (("", (READ,)), ("It defines main, which returns one.", ()))),),
    ),
    Shape(
        "call at the end of the prose",
        (Turn("Run the suite.", (("Running the suite now.", (BASH_OK,)), ("", ()))),),
    ),
    Shape(
        "errors and failed commands",
        (
            Turn(
                "Edit nope and build.",
                (
                    ("Editing the missing module.", (EDIT_ERR,)),
                    ("That file does not exist; building instead.", (BASH_FAIL,)),
                    ("The build fails with one failing test.", ()),
                ),
            ),
        ),
    ),
    Shape(
        "MCP",
        (
            Turn(
                "How do I loop in jinja?", (("Checking the documentation.", (MCP,)), ("Use a for block.", ()))
            ),
        ),
    ),
    Shape(
        "several turns",
        (
            Turn("Read app please.", (("Opening it.", (READ,)), ("It has a main function.", ()))),
            Turn("Write a note about it.", (("Writing the note.", (WRITE,)), ("The note is written.", ()))),
            Turn("And run the tests.", (("Running them.", (BASH_FAIL,)), ("One test fails.", ()))),
        ),
    ),
    Shape(
        "no system message",
        (
            Turn(
                "Check app.", (("Looking at app.", (READ,)), ("Then editing it.", (EDIT,)), ("All done.", ()))
            ),
        ),
        system=False,
    ),
]

SYSTEM = "You are a careful coding agent."
FINAL = "What should we do next?"


def history(shape: Shape) -> list[tm.Message]:
    """The shape as TurnMemory history (recorded through the recorder), ending with a new user message."""
    out = [tm.Message("system", SYSTEM)] if shape.system else []
    for turn in shape.turns:
        out.append(tm.Message("user", turn.user))
        recorder = tm.TurnRecorder(workspace="/repo")
        for n, (prose, calls) in enumerate(turn.steps):
            if prose:
                recorder.text(prose)
            for k, call in enumerate(calls):
                call_id = f"c{n}_{k}"
                recorder.tool_start(call_id, call.name, call.arguments)
                recorder.tool_end(call_id, output=call.output, error=call.error)
            recorder.seal()
        out.append(recorder.finish())
    out.append(tm.Message("user", FINAL))
    return out


def _native_ids(style: str) -> Iterator[Callable[[str], str]]:
    n = 0
    while True:
        if style == "mistral":
            yield lambda name, n=n: f"Zq{n:07d}"
        elif style == "kimi":
            yield lambda name, n=n: f"functions.{name}:{n}"
        else:
            yield lambda name, n=n: f"chatcmpl-tool-{n:032x}"
        n += 1


def _one_by_one(steps: Sequence[tuple[str, tuple[Call, ...]]]) -> list[tuple[str, tuple[Call, ...]]]:
    out: list[tuple[str, tuple[Call, ...]]] = []
    for prose, calls in steps:
        out.extend((prose if n == 0 else "", (call,)) for n, call in enumerate(calls))
        if not calls:
            out.append((prose, ()))
    return out


def full_trace(shape: Shape, style: str, *, single: bool = False) -> list[Message]:
    """The same turns as the raw trace: one assistant message per provider step, real arguments and outputs.

    ``single``: as a model that makes one call per step would have made them (a step's calls one by one).
    """
    ids = _native_ids(style)
    out: list[Message] = [{"role": "system", "content": SYSTEM}] if shape.system else []
    for turn in shape.turns:
        out.append({"role": "user", "content": turn.user})
        for prose, calls in _one_by_one(turn.steps) if single else turn.steps:
            if not calls:
                if prose:
                    out.append({"role": "assistant", "content": prose})
                continue
            made = [(next(ids)(call.name), call) for call in calls]
            out.append(
                {
                    "role": "assistant",
                    "content": prose or None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                        }
                        for call_id, call in made
                    ],
                }
            )
            out.extend(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": json.dumps({"error": call.error} if call.error else call.output),
                }
                for call_id, call in made
            )
    out.append({"role": "user", "content": FINAL})
    return out


# -- what must be in the prompt --------------------------------------------------------------------------


def _variants(payload: str) -> list[str]:
    """The spellings a template may give a JSON string result: as is, JSON-escaped, or re-serialized."""
    loaded = json.loads(payload)
    return [payload, json.dumps(payload)[1:-1], json.dumps(loaded), json.dumps(loaded, ensure_ascii=False)]


def _find(prompt: str, needles: Sequence[str], start: int) -> tuple[int, int]:
    found = [(prompt.find(needle, start), len(needle)) for needle in needles]
    hits = [(at, size) for at, size in found if at >= 0]
    return min(hits) if hits else (-1, 0)


def walk(prompt: str, messages: Sequence[Message], baseline: str, *, names: bool) -> tuple[list[str], int]:
    """What of ``messages`` the prompt lacks or holds out of order, and how many call names it shows.

    Walks the messages: each user text, each assistant prose (when ``baseline``, the full trace's prompt,
    shows it too), then each batch of calls: the results in order, each call's name (when ``names``)
    before its result and the names in order. Results are searched in the spellings a template may give
    them. System prompts are not placed: templates move them.
    """
    problems: list[str] = []
    shown = 0
    cursor = 0
    pending: list[str] = []
    name_cursor = 0
    for message in messages:
        role = message["role"]
        if role == "tool":
            at, size = _find(prompt, _variants(message["content"]), cursor)
            if at < 0:
                problems.append(
                    f"result {message['content']} of {message['tool_call_id']} missing after {cursor}"
                )
                continue
            name = pending.pop(0) if pending else None
            name_at = prompt.find(name, name_cursor, at) if name is not None else -1
            if name_at >= 0:
                shown += 1
                name_cursor = name_at + len(name or "")
            elif names:
                problems.append(f"call {name} ({message['tool_call_id']}) missing before its result at {at}")
            cursor = at + size
            continue
        name_cursor = cursor  # a template may put the calls before or after the prose of their message
        text = message.get("content")
        shown_text = text.strip() if role != "system" and isinstance(text, str) else ""
        if shown_text and (role == "user" or shown_text in baseline):
            at = prompt.find(shown_text, cursor)
            if at < 0:
                problems.append(f"{role} text {shown_text[:40]!r} missing after {cursor}")
            else:
                cursor = at + len(shown_text)
        pending = [call["function"]["name"] for call in message.get("tool_calls", ())]
    return problems, shown


def tools_for(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool definitions a request declares: placeholders for every replayed name."""
    return openai_chat.placeholder_tools(request, ())


# -- the test --------------------------------------------------------------------------------------------


def _outcome(
    tpl: Template, server: str, messages: Sequence[Message], tools: list[dict[str, Any]]
) -> str | Exception:
    try:
        return render(tpl, server, messages, tools)
    except Exception as error:  # a template's raise_exception, or a TypeError/UndefinedError inside it
        return error


def check_template(name: str, *, model: str | None) -> list[str]:
    """Every failure of our history in template ``name`` (both servers, every shape)."""
    tpl = template(name)
    failures: list[str] = []
    for shape in SHAPES:
        request = openai_chat.to_request(history(shape), model=model)
        traces = [full_trace(shape, tpl.native_ids), full_trace(shape, tpl.native_ids, single=True)]
        tools = tools_for({"messages": traces[0]})
        for server in SERVERS:
            # The baseline: the full trace as the model made it, or as a model that cannot make parallel
            # calls would have made it (calls one by one); the first that renders.
            rendered = ((trace, _outcome(tpl, server, trace, tools)) for trace in traces)
            trace, baseline = next(((t, b) for t, b in rendered if isinstance(b, str)), (traces[0], ""))
            ours = _outcome(tpl, server, request["messages"], tools)
            where = f"{name} / {server} / {shape.name}"
            if isinstance(ours, Exception):
                if baseline:
                    failures.append(f"{where}: raises {type(ours).__name__}: {ours} (the full trace renders)")
                continue
            shows_calls = bool(baseline) and walk(baseline, trace, baseline, names=False)[1] > 0
            problems, _ = walk(ours, request["messages"], baseline, names=shows_calls)
            failures.extend(f"{where}: {problem}" for problem in problems)
    return failures


@pytest.mark.parametrize("name", [entry["name"] for entry in ENTRIES] or ["(absent)"])
def test_history_renders_in_every_template_with_every_call_in_order(name: str) -> None:
    if not ENTRIES:
        pytest.skip(f"chat templates not found at {CHAT_TEMPLATES} (the shared data folder is absent)")
    failures = check_template(name, model=template(name).model)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    "name", ["llama-3.1", "vllm-llama3.2-json", "gpt-oss", "vllm-phi4-mini", "mistral-nemo"]
)
def test_the_default_form_fails_where_the_family_needs_another(name: str) -> None:
    if not ENTRIES:
        pytest.skip(f"chat templates not found at {CHAT_TEMPLATES} (the shared data folder is absent)")
    assert check_template(name, model=None)


@pytest.mark.parametrize("server_name", SERVERS)
def test_a_running_turn_keeps_kimi_ids_so_each_result_header_names_its_call(
    server_name: str, server: FakeProviderServer
) -> None:
    """Kimi K2's template writes each call's header as ``functions.<name>:<n>`` and each result's
    header from its ``tool_call_id``: the ids of a running turn's calls, as the model made them, must
    reach the next request unchanged for the two to agree."""
    if not ENTRIES:
        pytest.skip(f"chat templates not found at {CHAT_TEMPLATES} (the shared data folder is absent)")
    kimi = template("kimi-k2")
    ids = ["functions.lookup:0", "functions.lookup:1"]
    server.push(
        Reply(
            tool_calls=[ToolCall("lookup", {"query": str(n)}, id=call_id) for n, call_id in enumerate(ids)]
        ),
        Reply(text="Found."),
    )
    client = open_client(
        "openai_chat", model=kimi.model, base_url=server.base_url("openai_chat"), api_key="test-key"
    )
    lookup = ToolSpec("lookup", "Look something up.", {"type": "object", "properties": {}})
    events = list(
        client.run_turn([], "Find it", tools=[lookup], execute=lambda *_: ToolResult(output="found"))
    )
    assert events[-1].kind == "done"
    body = server.requests[-1].body
    prompt = render(kimi, server_name, body["messages"], body["tools"])
    for call_id in ids:
        assert f"<|tool_call_begin|>{call_id}<|tool_call_argument_begin|>" in prompt
        assert f"## Return of {call_id}" in prompt
