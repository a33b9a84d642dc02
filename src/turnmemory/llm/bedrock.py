"""AWS Bedrock Converse over ``boto3`` (``converse_stream``).

In-turn assistant messages keep their blocks in stream order: reasoning text with its signature (or
redacted reasoning), text and tool use. A ``toolConfig`` is sent whenever tools are offered or the
request holds tool blocks (Converse demands it then), never with an empty tool list. Credentials come
from the AWS chain (environment, profile, role), or from a ready ``boto3`` client passed as
``client=``; ``base_url`` is the endpoint URL.
"""

from __future__ import annotations

import base64
from collections.abc import Generator, Mapping
from typing import Any

from turnmemory.llm._retry import MalformedError, RequestFailure, connection_failure, http_failure
from turnmemory.llm._sdk import (
    CallIds,
    Completion,
    Endpoint,
    Query,
    Sdk,
    Settings,
    StreamInterrupted,
    given,
)
from turnmemory.llm._stream import Arguments
from turnmemory.llm.events import Event, Usage
from turnmemory.providers import bedrock
from turnmemory.providers._render import Item, tool_name
from turnmemory.providers._tools import Call, parse_arguments

__all__ = ["BedrockSdk"]


class BedrockSdk(Sdk):
    """Converse through ``boto3`` (``converse_stream``)."""

    wire = bedrock
    max_tokens_stops = frozenset({"max_tokens", "model_context_window_exceeded"})

    def __init__(self, settings: Settings, endpoint: Endpoint) -> None:
        import boto3
        import botocore.exceptions
        import urllib3
        from botocore.config import Config

        if endpoint.api_key is not None:
            raise ValueError(
                "api_key: Bedrock reads AWS credentials from their usual chain; pass a boto3 client as client="
            )
        self._exceptions = botocore.exceptions
        self._connection_errors: tuple[type[BaseException], ...] = (
            botocore.exceptions.HTTPClientError,
            botocore.exceptions.ConnectionError,
            urllib3.exceptions.HTTPError,
        )
        if endpoint.client is not None:
            self._client = endpoint.client
        else:
            options: dict[str, Any] = {
                "retries": {"total_max_attempts": 1, "mode": "standard"},
                "read_timeout": endpoint.timeout,
                "connect_timeout": endpoint.connect_timeout,
                # boto3 would walk every request against the service model before sending it, a third
                # of a long turn's time; Bedrock checks the request itself (a 400 is classified as usual).
                "parameter_validation": False,
            }
            self._client = boto3.client(
                "bedrock-runtime",
                endpoint_url=endpoint.base_url,
                region_name=endpoint.region,
                config=Config(**options),
            )
        self.settings = settings

    def stream(self, query: Query) -> Generator[Event | Completion, None, None]:
        blocks: dict[int, Item] = {}
        inputs: dict[int, Arguments] = {}
        ids = CallIds(query.taken_ids, bedrock.is_call_id)
        stop: str | None = None
        usage = Usage()
        response = self._client.converse_stream(**self._kwargs(query))
        stream = response["stream"]
        try:
            for event in stream:
                if "contentBlockStart" in event:
                    start = event["contentBlockStart"]
                    use = start.get("start", {}).get("toolUse")
                    if use is not None:
                        blocks[start["contentBlockIndex"]] = {
                            "toolUse": {
                                "toolUseId": ids.conform(use["toolUseId"]),
                                "name": tool_name(use["name"]),
                            }
                        }
                elif "contentBlockDelta" in event:
                    delta = event["contentBlockDelta"]
                    yield from _delta(
                        blocks, inputs, delta["contentBlockIndex"], delta["delta"], query.max_argument_bytes
                    )
                elif "messageStop" in event:
                    stop = event["messageStop"].get("stopReason") or "end_turn"
                elif "metadata" in event:
                    usage = _usage(event["metadata"].get("usage") or {})
        finally:
            stream.close()
        if stop is None:
            raise StreamInterrupted("the response stream ended before messageStop")
        content, calls = _finish(blocks, inputs)
        text = "".join(block["text"] for block in content if "text" in block)
        yield Completion(
            items=({"role": "assistant", "content": content},) if text or calls else (),
            calls=calls,
            text=text,
            usage=usage,
            stop=self.reason(stop),
        )

    def failure(self, error: Exception) -> RequestFailure | None:
        exceptions = self._exceptions
        if isinstance(error, self._connection_errors):
            return connection_failure(error)
        if isinstance(error, exceptions.ClientError):
            details = error.response.get("Error", {})
            metadata = error.response.get("ResponseMetadata", {})
            status = (
                None if isinstance(error, exceptions.EventStreamError) else metadata.get("HTTPStatusCode")
            )
            return http_failure(
                status,
                details.get("Message") or "",
                kind=details.get("Code"),
                headers=metadata.get("HTTPHeaders"),
            )
        return None

    def _kwargs(self, query: Query) -> dict[str, Any]:
        settings, request = self.settings, query.body
        messages = [_with_image_bytes(message) for message in request["messages"]]
        kwargs: dict[str, Any] = {"modelId": settings.model, "messages": messages}
        if request.get("system"):
            kwargs["system"] = request["system"]
        if query.tools:
            kwargs["toolConfig"] = {
                "tools": [
                    {"toolSpec": spec.definition("inputSchema", {"json": spec.schema()})}
                    for spec in query.tools
                ]
            }
        inference = given(maxTokens=settings.max_tokens, temperature=settings.temperature)
        if inference:
            kwargs["inferenceConfig"] = inference
        if settings.thinking is not None:
            kwargs["additionalModelRequestFields"] = {
                "thinking": {"type": "enabled", "budget_tokens": settings.thinking}
            }
        return kwargs


