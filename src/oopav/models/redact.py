"""Redaction of what leaves the machine for an external model (the critic).

A ``Redactor`` replaces secrets with ``[REDACTED:<kind>#<n>]`` placeholders, numbered per
distinct secret in the order they appear, so the critic can still tell "the same token twice"
from "two tokens" without seeing either, and the redacted payload is deterministic (replay
sends, hashes and caches byte-identical payloads). ``standard`` removes credentials of known
shapes, private keys, password-like assignments, credentials in URLs and every value of a
``.env`` file; ``strict`` also removes host names, IP addresses and e-mail addresses and
long high-entropy strings. Redaction errs on the side of removing too much: a critic that sees
``[REDACTED:assignment#1]`` where a harmless value was loses little; a leaked key is forever.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Mode = Literal["standard", "strict"]

# (kind, pattern, group holding the secret or 0 for the whole match). Order matters: specific
# shapes first, so a GitHub token is reported as one and not as a generic assignment.
_SHAPES: list[tuple[str, str, int]] = [
    (
        "private_key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        0,
    ),
    ("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", 0),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b", 0),
    ("gitlab_token", r"\bglpat-[A-Za-z0-9_\-]{20,}\b", 0),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}\b", 0),
    ("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+", 0),
    ("stripe_key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b", 0),
    ("google_api_key", r"\bAIza[0-9A-Za-z\-_]{35}\b", 0),
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}\b", 0),
    ("openai_key", r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}\b", 0),
    ("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", 0),
    ("pypi_token", r"\bpypi-[A-Za-z0-9_\-]{50,}\b", 0),
    ("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}\b", 0),
    ("twilio_key", r"\bSK[0-9a-fA-F]{32}\b", 0),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\b", 0),
    ("bearer", r"(?i)\b(?:bearer|token)\s+([A-Za-z0-9_\-\.=/+]{16,})", 1),
    ("basic_auth", r"(?i)\bbasic\s+([A-Za-z0-9+/]{12,}={0,2})", 1),
    ("url_credentials", r"\b[a-z][a-z0-9+.\-]*://[^\s:/@'\"]+:([^\s@/'\"]+)@", 1),
    ("azure_sas", r"(?i)\bsig=([A-Za-z0-9%+/=]{20,})", 1),
    (
        "connection_string",
        r"(?i)\b(?:AccountKey|SharedAccessKey|Password|Pwd)=([^;\s'\"]+)",
        1,
    ),
]

_ASSIGNMENT = re.compile(
    r"""(?ix)
    (?P<key>[A-Za-z0-9_.\-]*(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_\-]?key|apikey|
        access[_\-]?key|private[_\-]?key|client[_\-]?secret|auth|credential|session[_\-]?key|
        signing[_\-]?key|encryption[_\-]?key|salt)[A-Za-z0-9_.\-]*)
    (?P<sep>["'\]]*\s*(?::|=|:=|=>)\s*)
    (?:"(?P<dq>[^"\n]{4,})"|'(?P<sq>[^'\n]{4,})'|(?P<value>[^\s"',;)\]}]{4,}))
    """
)
_ENV_LINE = re.compile(
    r"^(?P<lead>[+\- ]?\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_]*\s*=\s*)(?P<value>.+)$", re.M
)
_ENV_FILE = re.compile(r"(?:^|/)\.env(?:\.[A-Za-z0-9_.\-]+)?$|(?:^|/)[^/]*\.env$")
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$|^\+\+\+ b/(\S+)$", re.M)

_STRICT: list[tuple[str, str, int]] = [
    ("email", r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b", 0),
    ("ipv4", r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b", 0),
    ("ipv6", r"\b(?:[0-9a-fA-F]{1,4}:){2,7}[0-9a-fA-F]{1,4}\b", 0),
    (
        "host",
        r"\b(?:[a-zA-Z0-9](?:[a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])?\.)+(?:com|net|org|io|dev|internal|local|lan|corp|cloud|ai|co|app|biz|info|us|uk|de|eu)\b",
        0,
    ),
]
_HIGH_ENTROPY = re.compile(r"\b[A-Za-z0-9+/_\-]{32,}={0,2}")

MAX_PAYLOAD = 48 * 1024


@dataclass
class Redaction:
    text: str
    counts: dict[str, int] = field(default_factory=dict)
    clamped: bool = False

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


class Redactor:
    def __init__(self, mode: Mode = "standard", max_bytes: int = MAX_PAYLOAD) -> None:
        if mode not in ("standard", "strict"):
            raise ValueError(f"redaction must be 'standard' or 'strict', not {mode!r}")
        self.mode = mode
        self.max_bytes = max_bytes
        shapes = list(_SHAPES) + (list(_STRICT) if mode == "strict" else [])
        self._shapes: list[tuple[str, re.Pattern[str], int | str]] = [
            (kind, re.compile(p), g) for kind, p, g in shapes
        ]

    def redact(self, text: str, path: str | None = None) -> Redaction:
        """Redact ``text`` (a file's content when ``path`` is given, a diff, or prose)."""
        numbering: dict[str, str] = {}
        counts: dict[str, int] = {}

        def placeholder(kind: str, secret: str) -> str:
            if secret not in numbering:
                n = sum(1 for v in numbering.values() if v.startswith(f"[REDACTED:{kind}#")) + 1
                numbering[secret] = f"[REDACTED:{kind}#{n}]"
            counts[kind] = counts.get(kind, 0) + 1
            return numbering[secret]

        out = text
        if path is not None and _ENV_FILE.search(path):
            out = _sub_group(_ENV_LINE, out, "value", lambda s: placeholder("env_value", s))
        else:
            out = self._redact_env_hunks(out, placeholder)
        for kind, pattern, group in self._shapes:
            out = _sub_group(pattern, out, group, functools.partial(placeholder, kind))
        for group in ("dq", "sq", "value"):
            out = _sub_group(
                _ASSIGNMENT,
                out,
                group,
                lambda s: s if "[REDACTED:" in s else placeholder("assignment", s),
            )
        if self.mode == "strict":
            out = _sub_group(
                _HIGH_ENTROPY,
                out,
                0,
                lambda s: placeholder("high_entropy", s) if _entropy(s) >= 3.5 else s,
            )
        clamped = False
        data = out.encode()
        if len(data) > self.max_bytes:
            out = (
                data[: self.max_bytes].decode(errors="ignore")
                + f"\n[… clamped to {self.max_bytes} bytes]"
            )
            clamped = True
        return Redaction(out, counts, clamped)

    def _redact_env_hunks(self, diff: str, placeholder: Callable[[str, str], str]) -> str:
        """In a unified diff, every value line of a ``.env`` file is redacted."""
        if "diff --git" not in diff:
            return diff
        parts = re.split(r"(?=^diff --git )", diff, flags=re.M)
        out = []
        for part in parts:
            m = _DIFF_FILE.search(part)
            name = next((g for g in (m.groups() if m else ()) if g), None)
            if name and _ENV_FILE.search(name):
                head, sep, body = part.partition("\n@@")
                body = _sub_group(_ENV_LINE, body, "value", lambda s: placeholder("env_value", s))
                part = head + sep + body
            out.append(part)
        return "".join(out)


def _sub_group(
    pattern: re.Pattern[str], text: str, group: int | str, repl: Callable[[str], str]
) -> str:
    def one(m: re.Match[str]) -> str:
        secret = m.group(group)
        if not secret or secret.startswith("[REDACTED:"):
            return m.group(0)
        start, end = m.span(group)
        s0 = m.start(0)
        whole = m.group(0)
        return whole[: start - s0] + repl(secret) + whole[end - s0 :]

    return pattern.sub(one, text)


def _entropy(s: str) -> float:
    counts: dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())
