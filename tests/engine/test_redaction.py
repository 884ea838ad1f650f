"""Transcript redaction, one row per secret form.

Each row is a line as a user might paste it, the words that must survive (so
the line stays searchable) and the secret that must not. The prose table is
the other half: ordinary sentences that use the same words ("token", "key",
"bearer", "password", "passphrase") and must come out unchanged.
"""

from __future__ import annotations

import pytest

from engine.memory.redaction import REDACTED, redact_secrets

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SECRETS = [
    # (name, line, kept, secret)
    ("aws secret bare", f"the key {AWS_SECRET} is live", "the key", AWS_SECRET),
    (
        "aws secret assigned",
        f"aws_secret_access_key={AWS_SECRET}",
        "aws_secret_access_key=",
        "wJal",
    ),
    ("aws secret env", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", "AWS_SECRET_ACCESS_KEY=", "wJal"),
    ("aws access key id", "aws AKIAIOSFODNN7EXAMPLE", "aws", "AKIAIOSFODNN7"),
    ("stripe live", "charge with sk_live_4eC39HqLyjWDarjtT1zdp7dc", "charge with", "4eC39Hq"),
    ("stripe restricted", "rk_test_51H8abcdefghijklmnop", "", "51H8abc"),
    (
        "sendgrid",
        "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 ok",
        "ok",
        "ngeVfQ",
    ),
    (
        "npm",
        "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "registry",
        "npm_abc",
    ),
    ("slack bot", "slack xoxb-1234567890-abcdefghij", "slack", "xoxb-"),
    ("slack user", "xoxp-2222-3333-abcdefabcdef", "", "xoxp-2222"),
    (
        "slack webhook",
        "post to https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX now",
        "hooks.slack.com/services/",
        "T000/B000",
    ),
    (
        "azure",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFyYmF6cXV4+/==;EndpointSuffix=core.windows.net",
        "AccountName=acme;AccountKey=",
        "Zm9vYmFy",
    ),
    ("pgpassword", "PGPASSWORD=tr0ub4dor psql -h db", "PGPASSWORD=", "tr0ub4dor"),
    ("db_pass", "export DB_PASS=hunter22", "DB_PASS=", "hunter22"),
    ("db_pass lower", "db_pass: hunter22", "db_pass:", "hunter22"),
    ("said password", "my password is hunter2 by the way", "my password is", "hunter2"),
    (
        "said password quoted",
        'the password was "open sesame" yesterday',
        "the password was",
        "sesame",
    ),
    ("passphrase", "passphrase: correct horse battery staple", "passphrase:", "horse battery"),
    (
        "passphrase quoted",
        'wallet_passphrase = "correct horse battery staple"',
        "wallet_passphrase",
        "horse",
    ),
    (
        "seed phrase",
        "my seed phrase is abandon ability able about above. Thanks",
        "Thanks",
        "ability able",
    ),
    (
        "bearer with digits",
        "curl -H 'Authorization: Bearer abc123def456ghi789'",
        "Authorization: Bearer",
        "abc123",
    ),
    (
        "bearer without digits",
        "send Bearer abcdefghijklmnopqrstuvwxyzABCDEF please",
        "Bearer",
        "abcdefghijklmnop",
    ),
    ("basic auth", "header Authorization: Basic dXNlcjpwYXNzd29yZA==", "Basic", "dXNlcj"),
    ("url password", "postgres://admin:s3cr3t!@db.example.com/app", "postgres://admin:", "s3cr3t"),
    (
        "url password slash",
        "mongodb://app:pa/ss@word@db.example.com:27017/x",
        "mongodb://app:",
        "pa/ss",
    ),
    ("url password at", "https://bob:p@ssw0rd@example.com/", "@example.com", "p@ssw0rd"),
    ("url empty user", "redis://:sup3rsecret@cache.local:6379", "redis://:", "sup3rsecret"),
    ("github classic", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "token", "ghp_"),
    ("github oauth", "gho_16C7e42F292c6912E7710c838347Ae178B4a", "", "gho_16C7"),
    (
        "github fine-grained",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "",
        "github_pat_11",
    ),
    ("google", "use AIzaSyA1234567890abcdefghijklmnopqrstuv", "use", "SyA123"),
    (
        "jwt",
        "send eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
        ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "send",
        "eyJhbG",
    ),
    (
        "private key one line",
        "-----BEGIN RSA PRIVATE KEY----- MIIEow -----END RSA PRIVATE KEY-----",
        "",
        "MIIEow",
    ),
    (
        "private key block",
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----\nok",
        "ok",
        "b3BlbnNz",
    ),
    ("telegram", "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 online", "online", "AAHdqTcv"),
    ("token colon", "token: abc", "token:", "abc"),
    ("token equals", "set token=abcd1234efgh now", "token=", "abcd1234"),
    ("secret word", "secret = xyzzy", "secret =", "xyzzy"),
    ("json api key", '{"api_key": "abc123xyz"}', '"api_key"', "abc123xyz"),
    ("openai", "my key is sk-proj-Abcdefghijklmnop1234567890 ok", "my key is", "Abcdefgh"),
    (
        "password assigned",
        "password=hunter2 and db_password: swordfish",
        "db_password:",
        "swordfish",
    ),
    # a secret-named assignment is secret whatever its words (plain words included)
    ("env quoted words", 'export DB_PASS="correct horse battery"', "DB_PASS=", "horse"),
    ("env quoted plain", "API_TOKEN='none of your business'", "API_TOKEN=", "business"),
    (
        "pem without end",
        "here it is\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\nAQEFAASC",
        "here it is",
        "AQEFAASC",
    ),
    ("wifi pwd", "the wifi pwd is tr0ub4dor&3 for guests", "the wifi pwd is", "tr0ub4dor"),
    ("passcode", "door passcode is 4711", "passcode is", "4711"),
    ("cookie", "Cookie: session=9f8e7d6c5b4a; theme=dark", "Cookie: session=", "9f8e7d6c"),
    ("set-cookie", "Set-Cookie: sid=abc123def456; Path=/", "Set-Cookie: sid=", "abc123def"),
]

PROSE = [
    "The token limit is 400 tokens; basic authentication and bearer bonds.",
    "The key: value pairs are sorted; secret: none; see https://example.com/a:b",
    "She was the bearer of bad news about the password policy.",
    "The password is required and must be changed every 90 days.",
    "A mnemonic device helps remember the planets.",
    "Each token: a word piece of the input.",
    "Let's pass on that; the key takeaway is to ship on Friday.",
    "Commit 3f5e2a9c1b7d4e6f8a0b2c4d6e8f0a1b3c5d7e9f fixed the login page.",
    "Meet at https://meet.example.com/room-42 at 10:30 tomorrow.",
    "Dana prefers flat white coffee; the Atlas rollback plan is drafted.",
    "Python's secrets module generates tokens; the API key rotation is monthly.",
    "The recovery plan: restore from backup, then reindex.",
]


@pytest.mark.parametrize(("name", "line", "kept", "secret"), SECRETS, ids=[s[0] for s in SECRETS])
def test_secret_forms_are_redacted(name: str, line: str, kept: str, secret: str) -> None:
    out = redact_secrets(line)
    assert secret not in out, out
    assert REDACTED in out, out
    assert kept in out, out


@pytest.mark.parametrize("prose", PROSE)
def test_ordinary_prose_is_left_alone(prose: str) -> None:
    assert redact_secrets(prose) == prose


def test_redaction_is_idempotent() -> None:
    for _name, line, _kept, _secret in SECRETS:
        once = redact_secrets(line)
        assert redact_secrets(once) == once
