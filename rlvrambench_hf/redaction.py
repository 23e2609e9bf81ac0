"""Credentials kept out of every message and log excerpt (:func:`redact`), below :mod:`.errors`, whose formatter
applies it to every line: the user-info of URLs, the tokens and keys of the common services, ``Authorization`` and
``Bearer`` values, private keys, the values of secret-named settings, and the values of such environment variables
wherever they appear."""

from __future__ import annotations

import functools
import os
import re
import sys

#: Environment variables whose values are secrets wherever they appear (the Hub's, and any ``*_TOKEN`` / ``*_KEY``
#: / ``*_SECRET`` / ``*PASSWORD`` variable of at least 8 characters).
_TOKEN_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
_SECRET_NAME = r"(?:TOKEN|_KEY|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$"
#: A value after a secret's name (``=``, ``:``, quoted or not).
_VALUE = r"""(\s*[:=]\s*["']?)[^\s"',;&]+"""
#: The shapes of credentials a message or a log excerpt may hold, each replaced by ``***`` (its prefix kept).
_REDACTIONS = (
    (r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#@\s]*@", r"\1***@"),  # https://user:password@host
    (r"-----BEGIN ([A-Z ]*)PRIVATE KEY-----(?:[\s\S]*?-----END \1PRIVATE KEY-----|[\s\S]*)", "***"),
    (r"(?i)\b(authorization\s*[:=]\s*)(?:(?:bearer|basic|token)\s+)?[^\s,;]+", r"\1***"),
    (r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}", r"\1 ***"),
    (r"\b(hf_|api_org_)[A-Za-z0-9]{8,}", r"\1***"),  # Hugging Face
    (r"\b(sk-(?:ant-|proj-|svcacct-|admin-)?)[A-Za-z0-9_-]{16,}", r"\1***"),  # OpenAI, Anthropic
    (r"\b(gh[pousr]_|github_pat_)[A-Za-z0-9_]{16,}", r"\1***"),  # GitHub
    (r"\b(glpat-|npm_|pypi-|xox[abposr]-|xapp-|[rs]k_(?:live|test)_)[A-Za-z0-9_-]{10,}", r"\1***"),
    (r"\b((?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{4})[A-Z0-9]{12}\b", r"\1***"),  # AWS access key ids
    (r"\b(AIza)[0-9A-Za-z_-]{30,}|\b(ya29\.)[0-9A-Za-z_-]{20,}", r"\1\2***"),  # Google
    (r"\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*", "***"),  # a JSON web token
    (rf"\b([A-Z][A-Z0-9_]*(?:_TOKEN|_KEY|_SECRET|PASSWORD|PASSWD)){_VALUE}", r"\1\2***"),  # env style
    (
        r"(?i)\b((?:aws_secret_access_key|aws_session_token|api[_-]?key|access[_-]?token|auth[_-]?token|"
        rf"secret(?:[_-]?key)?|client[_-]?secret|private[_-]?key|password|passwd|wandb_api_key|hf_token)[\"']?){_VALUE}",
        r"\1\2***",
    ),
    (r"(?i)([?&](?:token|access_token|api_key|key|password|signature|sig)=)[^&#\s]+", r"\1***"),
)


def redact(text: str) -> str:
    """``text`` without credentials: the user-info of every URL, the tokens and keys of the common services
    (Hugging Face, OpenAI, Anthropic, GitHub, GitLab, AWS, Google, Slack, Stripe, npm, PyPI), JSON web tokens,
    ``Authorization`` / ``Bearer`` values, private keys, the values of ``*_TOKEN`` / ``*_KEY`` / ``*_SECRET`` /
    ``PASSWORD`` settings and token query parameters, and the values of such environment variables wherever they
    appear, become ``***``."""
    for token in _tokens():
        text = text.replace(token, "***")
    for pattern, replacement in _compiled():
        text = pattern.sub(replacement, text)
    return text


@functools.cache
def _compiled() -> tuple[tuple[re.Pattern[str], str], ...]:
    """:data:`_REDACTIONS` compiled, on first use (every command imports this module; few print a message)."""
    return tuple((re.compile(pattern), replacement) for pattern, replacement in _REDACTIONS)


def _tokens() -> list[str]:
    tokens = [os.environ.get(name, "") for name in _TOKEN_VARIABLES]
    tokens += [value for name, value in os.environ.items() if re.search(_SECRET_NAME, name, re.IGNORECASE)]
    if "huggingface_hub" in sys.modules:  # the token huggingface_hub would send (its file too)
        try:
            tokens.append(sys.modules["huggingface_hub"].get_token() or "")
        except Exception:  # an unreadable token file: nothing to redact from it
            pass
    return [t.strip() for t in tokens if len(t.strip()) >= 8]
