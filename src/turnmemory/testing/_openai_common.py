"""The error object both OpenAI APIs (Chat Completions and Responses) send."""

from __future__ import annotations

from typing import Any

from turnmemory.testing._script import Failure
from turnmemory.testing._wire import error_kind

__all__ = ["openai_error"]

_ERROR_TYPES = {429: "requests"}
_ERROR_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded"}


def openai_error(failure: Failure, context_message: str, context_param: str) -> dict[str, Any]:
    """``{message, type, param, code}``; a context overflow is ``context_length_exceeded``.

    A failure's ``kind`` is both the type and the code (as OpenAI sends ``insufficient_quota``).
    """
    if failure.context_overflow:
        return {
            "message": context_message,
            "type": "invalid_request_error",
            "param": context_param,
            "code": "context_length_exceeded",
        }
    kind = error_kind(failure, _ERROR_TYPES, "invalid_request_error", "server_error")
    code = failure.kind if failure.kind is not None else _ERROR_CODES.get(failure.status)
    return {"message": failure.message, "type": kind, "param": None, "code": code}
