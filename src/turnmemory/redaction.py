"""Secret redaction: one redactor for every string that is retained, persisted or replayed.

:func:`redact` replaces each secret inside a text with ``[REDACTED]`` and keeps everything around it,
so a retained command stays useful (``PGPASSWORD=[REDACTED] psql -h db``). It knows three kinds of
secret:

- **vendor shapes** with a distinctive prefix (``ghp_``, ``sk-ant-``, ``AKIA``, ``xoxb-``, Slack and
  Discord webhook paths, Telegram bot tokens, PEM private keys, JWTs...), found anywhere, even glued to
  a word (``key_AKIA...``, ``token%3Dghp_...``, a tool named ``get_sk-ant-...``);
- **credential positions**: the value after a credential-naming key in an assignment (``DB_PASS=``,
  ``"pass": "..."``, ``password: ...``, a line continuation), a flag (``--password X``,
  ``-passout pass:X``), a header (``Authorization: Bearer ...``), URL user-info, a query parameter, or
  a command's own credential argument (``curl -u user:pass``, ``mysql -pPASS``, ``sshpass -p``,
  ``docker login -p``, ``htpasswd -b``, ``aws configure set``, ``gh secret set --body``, ``.netrc``
  ``password X``). Strong names (password, secret, api key...) always lose their value; weak ones
  (key, token, auth...) only a value that passes the entropy test;
- **random-looking blobs**: a long base64 run with high entropy (a PEM body line, an AWS secret key).

Matching runs on a normalized view of the text (NFKC, format and control characters removed,
``%XX`` and backslash escapes decoded), so zero-width spaces, soft hyphens and fullwidth letters
inside a token do not hide it; the corresponding span of the original text is replaced. Redaction is
idempotent.

Add your own shapes with :func:`register`; they apply everywhere the built-in rules do::

    from turnmemory import redaction
    redaction.register(r"acme_[0-9a-f]{32}")                          # the whole match is a secret
    redaction.register(r"X-Acme-Session:\\s*(?P<secret>\\S+)", hints=["x-acme-session"])
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["REDACTED", "SecretRule", "entropy", "generation", "redact", "register", "rules"]

REDACTED = "[REDACTED]"
"""What a secret is replaced with."""

Check = Callable[[re.Match[str], str], bool]


@dataclass(frozen=True, slots=True)
class SecretRule:
    """One secret shape.

    Every match of ``pattern`` is redacted: its ``secret`` group when the pattern has one (quotes
    around the value are kept), else the whole match. ``hints`` are lower-case literals of which
    every match contains at least one; the rule is skipped when none occurs in the text (empty:
    the rule always runs). ``anchors``: characters of which every match contains one (another cheap
    skip). ``check`` (built-in rules) accepts or rejects a match given the text.
    """

    pattern: re.Pattern[str]
    hints: tuple[str, ...] = ()
    check: Check | None = None
    anchors: str = ""


# -- value tests ----------------------------------------------------------------------------------


def entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    if not value:
        return 0.0
    size = len(value)
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    return -sum(n / size * math.log2(n / size) for n in counts.values())


_REFERENCE = re.compile(r"\$(?:\{|\(|[A-Z_][A-Z0-9_]*$)|\{\{|%[A-Z_][A-Z0-9_]*%$")


def _is_placeholder(value: str) -> bool:
    """Not a secret: a reference (``$VAR``, ``${VAR}``, ``$(cmd)``, ``{{ x }}``), punctuation only, empty."""
    return value == REDACTED or not any(c.isalnum() for c in value) or bool(_REFERENCE.match(value))


def _random_like(value: str, min_length: int = 8) -> bool:
    """The entropy test for a value in a weak credential position: long, mixed, not a word or path."""
    if len(value) < min_length or _is_placeholder(value):
        return False
    if "/" in value or "\\" in value:  # a path, unless it is long and random (base64 has slashes)
        return len(value) >= 30 and entropy(value) >= 4.5 and value.count("/") * 12 <= len(value)
    digits = sum(c.isdigit() for c in value)
    letters = sum(c.isalpha() for c in value)
    if digits and letters:
        return entropy(value) >= 2.5
    return (
        letters > 0
        and any(c.isupper() for c in value[1:])
        and any(c.islower() for c in value)
        and (len(value) >= 16 and entropy(value) >= 3.5)
    )


def _blob(value: str) -> bool:
    """A random base64-looking run: mixed case and digits, few separators, high entropy."""
    separators = sum(value.count(c) for c in "/+_-")
    if separators * 10 > len(value) + 10:
        return False
    if "/" in value and any(
        len(part) >= 3 and part.isalpha() and part.islower() for part in value.split("/")
    ):
        return False  # a path: base64 almost never has a lower-case word between slashes
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value)):
        return False
    if sum(c.isdigit() for c in value) < 2:
        return False
    return entropy(value.rstrip("=")) >= 4.5


# -- credential names -----------------------------------------------------------------------------

_STRONG_PARTS = (
    "password", "passwd", "passphrase", "secret", "credential", "apikey", "api_key", "accesskey",
    "access_key", "privatekey", "private_key", "auth_token", "authtoken", "access_token",
    "refresh_token", "id_token", "session_token", "license_key", "client_secret", "authorization",
)  # fmt: skip
_PASS_WORDS = {"pass", "pwd", "pw", "pswd", "passwd", "pword"}
_NOT_PASS = {"bypass", "compass", "surpass", "trespass", "overpass", "underpass", "encompass", "subpass"}
_WEAK_LAST = {
    "key", "token", "auth", "pat", "license", "licence", "dsn", "sig", "signature", "credentials",
    "cookie", "jwt", "bearer", "authkey", "secretkey", "masterkey",
    "signingkey", "encryptionkey", "sessionkey", "clientkey",
}  # fmt: skip
_NOT_SECRET_LAST = {
    "stdin", "prompt", "cmd", "command", "helper", "manager", "reset", "required", "storage", "file",
    "files", "path", "paths", "dir", "name", "names", "id", "ids", "length", "len", "size", "type",
    "types", "count", "enabled", "disabled", "env", "var", "field", "fields", "url", "uri",
    "endpoint", "header", "prefix", "suffix", "format", "mode", "policy", "hint", "label", "min", "max",
    "timeout", "ttl", "expiry", "expires", "version", "algorithm", "alg", "kind", "store", "column",
}  # fmt: skip
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^a-z0-9]+")


@lru_cache(maxsize=4096)
def _strength(name: str) -> int:
    """2: the name always holds a secret; 1: it may (the value must pass the entropy test); 0: no."""
    words = [w for w in _SEPARATORS.split(_CAMEL.sub("_", name).lower()) if w]
    if not words:
        return 0
    last = words[-1]
    if last in _NOT_SECRET_LAST:
        return 0
    joined = "_".join(words)
    if any(part in joined or part in "".join(words) for part in _STRONG_PARTS):
        return 2
    if last in _PASS_WORDS or (last.endswith(("pass", "pwd", "password")) and last not in _NOT_PASS):
        return 2
    return 1 if last in _WEAK_LAST or last.endswith(("token", "secret")) else 0


# -- the rules ------------------------------------------------------------------------------------

# A value in a credential position: quoted or bare (the view has already unescaped ``\"``). A line
# continuation (``\`` then whitespace) may come first.
_VALUE = (
    r"(?:\\\s+)*(?P<secret>\[REDACTED\](?=[\s'\",;&|)}\]]|$)|\"[^\"]*\"|'[^']*'"
    r"|(?:[^\s'\"\\,;&|)}<>`]|\\[^\s\"'])+)"
)


def _value_of(match: re.Match[str]) -> str:
    return _unquoted(match.group("secret"))


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _named(match: re.Match[str], text: str) -> bool:
    """An assignment or flag whose name holds a secret (weak names: the value must look random)."""
    name = match.group("name")
    strength = _strength(name)
    if strength == 0:
        return False
    if name.lower() in _PASS_WORDS and ":" in match.group(0)[len(name) :] and not _quoted_name(match, text):
        return False  # prose (``tests should pass: ...``); a ``pass:`` key is quoted JSON, or ``pass=``
    value = _value_of(match)
    if value.lower() in _SCHEMES:
        return False  # ``Authorization: Bearer $TOKEN``: the header rule reads past the scheme
    if value.lower().startswith("pass:"):
        value = value[5:]
    elif re.match(r"(?i)(?:env|file|fd):|stdin$", value):
        return False
    if strength == 2:
        return not _is_placeholder(value)
    in_query = match.start() > 0 and text[match.start() - 1] in "?&;"
    return not _is_placeholder(value) if in_query else _random_like(value)


def _quoted_name(match: re.Match[str], text: str) -> bool:
    return match.start() > 0 and text[match.start() - 1] in "\"'"


_SCHEMES = {"bearer", "basic", "token", "digest", "negotiate", "ntlm", "apikey", "sso-key"}


def _always(match: re.Match[str], text: str) -> bool:
    return not _is_placeholder(_value_of(match))


def _random_value(match: re.Match[str], text: str) -> bool:
    return _random_like(_value_of(match))


def _netrc_or_random(match: re.Match[str], text: str) -> bool:
    """``password X``: always in a ``.netrc`` context, else only a random-looking value."""
    if "netrc" in text.lower():
        return not _is_placeholder(_value_of(match))
    return _random_like(_value_of(match))


def _blob_value(match: re.Match[str], text: str) -> bool:
    return _blob(match.group("secret"))


def _sk_value(match: re.Match[str], text: str) -> bool:
    value = match.group("secret")[3:]
    digits = sum(c.isdigit() for c in value)
    return digits >= 4 and digits < len(value) and entropy(value) >= 3.5


def _token_body(match: re.Match[str], text: str) -> bool:
    """Not a word: mixed case, or digits."""
    value = match.group("secret")[3:]
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return mixed or any(c.isdigit() for c in value)


def _htpasswd_batch(match: re.Match[str], text: str) -> bool:
    return "b" in match.group("flags") and not _is_placeholder(_value_of(match))


def _rule(
    pattern: str, hints: Iterable[str] = (), check: Check | None = None, anchors: str = ""
) -> SecretRule:
    return SecretRule(re.compile(pattern), tuple(hints), check, anchors)


_I = "(?i)"
_CMD_END = r"[^|;&\n]*?"  # the rest of one simple command

_KEYWORD_HINTS = (
    "pass", "pwd", "pw=", "pw:", "pswd", "secret", "token", "key", "auth", "cred", "licen", "dsn", "cookie",
    "jwt", "sig", "_pat", "-pat", "pat=", "pat:",
)  # fmt: skip

# Vendor token shapes, from the public rule lists of gitleaks, trufflehog and detect-secrets. No word
# boundary on the left, so a glued prefix (``key_AKIA...``, ``get_sk-ant-...``) does not hide them.
# Each starts with a literal character, so that the combined pattern skips other positions quickly.
_VENDOR_SHAPES = (
    r"sk-ant-[A-Za-z0-9_-]{10,}",  # Anthropic
    r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{16,}",  # OpenAI project and service keys
    r"sk_(?:live|test)_[A-Za-z0-9]{10,}",  # Stripe
    r"rk_(?:live|test)_[A-Za-z0-9]{10,}",
    r"pk_(?:live|test)_[A-Za-z0-9]{10,}",
    r"whsec_[A-Za-z0-9]{20,}",  # Stripe webhook secrets
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
    r"github_pat_[A-Za-z0-9_]{20,}",  # GitHub fine-grained
    r"gl(?:pat|dt|ptt|rt|soat|cbt|ffct|oas|agent|imt)-[A-Za-z0-9_-]{20,}",  # GitLab
    r"GR1348941[A-Za-z0-9_-]{20,}",  # GitLab runner registration
    *(  # AWS key ids
        f"{prefix}[A-Z0-9]{{16}}"
        for prefix in ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "AROA", "ANPA", "ANVA", "APKA")
    ),
    r"xox[abposre]-[A-Za-z0-9-]{10,}",  # Slack tokens
    r"xapp-[0-9]-[A-Za-z0-9-]{10,}",  # Slack app tokens
    r"AIza[0-9A-Za-z_-]{30,}",  # Google API keys
    r"GOCSPX-[A-Za-z0-9_-]{20,}",  # Google OAuth client secrets
    r"ya29\.[0-9A-Za-z_-]{20,}",  # Google OAuth access tokens
    r"npm_[A-Za-z0-9]{30,}",  # npm
    r"pypi-AgE[A-Za-z0-9_-]{30,}",  # PyPI
    r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",  # SendGrid
    r"NR(?:AK|II|JS|RA|AA|SP)-[A-Z0-9]{20,}",  # New Relic
    r"do[por]_v1_[a-f0-9]{40,}",  # DigitalOcean
    r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",  # Shopify
    r"ATATT3[A-Za-z0-9_=-]{30,}",  # Atlassian
    r"dapi[a-f0-9]{32}",  # Databricks
    r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{30,}",  # Doppler
    r"hv[sb]\.[A-Za-z0-9_-]{24,}",  # HashiCorp Vault
    r"lin_(?:api|oauth)_[A-Za-z0-9]{30,}",  # Linear
    r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}",  # Postman
    r"gl(?:c|sa)_[A-Za-z0-9+/_=]{32,}",  # Grafana
    r"sntr[ysu]s?_[A-Za-z0-9+/=_]{30,}",  # Sentry
    r"HRKU-[A-Za-z0-9_-]{30,}",  # Heroku
    r"sbp_[a-f0-9]{40}",  # Supabase
    r"AGE-SECRET-KEY-1[A-Z0-9]{50,}",  # age
    r"ops_eyJ[A-Za-z0-9+/=]{30,}",  # 1Password service accounts
    r"M[A-Za-z0-9]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}",  # Discord bot tokens
    r"N[A-Za-z0-9]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}",
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",  # JWT
)

_VENDOR = _rule("|".join(_VENDOR_SHAPES))
# A random-looking base64 run: a PEM body line, an AWS secret key, an unknown vendor's token.
_BLOB = _rule(
    r"(?<![A-Za-z0-9+/_-])(?P<secret>[A-Za-z0-9+/_-]{32,}={0,2})(?![A-Za-z0-9+/=_-])", (), _blob_value
)

_BUILTIN: tuple[SecretRule, ...] = (
    # PEM private keys, the whole block (or to the end when its END line is missing).
    _rule(
        r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|$)",
        ["private key"],
    ),
    # Authorization headers, with or without a scheme word; a bare bearer token.
    _rule(
        _I + r"\b(?:proxy-)?authorization\s*[:=]\s*(?:(?:bearer|basic|token|digest|negotiate|ntlm|apikey"
        r"|sso-key)\s+)?(?P<secret>[^\s'\",;]+)",
        ["authorization"],
        _always,
    ),
    _rule(_I + r"\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})", ["bearer"], _always),
    _rule(_I + r"\b(?:set-)?cookie\s*:\s*(?P<secret>[^'\"\n]+)", ["cookie"], _always),
    # Assignments and key/value pairs: NAME=value, NAME: value, "name": "value", NAME := value.
    _rule(
        r"(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]+)[\"']?\s*(?::=|=>|=|:)\s*(?=" + _VALUE + ")",
        _KEYWORD_HINTS,
        _named,
        anchors="=:",
    ),
    # Flags: --password X, --db-password=X, -storepass X, -passout pass:X.
    _rule(
        r"(?<![\w-])--?(?P<name>[A-Za-z0-9_.-]+)(?:=|\s+(?!-))(?=" + _VALUE + ")", _KEYWORD_HINTS, _named, "-"
    ),
    # URL user-info (also after a path normalizer made ``://`` into ``:/``).
    _rule(_I + r"\b[a-z][a-z0-9+.-]*:/{1,3}(?P<secret>[^\s/@:'\"]*:[^\s/@'\"]*)@", ["@"]),
    _rule(_I + r"\b[a-z][a-z0-9+.-]*:/{1,3}(?P<secret>[^\s/@:'\"]{16,})@", ["@"], _random_value),
    # Credentials as command arguments.
    _rule(
        _I
        + r"\b(?:curl|wget|xh|https?|lftp|ftp)\b"
        + _CMD_END
        + r"\s(?:-u|-U|--user|--proxy-user|--http-user)(?:=|\s*)['\"]?[^\s:'\"]*:(?P<secret>[^\s'\"]+)",
        ["curl", "wget", "xh", "http", "ftp"],
        _always,
    ),
    _rule(
        _I
        + r"\b(?:mysql\w*|mariadb\w*)\b"
        + _CMD_END
        + r"\s-p(?P<secret>'[^']*'|\"[^\"]*\"|[^\s'\"-][^\s'\"]*)",
        ["mysql", "mariadb"],
        _always,
    ),
    _rule(_I + r"\bsshpass\b" + _CMD_END + r"\s-p\s*" + _VALUE, ["sshpass"], _always),
    _rule(_I + r"\blogin\b" + _CMD_END + r"\s(?:-p|--password)(?:=|\s+)" + _VALUE, ["login"], _always),
    _rule(
        _I + r"\bhtpasswd(?P<flags>(?:\s+-[A-Za-z]+)*)\s+\S+\s+\S+\s+" + _VALUE, ["htpasswd"], _htpasswd_batch
    ),
    _rule(_I + r"\bsecrets?\s+set\b" + _CMD_END + r"\s(?:--body|-b)(?:=|\s*)" + _VALUE, ["secret"], _always),
    _rule(
        _I + r"\b(?:configure\s+set|config(?::|\s+)set|config:add|secrets?\s+set|set-secret|set-env)"
        r"(?:\s+--?\S+)*\s+(?P<name>[A-Za-z0-9_.-]+)(?:\s+|=)" + _VALUE,
        ["config", "secret", "set-env"],
        _named,
    ),
    _rule(_I + r"(?<![\w-])-pass(?:in|out|word)?\s+pass:" + _VALUE, ["pass:"], _always),
    # .netrc and prose-like forms: ``login bob password X``, ``password X`` with a random value.
    _rule(_I + r"\b(?:login|machine|account)\s+\S+\s+(?:password|passwd)\s+" + _VALUE, ["pass"], _always),
    _rule(_I + r"(?<![\w-])(?:password|passwd|passphrase)\s+" + _VALUE, ["pass"], _netrc_or_random),
    # NAME value where NAME is an upper-case credential variable and the value looks random.
    _rule(
        r"\b(?P<name>[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\s+" + _VALUE,
        ["pass", "pwd", "secret", "token", "key", "auth", "cred", "licen"],
        lambda match, text: _strength(match.group("name")) > 0 and _random_like(_value_of(match)),
    ),
    # Secret-bearing URL paths.
    _rule(
        _I + r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9+/_-]{8,})",
        ["hooks.slack"],
    ),
    _rule(_I + r"discord(?:app)?\.com/api/webhooks/(?P<secret>[0-9]+/[A-Za-z0-9_-]+)", ["discord"]),
    _rule(_I + r"webhook\.office\.com/webhookb2/(?P<secret>[^\s'\"?#]+)", ["webhook.office"]),
    _rule(_I + r"hooks\.zapier\.com/hooks/catch/(?P<secret>[^\s'\"?#]+)", ["zapier"]),
    _rule(r"(?P<secret>[0-9]{5,16}:A[A-Za-z0-9_-]{33,})", [":a"]),  # Telegram bot tokens
    # Vendor token shapes (``_VENDOR_SHAPES`` in one pattern), and those that need a test of the value.
    _VENDOR,
    _rule(r"(?P<secret>sk-[A-Za-z0-9]{32,})", ["sk-"], _sk_value),  # OpenAI legacy, DeepSeek and alike
    _rule(r"(?P<secret>hf_[A-Za-z0-9]{30,})", ["hf_"], _token_body),  # Hugging Face
    _rule(r"(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![0-9a-fA-F])", ["sk"]),  # Twilio API keys
    _rule(r"(?<![A-Za-z0-9])key-[0-9a-f]{32}", ["key-"]),  # Mailgun
    _rule(r"[a-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{40,}", ["atlasv1"]),  # Terraform Cloud
    _BLOB,
)

_active: tuple[SecretRule, ...] = _BUILTIN


_hints: tuple[str, ...] = tuple(sorted({hint for rule in _BUILTIN for hint in rule.hints}))
_generation = 0


def register(pattern: str | re.Pattern[str] | SecretRule, *, hints: Iterable[str] = ()) -> SecretRule:
    """Add a secret shape to the redactor everywhere (retention, loading, the session store).

    ``pattern``: a regular expression; its ``secret`` group (or the whole match) is redacted.
    ``hints``: lower-case literals of which every match contains one, to skip the rule cheaply on
    texts without them (none: the rule runs on every text). Returns the rule.
    """
    global _active, _hints, _generation
    if isinstance(pattern, SecretRule):
        rule = pattern
    else:
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        rule = SecretRule(compiled, tuple(hint.lower() for hint in hints))
    _active = (*_active, rule)
    _hints = tuple(sorted({hint for known in _active for hint in known.hints}))
    _generation += 1
    _redact_short.cache_clear()
    return rule


def rules() -> tuple[SecretRule, ...]:
    """Every rule in force: the built-in ones, then the registered ones."""
    return _active


def generation() -> int:
    """A number that changes whenever a rule is registered (for callers that memoize redacted text)."""
    return _generation


# -- the normalized view --------------------------------------------------------------------------

_SPECIAL = re.compile(r"[^\t\n\r\x20-\x7e]|%[0-9A-Fa-f]{2}|\\+(?:[nrt\"']|u[0-9A-Fa-f]{4})")


def _fold(char: str) -> str:
    """One character as the rules see it: format, control and combining characters vanish; NFKC."""
    if " " <= char <= "~":
        return char
    if unicodedata.category(char) in ("Cf", "Cc", "Mn", "Me"):
        return ""
    return unicodedata.normalize("NFKC", char)


def _unescape(token: str) -> str:
    """A backslash escape of JSON or shell text: a line break or tab reads as a space, an escaped
    quote as the quote (at any depth of escaping), ``\\uXXXX`` as its character."""
    escaped = token.lstrip("\\")
    if escaped[0] == "u":
        return _fold(chr(int(escaped[1:], 16)))
    return escaped if escaped in ("'", '"') else " "


def _view(text: str) -> tuple[str, list[int] | None, list[int] | None]:
    """``text`` as the rules see it, with each view character's start and end in ``text``.

    ``None`` maps mean the view is ``text`` itself.
    """
    if (text.isascii() and text.isprintable() and "%" not in text and "\\" not in text) or (
        _SPECIAL.search(text) is None
    ):
        return text, None, None
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    cursor = 0
    for match in _SPECIAL.finditer(text):
        start, end = match.span()
        if start > cursor:
            parts.append(text[cursor:start])
            starts.extend(range(cursor, start))
            ends.extend(range(cursor + 1, start + 1))
        cursor = end
        token = match.group()
        if token[0] == "\\":
            replacement = _unescape(token)
        elif token[0] == "%":
            replacement = _fold(chr(int(token[1:], 16)))
        else:
            replacement = _fold(token)
        parts.append(replacement)
        starts.extend([start] * len(replacement))
        ends.extend([end] * len(replacement))
    if cursor < len(text):
        parts.append(text[cursor:])
        starts.extend(range(cursor, len(text)))
        ends.extend(range(cursor + 1, len(text) + 1))
    return "".join(parts), starts, ends


# -- redaction ------------------------------------------------------------------------------------

# Every vendor shape and every blob holds a run this long of these characters: the cheap pre-check
# of the two rules without hints.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_.+/=-]{15}")


def _spans(view: str) -> list[tuple[int, int]]:
    lowered = view.lower()
    present = {hint for hint in _hints if hint in lowered}
    tokens_possible = _TOKEN_RUN.search(view) is not None
    found: list[tuple[int, int]] = []
    for rule in _active:
        if rule.hints:
            if present.isdisjoint(rule.hints):
                continue
        elif (rule is _VENDOR or rule is _BLOB) and not tokens_possible:
            continue
        if rule.anchors and not any(anchor in view for anchor in rule.anchors):
            continue
        for match in rule.pattern.finditer(view):
            if rule.check is not None and not rule.check(match, view):
                continue
            if "secret" in rule.pattern.groupindex and match.group("secret") is not None:
                start, end = match.span("secret")
                value = match.group("secret")
                inner = _unquoted(value)
                if inner != value:
                    offset = value.index(inner)
                    start, end = start + offset, start + offset + len(inner)
            else:
                start, end = match.span()
            found.extend(_around_markers(view, start, end))
    return found


def _around_markers(view: str, start: int, end: int) -> list[tuple[int, int]]:
    """The parts of ``view[start:end]`` outside earlier ``[REDACTED]`` markers (never redacted twice)."""
    parts: list[tuple[int, int]] = []
    cursor = start
    while cursor < end:
        marker = view.find(REDACTED, cursor, end)
        stop = end if marker < 0 else marker
        if stop > cursor:
            parts.append((cursor, stop))
        if marker < 0:
            break
        cursor = marker + len(REDACTED)
    return parts


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


_PASSES = 6


def _redact(text: str) -> str:
    # A replacement can change what a rule sees around it (a value now holds a marker), so passes
    # repeat until nothing changes; each pass that changes the text removes characters that are not
    # markers, so this settles, and the result is idempotent.
    for _ in range(_PASSES):
        redacted = _redact_once(text)
        if redacted == text:
            return text
        text = redacted
    return REDACTED


def _redact_once(text: str) -> str:
    view, starts, ends = _view(text)
    spans = _spans(view)
    if not spans:
        return text
    if starts is not None and ends is not None:
        spans = [(starts[s], ends[e - 1]) for s, e in spans]
    out: list[str] = []
    cursor = 0
    for start, end in _merge(spans):
        out.append(text[cursor:start])
        out.append(REDACTED)
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


_CACHED_CHARS = 1024  # targets repeat (the same paths and commands), so short ones are memoized


@lru_cache(maxsize=8192)
def _redact_short(text: str) -> str:
    return _redact(text)


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED]`` and the rest kept; idempotent."""
    if len(text) <= _CACHED_CHARS:
        return _redact_short(text)
    return _redact(text)
