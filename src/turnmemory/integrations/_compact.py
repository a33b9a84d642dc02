"""TurnMemory for a provider-format message history: every completed turn becomes its compact replay.

A history is read turn by turn into the same event stream the transcript importers produce (prose,
reasoning, tool calls, tool results, loop iterations) and replayed through a :class:`TurnRecorder`;
the resulting messages are formatted by the provider's own formatter. User and system messages are
kept as they were given, and so is everything after the last user message (the turn in progress).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from turnmemory.integrations._read import (
    PROVIDERS,
    Provider,
    ResultParser,
    content_key,
    is_user_turn,
    read,
    text_block,
)
from turnmemory.memory import Message
from turnmemory.providers import anthropic, bedrock, gemini, openai_chat, openai_responses
from turnmemory.replay import ArgumentPolicy, IdStyle
from turnmemory.retention import DEFAULT_RULES, ToolRule
from turnmemory.segments import TurnRecorder
from turnmemory.transcripts import Event, replay_events, tool_outcome

__all__ = ["Compactor", "Provider", "ResultParser", "compact", "parse_result"]

Item = dict[str, Any]

_PLACEHOLDER = "\u2063"  # stands for a kept user message while the formatter lays out the request
_EXIT_STATUS = re.compile(r"(?:\A|\n)(?:Error: )?exit status (-?\d+)\s*\Z")
_ERROR_PREFIXES = ("Error:", "Error executing tool", "An error occurred while running the tool")
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code")


def parse_result(
    name: str,
    arguments: Mapping[str, Any],
    text: str,
    is_error: bool,
    *,
    rules: Mapping[str, ToolRule] = DEFAULT_RULES,
) -> tuple[Mapping[str, Any] | None, bool]:
    """The default :data:`ResultParser`: common conventions of tool results.

    A JSON object result is the tool's output mapping (``exit_code``/``returncode``, ``file_changed``;
    a non-empty ``error`` string, ``is_error: true`` or ``status: "error"`` marks a failure), which
    also reads TurnMemory's own replayed results back unchanged. A text result of a command
    states its exit code as ``Exit code: 1``, ``Process exited with code 1``, ``<returncode>1``,
    ``exit status 1``, ...; a text result starting with ``Error:`` is a failure. What the result means
    for the call follows the tool's rule, exactly as the transcript importers read logs: a command
    that states an exit code ran, a write or edit that did not fail changed its ``path`` argument.
    """
    rule = rules.get(name)
    kind = rule.outcome if rule is not None else "none"
    path = _path(rule, arguments)
    data = _json_object(text)
    if data is not None:
        failed = (
            is_error
            or data.get("is_error") is True
            or data.get("status") == "error"
            or _non_empty(data.get("error"))
        )
        metadata = data.get(
            "metadata"
        )  # Codex's `shell` results: {"output": ..., "metadata": {"exit_code": n}}
        found = [data, *([metadata] if isinstance(metadata, dict) else [])]
        code = next((part[key] for part in found for key in _EXIT_KEYS if _is_int(part.get(key))), None)
        if kind == "exit_code" and code is not None:
            return {**data, "exit_code": code}, False
        if kind == "file_change" and not failed and "file_changed" not in data:
            return ({**data, "file_changed": path} if path else data), False
        return (None, True) if failed else (data, False)
    is_error = is_error or text.lstrip().startswith(_ERROR_PREFIXES)
    status = _EXIT_STATUS.search(text[-256:])
    return tool_outcome(kind, path, text, is_error, int(status.group(1)) if status else None)


def _path(rule: ToolRule | None, arguments: Mapping[str, Any]) -> str | None:
    if rule is None or rule.outcome != "file_change" or rule.target is None:
        return None
    return rule.target(arguments, None)


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _non_empty(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _checked(messages: Sequence[Any], provider: str) -> list[Mapping[str, Any]]:
    if provider not in PROVIDERS:
        raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}; got {provider!r}")
    if isinstance(messages, str | bytes | Mapping):
        raise TypeError(f"messages: expected a list of {provider} messages, got {type(messages).__name__}")
    out = list(messages)
    for i, message in enumerate(out):
        if not isinstance(message, Mapping):
            raise TypeError(f"messages[{i}]: expected an object, got {type(message).__name__}")
    return out


class Compactor:
    """:func:`compact` for one conversation, incremental: each completed turn is read and rendered once.

    Keep one per conversation and call :meth:`compact` before every model call. While the history only
    grows, the request prefix it returns never changes (a prompt cache keeps hitting); a history that
    does not extend the previous one is compacted from scratch.
    """

    def __init__(
        self,
        provider: Provider = "openai_chat",
        *,
        rules: Mapping[str, ToolRule] = DEFAULT_RULES,
        result_parser: ResultParser | None = None,
        workspace: str | None = None,
        arguments: ArgumentPolicy = "empty",
        id_style: IdStyle | None = None,
        model: str | None = None,
    ) -> None:
        _checked((), provider)
        self.provider: Provider = provider
        self.rules = rules
        self.workspace = workspace
        self.arguments: ArgumentPolicy = arguments
        self.id_style = id_style
        self.model = model
        self._parse: ResultParser = (
            result_parser
            if result_parser is not None
            else lambda name, args, text, error: parse_result(name, args, text, error, rules=rules)
        )
        self._formatter = {
            "openai_chat": openai_chat.Formatter,
            "anthropic": anthropic.Formatter,
            "openai_responses": openai_responses.Formatter,
            "gemini": gemini.Formatter,
            "bedrock": bedrock.Formatter,
        }[provider]()
        self._read: list[Mapping[str, Any]] = []
        self._history: list[Message] = []
        self._kept: list[Any] = []

    def compact(self, messages: Sequence[Any]) -> list[Item]:
        """``messages`` with every turn before the last user message replaced by its TurnMemory replay."""
        given = _checked(messages, self.provider)
        last = next((i for i in range(len(given) - 1, -1, -1) if is_user_turn(self.provider, given[i])), None)
        if last is None:
            return [dict(message) for message in given]
        prefix = given[: last + 1]
        if len(prefix) < len(self._read) or any(
            a is not b and a != b for a, b in zip(self._read, prefix, strict=False)
        ):
            self._read, self._history, self._kept = [], [], []
        self._extend(prefix[len(self._read) :])
        self._read = prefix
        if isinstance(self._formatter, openai_chat.Formatter):
            request = self._formatter.to_request(
                self._history, arguments=self.arguments, id_style=self.id_style, model=self.model
            )
        else:
            request = self._formatter.to_request(
                self._history, arguments=self.arguments, id_style=self.id_style or "historical"
            )
        if self.provider in ("openai_chat", "openai_responses"):
            laid_out = _kept(request["messages" if self.provider == "openai_chat" else "input"], self._kept)
        else:
            items = request["contents" if self.provider == "gemini" else "messages"]
            laid_out = _turn_kept(self.provider, items, self._kept)
        return [*laid_out, *(dict(message) for message in given[last + 1 :])]

    def _extend(self, messages: list[Mapping[str, Any]]) -> None:
        parts = read(self.provider, messages, self._parse)
        for part in parts[:-1]:  # the last part is the (empty) turn after the last user message
            if part.kept is None:
                if part.events or (self._kept and is_user_turn(self.provider, self._kept[-1])):
                    self._history.append(self._replay(part.events))
                continue
            self._history.append(Message("user", _PLACEHOLDER))
            self._kept.append(part.kept)

    def _replay(self, events: Sequence[Event]) -> Message:
        recorder = TurnRecorder(workspace=self.workspace, rules=self.rules)
        replay_events(events, recorder)
        return recorder.finish()


def _kept(items: list[Item], kept: list[Any]) -> list[Item]:
    """Item formats: the k-th user item laid out by the formatter is the k-th kept message."""
    originals = iter(kept)
    return [dict(next(originals)) if item.get("role") == "user" else item for item in items]


def _turn_kept(provider: Provider, turns: list[Item], kept: list[Any]) -> list[Item]:
    """Turn-based formats: each placeholder text block of a user turn stands for the next kept message.

    The formatter merges adjacent user turns; here each kept message stays a message of its own, as
    given, except that the results answering the calls of the turn before it come first in it.
    """
    key, placeholder = content_key(provider), text_block(provider, _PLACEHOLDER)
    originals = iter(kept)
    out: list[Item] = []
    for turn in turns:
        if turn.get("role") != "user":
            out.append(turn)
            continue
        results: list[Any] = []
        for block in turn[key]:
            if block != placeholder:
                results.append(block)
                continue
            original = next(originals)
            if not results:
                out.append(dict(original))
                continue
            content = original.get(key)
            blocks = [text_block(provider, content)] if isinstance(content, str) else list(content)
            out.append({"role": "user", key: [*results, *blocks]})
            results = []
        if results:
            out.append({"role": "user", key: results})
    return out


def compact(
    messages: Sequence[Any],
    provider: Provider = "openai_chat",
    *,
    rules: Mapping[str, ToolRule] = DEFAULT_RULES,
    result_parser: ResultParser | None = None,
    workspace: str | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle | None = None,
    model: str | None = None,
) -> list[Item]:
    """``messages`` (an OpenAI Chat, Anthropic, OpenAI Responses, Gemini or Bedrock list) with TurnMemory applied.

    Every turn before the last user message is replaced by its TurnMemory replay in the same format:
    the prose in place, each tool call replayed with ``{}`` arguments (``arguments="target"``: its
    bounded target) and answered by its status and outcomes. User and system messages, and everything
    after the last user message (the turn in progress), are returned as given. Tool results that only
    answer calls (Anthropic ``tool_result`` blocks, ``tool`` messages) do not start a user turn.

    ``rules`` says what each tool keeps (:data:`~turnmemory.retention.DEFAULT_RULES` plus your own
    :class:`~turnmemory.retention.ToolRule`\\ s); ``result_parser`` reads outcomes from results (default
    :func:`parse_result`); ``workspace`` makes paths relative; ``id_style`` (``"historical"``, or
    ``"compact"`` 9-character ids) and, for OpenAI Chat, ``model`` (the served model: the form its chat
    template needs, as :func:`turnmemory.providers.openai_chat.to_request` applies it). The result is a pure function of the
    arguments: compacting it again changes nothing, and a longer history of the same conversation
    starts with the same messages. Keep a :class:`Compactor` per conversation to pay only for new turns.
    """
    return Compactor(
        provider,
        rules=rules,
        result_parser=result_parser,
        workspace=workspace,
        arguments=arguments,
        id_style=id_style,
        model=model,
    ).compact(messages)
