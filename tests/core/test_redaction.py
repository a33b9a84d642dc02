"""The redactor against the secrets corpus, through every tool's retention rule, a JSON round trip and
every provider's request; the false-positive list; windowing; registered rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.provider_errors import ERROR_BODIES
from tests.secrets_corpus import CLASSES, CORPUS, Shape, visible

import turnmemory as tm
from turnmemory import redaction
from turnmemory._text import bound_text, redact_prefix
from turnmemory.providers import PROVIDERS, anthropic, bedrock, check, gemini, openai_chat, openai_responses
from turnmemory.redaction import REDACTED, redact
from turnmemory.retention import DEFAULT_RULES, MCP_TOOL, retain

WS = "/home/dev/repo"
MODULES = {
    "anthropic": anthropic,
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "gemini": gemini,
    "bedrock": bedrock,
}


def leaks(shape: Shape, text: str) -> list[str]:
    """The secret forms of ``shape`` found in ``text`` (as written or as a reader sees it)."""
    seen = visible(text)
    return [secret for secret in shape.secrets if secret in text or visible(secret) in seen]


def test_the_corpus_covers_every_class_with_several_shapes() -> None:
    assert len(CORPUS) >= 80
    assert set(CLASSES) == {
        "argument",
        "assignment",
        "glued",
        "evasion",
        "order",
        "url path",
        "multi-line",
        "preview",
    }
    for kind in CLASSES:
        assert sum(shape.kind == kind for shape in CORPUS) >= 5, kind


def _calls(text: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``text`` in every argument every default rule reads, and in every outcome it keeps."""
    calls = [
        ("read_file", {"path": text}, {}),
        ("read_file", {"path": f"{WS}/{text}"}, {}),
        ("write_file", {"path": text, "content": "x"}, {"file_changed": text}),
        ("edit_file", {"path": f"{WS}/{text}"}, {"file_changed": f"{WS}/{text}"}),
        ("glob", {"pattern": text, "path": text}, {}),
        ("grep", {"pattern": text}, {}),
        ("grep", {"pattern": "x", "path": f"{WS}/{text}"}, {}),
        ("bash", {"command": text}, {"exit_code": 3}),
        ("bash", {"command": ["sh", "-c", text]}, {"exit_code": 3, "failed_command": text}),
        ("web_fetch", {"url": text}, {}),
        ("web_fetch", {"url": f"https://example.com/{text}"}, {}),
        ("delegate_task", {"agent": text}, {}),
        ("delegate_task", {"tasks": [{"agent": text}, {"agent": "b"}]}, {}),
        (MCP_TOOL, {"server": text, "tool": text}, {}),
        (MCP_TOOL, {"server": "s", "tool": f"mcp:s/{text}"}, {"server": text}),
        (text, {}, {}),
    ]
    assert {name for name, _, _ in calls} >= set(DEFAULT_RULES)
    return calls


def _activities(text: str) -> list[tm.ToolActivity]:
    return [retain(0, name, args, output=output, workspace=WS) for name, args, output in _calls(text)]


@pytest.mark.parametrize("shape", CORPUS, ids=[shape.name for shape in CORPUS])
def test_no_secret_survives_retention_a_round_trip_or_any_request(shape: Shape) -> None:
    activities = _activities(shape.text)
    stored = json.dumps([activity.to_dict() for activity in activities], ensure_ascii=False)
    assert not leaks(shape, stored)
    message = tm.Message("assistant", "Done.", tm.TurnMemory(tuple(activities)))
    reloaded = tm.Message.from_dict(json.loads(json.dumps(message.to_dict())))
    assert reloaded == message, "what was retained reloads unchanged"
    history = [tm.Message("user", "go"), message, tm.Message("user", "next")]
    for provider in PROVIDERS:
        for policy in ("empty", "target"):
            request = MODULES[provider].to_request(history, arguments=policy)
            assert not leaks(shape, json.dumps(request, ensure_ascii=False)), (provider, policy)
            assert check.check_request(provider, request) == [], (provider, policy)


@pytest.mark.parametrize("shape", CORPUS, ids=[shape.name for shape in CORPUS])
def test_a_hostile_record_is_redacted_on_load(shape: Shape) -> None:
    fields = {"target": shape.text, "server": shape.text, "file_changed": shape.text}
    record = {"text_offset": 0, "tool": shape.text, **fields, "failed_command": shape.text, "exit_code": 1}
    message = tm.Message.from_dict(
        {"role": "assistant", "content": "", "turn_memory": {"tool_activity": [record]}}
    )
    assert not leaks(shape, json.dumps(message.to_dict(), ensure_ascii=False))