def _with_image_bytes(message: Item) -> Item:
    """``message`` with the base64 of its image blocks as the bytes boto3 takes (it encodes them again
    for the JSON body: a string would be encoded twice)."""
    content = message.get("content")
    if not isinstance(content, list) or not any("image" in block for block in content):
        return message
    return {**message, "content": [_image_bytes(block) for block in content]}


def _image_bytes(block: Item) -> Item:
    image = block.get("image")
    if not isinstance(image, Mapping) or not isinstance(image.get("source", {}).get("bytes"), str):
        return block
    raw = base64.b64decode(image["source"]["bytes"])
    return {"image": {**image, "source": {**image["source"], "bytes": raw}}}


def _delta(
    blocks: dict[int, Item], inputs: dict[int, Arguments], index: int, delta: Mapping[str, Any], cap: int
) -> Generator[Event, None, None]:
    """Fold one content delta into its block, yielding the text or reasoning it streams. Text streams
    into a list of pieces that :func:`_finish` joins once."""
    if "text" in delta:
        block = blocks.setdefault(index, {"text": []})
        block["text"].append(delta["text"])
        if delta["text"]:
            yield Event("text", text=delta["text"])
    elif "toolUse" in delta:
        if "toolUse" not in blocks.get(index, {}):
            raise MalformedError("tool input for a block that was never started")
        inputs.setdefault(index, Arguments(cap)).add(delta["toolUse"].get("input", ""))
    elif "reasoningContent" in delta:
        reasoning = delta["reasoningContent"]
        block = blocks.setdefault(index, {"reasoningContent": {}})["reasoningContent"]
        if "redactedContent" in reasoning:
            block["redactedContent"] = block.get("redactedContent", b"") + reasoning["redactedContent"]
        else:
            text = block.setdefault("reasoningText", {"text": []})
            if "text" in reasoning:
                text["text"].append(reasoning["text"])
                if reasoning["text"]:
                    yield Event("reasoning", text=reasoning["text"])
            if "signature" in reasoning:
                text["signature"] = text.get("signature", "") + reasoning["signature"]


def _finish(blocks: dict[int, Item], inputs: dict[int, Arguments]) -> tuple[list[Item], tuple[Call, ...]]:
    """The assistant content in stream order (blank text left out) and its tool calls (arguments too
    large to keep, or not an object, as ``{}``)."""
    content: list[Item] = []
    calls: list[Call] = []
    for index in sorted(blocks):
        block = blocks[index]
        if "text" in block:
            block["text"] = "".join(block["text"])
            if block["text"].strip():
                content.append(block)
        elif "toolUse" in block:
            streamed = inputs.get(index)
            dropped = streamed.size if streamed is not None and streamed.dropped else 0
            raw = streamed.text() if streamed is not None else ""
            arguments = None if dropped else parse_arguments(raw)
            use = block["toolUse"]
            use["input"] = arguments if arguments is not None else {}
            content.append(block)
            calls.append(
                Call(
                    id=use["toolUseId"],
                    name=use["name"],
                    arguments=arguments,
                    raw_arguments=raw,
                    dropped_bytes=dropped,
                )
            )
        elif block.get("reasoningContent"):
            text = block["reasoningContent"].get("reasoningText")
            if text is not None:
                text["text"] = "".join(text["text"])
            content.append(block)
    return content, tuple(calls)


def _usage(usage: Mapping[str, Any]) -> Usage:
    cached = usage.get("cacheReadInputTokens") or 0
    written = usage.get("cacheWriteInputTokens") or 0
    total = (usage.get("inputTokens") or 0) + cached + written
    return Usage(
        input_tokens=total,
        output_tokens=usage.get("outputTokens") or 0,
        cached_tokens=cached,
        cache_write_tokens=written,
    )
