"""Error bodies as the providers and OpenAI-compatible servers send them (their documentation and
public issue reports), with the key fragments some of them echo.

The redactor meets these in the session store and in ``show``: it must remove an echoed key and
nothing else (no word of the message, no request id, no model name).
"""

from __future__ import annotations

__all__ = ["ERROR_BODIES"]

_MASKED = "sk-proj-" + "*" * 44 + "a1b2"

ERROR_BODIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    # OpenAI (Chat Completions and Responses)
    (
        '{"error": {"message": "Incorrect API key provided: sk-bad. You can find your API key at '
        'https://platform.openai.com/account/api-keys.", "type": "invalid_request_error", "param": null, '
        '"code": "invalid_api_key"}}',
        ("sk-bad",),
    ),
    ("Incorrect API key provided: sk-bad", ("sk-bad",)),
    (
        f"Error code: 401 - {{'error': {{'message': 'Incorrect API key provided: {_MASKED}. You can find "
        "your API key at https://platform.openai.com/account/api-keys.', 'type': 'invalid_request_error', "
        "'param': None, 'code': 'invalid_api_key'}}",
        (_MASKED,),
    ),
    (
        '{"error": {"message": "You didn\'t provide an API key. You need to provide your API key in an '
        "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password "
        "field (with blank username) if you're accessing the API from your browser and are prompted for a "
        'username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.", '
        '"type": "invalid_request_error", "param": null, "code": null}}',
        (),
    ),
    (
        '{"error": {"message": "You exceeded your current quota, please check your plan and billing details. '
        "For more information on this error, read the docs: "
        'https://platform.openai.com/docs/guides/error-codes/api-errors.", "type": "insufficient_quota", '
        '"param": null, "code": "insufficient_quota"}}',
        (),
    ),
    (
        '{"error": {"message": "The model `gpt-5` does not exist or you do not have access to it.", '
        '"type": "invalid_request_error", "param": null, "code": "model_not_found"}}',
        (),
    ),
    (
        '{"error": {"message": "This model\'s maximum context length is 128000 tokens. However, your '
        'messages resulted in 130512 tokens. Please reduce the length of the messages.", "type": '
        '"invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}',
        (),
    ),
    (
        '{"error": {"message": "Rate limit reached for gpt-4.1 in organization org-5Xq2LmP9rT1vW8yZ on tokens '
        "per min (TPM): Limit 30000, Used 29512, Requested 1200. Please try again in 1.424s. Visit "
        'https://platform.openai.com/account/rate-limits to learn more.", "type": "tokens", "param": null, '
        '"code": "rate_limit_exceeded"}}',
        (),
    ),
    (
        '{"error": {"message": "Invalid \'messages[1].content\': string too long. Expected a string with '
        'maximum length 10485760, but got a string with length 10485761 instead.", "type": '
        '"invalid_request_error", "param": "messages[1].content", "code": "string_above_max_length"}}',
        (),
    ),
    (
        '{"error": {"message": "Item with id \'rs_68af3c1e9b2c8190a1b2c3d4e5f60718\' not found. Items are '
        "not persisted when `store` is set to false. Try again with `store` set to true, or remove this item "
        'from your input.", "type": "invalid_request_error", "param": "input", "code": null}}',
        (),
    ),
    (
        '{"error": {"message": "The server had an error while processing your request. Sorry about that!", '
        '"type": "server_error", "param": null, "code": null}}',
        (),
    ),
    # Anthropic
    (
        '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},'
        '"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}',
        (),
    ),
    ('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', ()),
    (
        '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208512 tokens '
        '> 200000 maximum"}}',
        (),
    ),
    (
        '{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate '
        "limit for your organization (3f6c2a9e-8b1d-4e7a-9c5f-2d8b7a1e4c60) of 40,000 input tokens per "
        "minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response "
        "headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try "
        'again later."}}',
        (),
    ),
    (
        '{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0: unexpected '
        "`tool_use_id` found in `tool_result` blocks: toolu_01A09q90qw90lq917835lq9. Each `tool_result` block "
        'must have a corresponding `tool_use` block in the previous message."}}',
        (),
    ),
    (
        '{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission '
        'to use the specified resource."}}',
        (),
    ),
    (
        '{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to '
        'access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}',
        (),
    ),
    # Gemini
    (
        '{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": '
        '"INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": '
        '"API_KEY_INVALID", "domain": "googleapis.com", "metadata": {"service": '
        '"generativelanguage.googleapis.com"}}]}}',
        (),
    ),
    (
        '{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": '
        '"RESOURCE_EXHAUSTED"}}',
        (),
    ),
    (
        '{"error": {"code": 404, "message": "models/gemini-9 is not found for API version v1beta, or is not '
        "supported for generateContent. Call ListModels to see the list of available models and their "
        'supported methods.", "status": "NOT_FOUND"}}',
        (),
    ),
    (
        '{"error": {"code": 403, "message": "Method doesn\'t allow unregistered callers (callers without '
        "established identity). Please use API Key or other form of API consumer identity to call this "
        'API.", "status": "PERMISSION_DENIED"}}',
        (),
    ),
    # Bedrock
    ('{"message":"The security token included in the request is invalid."}', ()),
    ('{"message":"The security token included in the request is expired"}', ()),
    (
        '{"message":"The request signature we calculated does not match the signature you provided. Check '
        'your AWS Secret Access Key and signing method. Consult the service documentation for details."}',
        (),
    ),
    ('{"message":"You don\'t have access to the model with the specified model ID."}', ()),
    ('{"message":"The provided model identifier is invalid."}', ()),
    ('{"message":"Too many requests, please wait before trying again."}', ()),
    (
        '{"Message":"User: arn:aws:sts::123456789012:assumed-role/dev/session is not authorized to perform: '
        "bedrock:InvokeModelWithResponseStream on resource: "
        "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-5 because no identity-based "
        'policy allows the bedrock:InvokeModelWithResponseStream action"}',
        (),
    ),
    # OpenAI-compatible servers and gateways
    (
        "litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key provided: "
        "sk-1234. You can find your API key at https://platform.openai.com/account/api-keys.",
        ("sk-1234",),
    ),
    ('{"error":{"message":"No auth credentials found","code":401}}', ()),
    ('{"error":"model \\"llama3.1\\" not found, try pulling it first"}', ()),
    (
        '{"object":"error","message":"The model `meta-llama/Llama-3.1-8B-Instruct` does not exist.",'
        '"type":"NotFoundError","param":null,"code":404}',
        (),
    ),
    ('{"message":"Unauthorized","request_id":"4f2c6d5e8a1b4c3d9e7f0a2b6c8d1e3f"}', ()),
    ('{"error":{"message":"Invalid API Key","type":"invalid_request_error","code":"invalid_api_key"}}', ()),
    (
        '{"error":{"message":"Authentication Fails, Your api key: ****abcd is invalid","type":'
        '"authentication_error","param":null,"code":"invalid_request_error"}}',
        (),
    ),
    (
        '{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API '
        "endpoint. Make sure to provide a valid key for an active subscription and use a correct regional "
        'API endpoint for your resource."}}',
        (),
    ),
)
"""(body, the key fragments it echoes)."""