@pytest.mark.parametrize("shape", CORPUS, ids=[shape.name for shape in CORPUS])
def test_redaction_keeps_no_secret_and_is_idempotent(shape: Shape) -> None:
    once = redact(shape.text)
    assert not leaks(shape, once)
    assert REDACTED in once
    assert redact(once) == once
    assert not leaks(shape, redact_prefix(shape.text, 600))


ORDINARY = [
    "src/keyboard.py",
    "tokenizer.py",
    "src/auth/login_view.tsx",
    "packages/secret-santa/README.md",
    "tests/test_password_reset.py",
    "git log --author",
    "git log --author=alice --since=2.weeks",
    "npm run test:auth",
    "npm run build:token-list",
    "pytest -k test_token_refresh -q",
    "pytest tests/test_auth.py::test_login -x",
    "grep -rn password src/",
    "grep -rn 'api_key' config/",
    "grep -r DB_PASSWORD deploy/",
    "rg -n 'TOKEN|SECRET' .env.example",
    "git push -u origin main",
    "docker run -u 1000:1000 -v $PWD:/src img",
    "docker login --password-stdin registry.example.com",
    "echo $TOKEN | docker login -u bob --password-stdin ghcr.io",
    "psql --no-password -h db -U app",
    "mysql -u root -p shop",
    "mkdir -p src/keys && touch src/keys/.gitkeep",
    "ssh -i ~/.ssh/id_ed25519 deploy@host",
    "curl --key client.key --cert client.crt https://mtls.example",
    "curl -H 'Authorization: Bearer $TOKEN' https://api.example.com",
    'curl -H "Authorization: Bearer ${GITHUB_TOKEN}" https://api.github.com/user',
    "export AWS_PROFILE=dev && aws s3 ls",
    "export API_KEY=$(cat ~/.config/key)",
    "PASSWORD=${DB_PASSWORD} ./run",
    "TOKEN_FILE=/run/secrets/token ./start",
    "SECRET_NAME=prod/db aws secretsmanager get-secret-value --secret-id $SECRET_NAME",
    "git checkout 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a",
    "docker pull python@sha256:0b5d8f3a1c9e7b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a1c3e5b7d9f1a3c5e7b9d",
    "git show HEAD~3:src/auth/token_store.py",
    "kubectl get secret db-credentials -o yaml",
    "gh secret list --repo acme/shop",
    "aws configure set region eu-west-1",
    "heroku config:set NODE_ENV=production -a shop",
    "openssl rsa -in server.key -passin env:KEY_PASS -out plain.key",
    "openssl req -new -key server.key -out server.csr",
    "https://example.com/docs/authentication/tokens",
    "https://github.com/acme/shop/blob/main/src/auth.ts",
    "ssh://git@github.com/acme/shop.git",
    "git@github.com:acme/shop.git",
    'python -c "token = get_token(); print(token)"',
    "python manage.py changepassword alice",
    "npx prisma migrate dev --name add_password_hash",
    "/usr/local/lib/python3.11/site-packages/keyring/backends/SecretService.py",
    "node_modules/@types/jsonwebtoken/index.d.ts",
    "src/main/java/com/example/security/JwtTokenProvider.java",
    "TestHTTP2ServerWithTLS13Configuration",
    "useAuthTokenRefreshInterval",
    "MAX_TOKENS=4096 python generate.py",
    "make test TIMEOUT=30",
    "cargo test --features tokio/full",
    "go test ./internal/auth/... -run TestBearerToken",
    "ls -la ~/.aws/credentials",
    "cat .netrc.example",
    "sed -i 's/foo/bar/' src/config.ts",
    "echo 'tests should pass: yes'",
    'git commit -m "Fix the password reset flow"',
    "python -m pytest tests -q --tb=short",
    "uv pip install pyjwt keyring",
    "tmux new-session -d -s work",
    "jq '.items[] | .metadata.name' pods.json",
    "find . -name '*.pem' -not -path './node_modules/*'",
    "SELECT id, password_hash FROM users LIMIT 5",
    "redis-cli -h cache.internal ping",
    "terraform plan -var-file=prod.tfvars",
    "ansible-playbook site.yml --ask-become-pass",
    "caf\u00e9/r\u00e9sum\u00e9.md",
    "docs/\u65e5\u672c\u8a9e/\u8a8d\u8a3c.md",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_targets_come_out_unchanged(text: str) -> None:
    assert redact(text) == text
    assert bound_text(text) == text
    assert retain(0, "bash", {"command": text}, output={"exit_code": 1}).failed_command == text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("curl -u bob:VioletHarbor42 https://x", "curl -u bob:"),
        ("mysql -u root -pViolet42x shop", "mysql -u root -p"),
        ("PGPASSWORD=Violet42x psql -h db", "psql -h db"),
        ('{"user": "bob", "password": "Violet42x"}', '{"user": "bob", "password": "'),
        ("https://bob:Violet42x@host.example/a", "@host.example/a"),
        ("openssl genrsa -passout pass:Violet42x -out k", "-passout pass:"),
    ],
)
def test_redaction_keeps_the_context(text: str, kept: str) -> None:
    redacted = redact(text)
    assert kept in redacted and "Violet42x" not in redacted and REDACTED in redacted


