"""Text bounds and secret redaction shared by recording (retention) and loading (memory).

Every string that enters a TurnMemory passes through :func:`bound_text`, whether it comes from a
finished tool call or from a persisted record, so a hostile session file cannot smuggle a secret or a
bulky value into a provider request.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["MAX_FIELD_BYTES", "REDACTED", "bound_text", "cut_utf8", "is_unicode", "redact"]

MAX_FIELD_BYTES = 256
"""The largest UTF-8 size of any retained string field."""

REDACTED = "[REDACTED]"
"""What a secret is replaced with inside a retained string."""

_ELLIPSIS = "..."
_SCAN_CHARS = 65536  # longer inputs are cut before redaction: only the first 256 bytes can survive anyway

# Each entry: (pattern, replacement). Replacements keep the non-secret context (a header name,
# a variable name, a flag) so that the target stays useful; only the secret value goes.
_SECRET_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM private keys, whole block (whitespace already collapsed or not).
    (
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)", re.S
        ),
        REDACTED,
    ),
    # Authorization / Proxy-Authorization headers, with or without a scheme word.
    (
        re.compile(
            r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*)(?:(?:bearer|basic|token|digest)\s+)?[^\s'\",;]+"
        ),
        r"\1" + REDACTED,
    ),
    # Other credential-bearing headers: X-Api-Key, Api-Key, X-Auth-Token, Cookie.
    (
        re.compile(r"(?i)\b((?:x-)?(?:api[-_]?key|auth[-_]?token|access[-_]?token)\s*:\s*)[^\s'\",;]+"),
        r"\1" + REDACTED,
    ),
    (re.compile(r"(?i)\b((?:set-)?cookie\s*:\s*)[^'\"]+"), r"\1" + REDACTED),
    # A bare bearer token.
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + REDACTED),
    # Credentials inside URLs: scheme://user:pass@host.
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@:'\"]*:[^\s/@'\"]*@"), r"\1" + REDACTED + "@"),
    # NAME_KEY=value, NAME_TOKEN=value, NAME_SECRET=value, PASSWORD=value (env assignments, dotenv).
    (
        re.compile(
            r"(?i)\b([A-Z0-9_]*(?:_KEY|_TOKEN|_SECRET|SECRET_KEY|PASSWORD|PASSWD|PASSPHRASE|_PAT|API_?KEY|ACCESS_?KEY)"
            r"[A-Z0-9_]*\s*=\s*)(\"[^\"]*\"|'[^']*'|[^\s'\";&|]+)"
        ),
        r"\1" + REDACTED,
    ),
    # --password=x, --token x, --api-key=x, --secret x, --client-secret=x, -p'...' is too ambiguous.
    (
        re.compile(
            r"(?i)(--?(?:password|passwd|pass|token|api[-_]?key|secret|client[-_]secret|auth[-_]?token|access[-_]?key)"
            r"(?:=|\s+))(\"[^\"]*\"|'[^']*'|[^\s'\"]+)"
        ),
        r"\1" + REDACTED,
    ),
    # key: value / "key": "value" pairs in JSON or YAML-ish text.
    (
        re.compile(
            r"(?i)([\"']?(?:password|passwd|secret|api[-_]?key|access[-_]?token|refresh[-_]?token|client[-_]secret)"
            r"[\"']?\s*:\s*)(\"[^\"]*\"|'[^']*'|[^\s,}]+)"
        ),
        r"\1" + REDACTED,
    ),
    # token=..., key=..., sig=... in query strings inside commands.
    (
        re.compile(
            r"(?i)([?&](?:access_token|token|api_key|apikey|key|sig|signature|password|secret|auth)=)[^&\s'\"#]+"
        ),
        r"\1" + REDACTED,
    ),
    # Vendor token shapes.
    (re.compile(r"\bsk-ant-[A-Za-z0-9_-]{10,}"), REDACTED),  # Anthropic
    (re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}"), REDACTED),  # OpenAI
    (re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}"), REDACTED),  # Stripe
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),  # GitHub
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), REDACTED),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{16,}"), REDACTED),  # GitLab
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"), REDACTED),  # AWS key ids
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), REDACTED),  # Slack
    (re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"), REDACTED),  # Google API keys
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), REDACTED),  # Hugging Face
    (re.compile(r"\bnpm_[A-Za-z0-9]{30,}"), REDACTED),  # npm
    (re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"), REDACTED),  # SendGrid
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"), REDACTED),  # JWT
)

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


# Every rule above needs one of these (lower-cased) literals to match. Substring tests are far cheaper
# than the rules, and most targets (paths, commands) hold none of them. Keep the two lists in step.
_SECRET_HINTS = (
    "key", "token", "secret", "pass", "auth", "bearer", "cookie", "sig", "_pat", "@",
    "sk-", "_live_", "_test_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
    "akia", "asia", "agpa", "aida", "aroa", "anpa", "xox", "aiza", "hf_", "npm_", "sg.", "eyj",
)  # fmt: skip


def is_unicode(text: str) -> bool:
    """Whether ``text`` encodes to UTF-8 (it holds no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def redact(text: str) -> str:
    """Replace every secret-shaped value inside ``text`` with ``[REDACTED]``, keeping the rest."""
    lowered = text.lower()
    if not any(hint in lowered for hint in _SECRET_HINTS):
        return text
    for pattern, replacement in _SECRET_RULES:
        text = pattern.sub(replacement, text)
    return text


def cut_utf8(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding is at most ``limit`` bytes."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


def bound_text(text: str, limit: int = MAX_FIELD_BYTES) -> str:
    """Make ``text`` fit a retained field: secrets redacted, whitespace collapsed, at most ``limit`` bytes.

    Control characters are dropped. Text longer than ``limit`` bytes is cut on a character boundary
    and ends in ``...``. The result may be empty.
    """
    if len(text) <= _CACHED_CHARS:
        return _bound_short(text, limit)
    return _bound(text, limit)


_CACHED_CHARS = 1024  # targets repeat (the same paths and commands), so short ones are memoized


@lru_cache(maxsize=8192)
def _bound_short(text: str, limit: int) -> str:
    return _bound(text, limit)


def _bound(text: str, limit: int) -> str:
    text = _CONTROL.sub("", text[:_SCAN_CHARS])
    text = " ".join(redact(text).split())
    if len(text.encode("utf-8")) <= limit:
        return text
    return cut_utf8(text, limit - len(_ELLIPSIS)) + _ELLIPSIS
