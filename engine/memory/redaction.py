"""Masking credentials in session transcripts before they are indexed or exported.

Transcripts are where users paste keys and passwords, and the index (and the
qmd export) is a second copy that outlives the conversation. Every rule keeps
the words around a secret (``password=``, ``Bearer``, the URL's user and host)
and replaces only the secret with ``[REDACTED]``, so the line stays searchable.

Two kinds of rules: token *shapes* that are secrets wherever they appear
(``ghp_…``, ``sk_live_…``, a PEM block), and *contexts* that say "a secret
follows" (``password is``, ``AccountKey=``, ``DB_PASS=``). Where the context
word is also ordinary prose (``token``, ``secret``, ``key``), the value must look
like a secret, or is checked against a short list of plain words, so that
"secret: none" or "the key: value pairs" stay as written.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

# Ordered: specific token shapes first, then the context rules, so a known key
# inside an assignment is caught even where a context rule would miss it.
_TOKEN_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, flags)
    for p, flags in (
        # PEM private keys, across lines or with whitespace collapsed; a block pasted
        # without its END line is a secret to the end of the message
        (
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.S,
        ),
        (r"\bsk-[A-Za-z0-9_\-]{16,}", 0),  # OpenAI / Anthropic style (sk-..., sk-proj-, sk-ant-)
        (r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{10,}", 0),  # Stripe secret / restricted keys
        (r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", 0),  # SendGrid
        (r"\bnpm_[A-Za-z0-9]{30,}", 0),  # npm access tokens
        (r"\bAIza[0-9A-Za-z_\-]{30,}", 0),  # Google API keys
        (r"\bgh[pousr]_[A-Za-z0-9]{20,}", 0),  # GitHub tokens
        (r"\bgithub_pat_[A-Za-z0-9_]{20,}", 0),
        (r"\bxox[a-z]-[A-Za-z0-9\-]{10,}", 0),  # Slack tokens (xoxb-, xoxp-, xoxe-, …)
        (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", 0),  # AWS access key ids
        (r"\bglpat-[A-Za-z0-9_\-]{20,}", 0),  # GitLab
        (r"\bhf_[A-Za-z0-9]{30,}", 0),  # Hugging Face
        (r"\b\d{8,10}:AA[A-Za-z0-9_\-]{30,}", 0),  # Telegram bot tokens
        (r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", 0),  # JWT
        # AWS secret access keys, bare: 40 characters of base64 with upper, lower
        # and a digit, standing alone (prose has no 40-letter words)
        (
            r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[0-9])(?=[A-Za-z0-9/+]{0,39}[a-z])"
            r"(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
            0,
        ),
    )
)
#: Slack / Discord webhook URLs: the path is the credential.
_WEBHOOK = re.compile(
    r"(?i)\b(https?://(?:hooks\.slack\.com/(?:services|workflows)/"
    r"|(?:discord(?:app)?\.com)/api/webhooks/))[A-Za-z0-9/_\-]+"
)
#: Azure connection strings: ``AccountKey=…;``, ``SharedAccessKey=…``, ``sig=…``.
_AZURE = re.compile(r"(?i)\b((?:AccountKey|SharedAccessKey|SharedAccessSignature)=)([^;\s\"']+)")
#: ``Bearer <token>``: keep the word, drop the token (a digit, or 16+ characters;
#: "bearer of bad news" and "bearer bonds" stay).
_BEARER = re.compile(
    r"(?i)\b(bearer\s+)((?=[A-Za-z._~+/\-]*[0-9])[A-Za-z0-9._~+/\-]{8,}=*"
    r"|[A-Za-z0-9._~+/\-]{16,}=*)"
)
#: ``Authorization: Basic …`` / ``Authorization: token …`` headers.
_AUTH_HEADER = re.compile(
    r"(?i)\b(authorization\"?\s*[:=]\s*\"?(?:basic|bearer|token|digest)?\s*)([^\s\"']{8,})"
)
#: ``scheme://user:password@host``: keep scheme, user and host, drop the password,
#: which may contain ``/`` or ``@`` (the host follows the last ``@``) and whose user
#: may be empty (``redis://:pw@host``).
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/:@]*):(\S+)@(?=[^\s@/?#]+)")
_VALUE = r"(\"?\s*[=:]\s*[\"']?)([^\s\"'&,;]+)"
_NAMES = (
    r"password|passwd|passphrase|pwd|api[_\-]?key|secret[_\-]?key|access[_\-]?key"
    r"|secret[_\-]?access[_\-]?key|access[_\-]?token|auth[_\-]?token|refresh[_\-]?token"
    r"|client[_\-]?secret|private[_\-]?key"
)
#: A quoted value of a secret-named field: the whole quoted string (spaces included).
_QUOTED_ASSIGNMENT = re.compile(
    r"(?i)\b((?:[a-z0-9]+[_\-])*[a-z0-9]*(?:"
    + _NAMES
    + r"))(\"?\s*[=:]\s*)(\"[^\"\n]*\"|'[^'\n]*')"
)
#: ``password=…``, ``db_password: …``, ``PGPASSWORD=…``, ``"api_key": "…"``: keep the
#: name, drop the value.
_STRONG_ASSIGNMENT = re.compile(
    r"(?i)\b((?:[a-z0-9]+[_\-])*[a-z0-9]*(?:" + _NAMES + r")|(?:[a-z0-9]+[_\-])+pass)\b" + _VALUE
)
#: Environment-style assignments, upper case: ``DB_PASS=…``, ``MY_SECRET=…``.
_ENV_ASSIGNMENT = re.compile(
    r"\b([A-Z][A-Z0-9_]*(?:PASS|PASSWORD|PASSWD|PWD|SECRET|TOKEN|KEY|APIKEY|CREDENTIALS?)=)"
    r"([\"']?)([^\s\"']+)"
)
#: ``DB_PASS="correct horse battery"``: a quoted value assigned to a secret-named
#: variable is secret whatever its words.
_ENV_QUOTED = re.compile(
    r"\b([A-Z][A-Z0-9_]*(?:PASS|PASSWORD|PASSWD|PWD|SECRET|TOKEN|KEY|APIKEY|CREDENTIALS?)=)"
    r"(\"[^\"\n]*\"|'[^'\n]*')"
)
#: ``Cookie: session=…; theme=dark`` / ``Set-Cookie: …``: every value of the header
_COOKIE_HEADER = re.compile(r"(?i)\b((?:set-)?cookie\s*:\s*)([^\n]+)")
_COOKIE_PAIR = re.compile(r"([A-Za-z0-9_.\-]+=)([^;\s]+)")
#: "my password is hunter2", "the wifi pwd is …": a sentence naming the secret.
_SAID_PASSWORD = re.compile(
    r"(?i)\b((?:password|passwd|pwd|passcode|pin(?: code)?)\s+(?:is|was)\s*:?\s+)"
    r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"',;]+)"
)
#: Passphrases are several words: everything up to the end of the sentence or line.
_PASSPHRASE = re.compile(
    r"(?i)\b((?:passphrase|pass phrase|seed phrase|recovery phrase|mnemonic)"
    r"(?:\s+(?:is|was)\s*:?|\s*[:=])\s+)(\"[^\"\n]+\"|'[^'\n]+'|[^\n.;]+)"
)
#: ``token: abc`` / ``secret = xyz``: any value but a plain word ("secret: none").
_WORD_ASSIGNMENT = re.compile(r"(?i)\b(token|secret|apikey)(\"?\s*[=:]\s*[\"']?)([^\s\"'&,;]{3,})")
#: ``key=…``: "key" is common prose ("the key: value pairs"): only secret-looking values.
_KEY_ASSIGNMENT = re.compile(
    r"(?i)\b(key)(\"?\s*[=:]\s*[\"']?)((?=[^\s\"'&,;]*[0-9])[^\s\"'&,;]{8,})"
)
#: Values that are words, not secrets, after a context word.
_PLAIN_WORDS = """none null nil true false yes no empty unset set required optional missing
unknown n/a na tbd todo changeme default value values here there it is the a an not too
stored saved hashed encrypted wrong correct incorrect invalid valid expired reset changed
in on"""
_PLAIN = frozenset(_PLAIN_WORDS.split())


def _keep_name(match: re.Match[str]) -> str:
    value = match.group(match.lastindex or 0)
    if value.startswith(REDACTED) or value.strip("\"'").lower() in _PLAIN:
        return match.group(0)
    return "".join(match.groups()[:-1]) + REDACTED


def _always(match: re.Match[str]) -> str:
    """An assignment to a secret-named key: the value goes, whatever its words."""
    value = match.group(match.lastindex or 0)
    if REDACTED in value:
        return match.group(0)
    return "".join(match.groups()[:-1]) + REDACTED


def _cookies(match: re.Match[str]) -> str:
    def one(pair: re.Match[str]) -> str:
        return pair.group(0) if pair.group(2) == REDACTED else pair.group(1) + REDACTED

    return match.group(1) + _COOKIE_PAIR.sub(one, match.group(2))


def redact_secrets(text: str) -> str:
    """Replace API keys, bearer tokens and passwords in ``text`` with ``[REDACTED]``.

    Over-redacting a harmless word costs a search hit; under-redacting leaks a
    credential into a file that is kept forever, so the rules lean broad where
    the context says "secret" and stay narrow where the word is common prose.
    """
    for pattern in _TOKEN_PATTERNS:
        text = pattern.sub(REDACTED, text)
    text = _WEBHOOK.sub(lambda m: m.group(1) + REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)
    text = _COOKIE_HEADER.sub(_cookies, text)
    for strong in (_ENV_QUOTED, _QUOTED_ASSIGNMENT):
        text = strong.sub(_always, text)
    for pattern in (
        _AZURE,
        _AUTH_HEADER,
        _BEARER,
        _PASSPHRASE,
        _SAID_PASSWORD,
        _STRONG_ASSIGNMENT,
        _ENV_ASSIGNMENT,
        _WORD_ASSIGNMENT,
        _KEY_ASSIGNMENT,
    ):
        text = pattern.sub(_keep_name, text)
    return text