def test_a_url_given_as_a_path_is_redacted_before_it_is_normalized() -> None:
    activity = retain(0, "read_file", {"path": "https://app:Violet42x@host/a"}, workspace=WS)
    assert activity.target == "https:/[REDACTED]@host/a"


def test_whitespace_is_collapsed_before_the_window_so_no_fragment_survives() -> None:
    token = "ghp_" + "Ab3" * 12
    assert bound_text(" " * 65520 + token) == REDACTED
    assert bound_text("x" * 70000 + " " + token) == "x" * 253 + "..."


def test_a_word_cut_by_the_window_loses_its_tail() -> None:
    key = "-----BEGIN PRIVATE KEY-----" + "Q" * 65464 + "-----END PRIVATE KEY-----"
    token = "ghp_" + "Ab3" * 12
    bounded = bound_text(key + token)
    assert bounded == REDACTED and token[:20] not in bounded
    assert redact_prefix(key + token, 65536) == REDACTED


def test_evasion_is_redacted_in_the_original_text() -> None:
    token = "ghp_" + "Ab3" * 12
    hidden = token[:6] + "\u200b" + token[6:20] + "\u00ad" + token[20:]
    assert redact(f"echo {hidden} done") == f"echo {REDACTED} done"
    wide = "".join(chr(ord(c) + 0xFEE0) for c in "AKIA" + "QW3R" * 4)
    assert redact(f"id {wide} ok") == f"id {REDACTED} ok"


def test_registered_rules_apply_at_every_boundary() -> None:
    secret = "acmekey_" + "9f" * 16
    assert redact(f"deploy {secret}") == f"deploy {secret}"
    rule = redaction.register(r"acmekey_[0-9a-f]{32}", hints=["acmekey_"])
    assert rule in redaction.rules()
    assert redact(f"deploy {secret}") == f"deploy {REDACTED}"
    assert retain(0, "bash", {"command": f"deploy {secret}"}).target == f"deploy {REDACTED}"
    record = {"text_offset": 0, "tool": "bash", "target": f"deploy --with {secret}"}
    assert tm.ToolActivity.from_dict(record).target == f"deploy --with {REDACTED}"
    grouped = redaction.register(r"Acme-Session:\s*(?P<secret>[^\s']+)")
    assert redact("curl -H 'Acme-Session: s3ss10n' x") == f"curl -H 'Acme-Session: {REDACTED}' x"
    assert grouped.hints == ()


def test_entropy() -> None:
    assert redaction.entropy("") == 0.0
    assert redaction.entropy("aaaa") == 0.0
    assert redaction.entropy("abcd") == 2.0


@pytest.mark.parametrize(("body", "keys"), ERROR_BODIES, ids=[f"error{i}" for i in range(len(ERROR_BODIES))])
def test_provider_error_bodies_lose_their_echoed_key_and_nothing_else(
    body: str, keys: tuple[str, ...]
) -> None:
    redacted = redact(body)
    assert not [key for key in keys if key in redacted]
    expected = body
    for key in keys:
        expected = expected.replace(key, "")
    assert redacted.replace(REDACTED, "") == expected


def test_an_ordinary_word_after_a_credential_name_is_prose_not_a_value() -> None:
    assert (
        redact("api_key: Incorrect API key provided: sk-bad")
        == f"api_key: Incorrect API key provided: {REDACTED}"
    )
    assert redact("password: must be at least 8 characters") == "password: must be at least 8 characters"
    assert redact("password: correcthorse\nuser: bob") == f"password: {REDACTED}\nuser: bob"
    assert bound_text("password: correcthorse\nuser: bob") == f"password: {REDACTED} user: bob"
    assert redact("PASSWORD=correcthorse battery") == f"PASSWORD={REDACTED} battery"
