"""The critic's redactor: 30 secrets of different shapes, planted in files, diffs and prose,
never survive; what is not secret survives; payloads are deterministic."""

from __future__ import annotations

import pytest

from oopav.models.redact import Redactor

# Fake, well-formed secrets (none of them is real).
SECRETS: dict[str, str] = {
    "aws_access_key": "AKIAIOSFODNN7EXAMPLQ",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYQ",
    "github_pat": "ghp_1234567890abcdefghijABCDEFGHIJ123456",
    "github_fine": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFG",
    "gitlab": "glpat-x7Yz9AbCdEfGhIjKlMnO",
    "slack_bot": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "slack_hook": "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "stripe": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "google": "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "npm": "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "pypi": "pypi-AgEIcHlwaS5vcmcCJDU5ZGJmNzYxLTQ4ZjEtNDk3Yi05ZjZmLWRhNzJkYjQ2ZTRlYwACKlszLCJj",
    "sendgrid": "SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq",
    "twilio": "SK0123456789abcdef0123456789abcdef",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "bearer": "abcDEF123456ghiJKL789012mnoPQR",
    "url_password": "hunter2-Pa55word",
    "db_password": "correct-horse-battery",
    "api_key_assign": "k3y-0f-th3-d4y-42x",
    "client_secret": "cs_9f8e7d6c5b4a3210",
    "env_value_1": "postgres://app@db/prod?x=1",
    "env_value_2": "totally-not-a-secret-but-in-dotenv",
    "azure_sas": "sv2021abcDEFghiJKLmnoPQRstu%2Bvwx%3D",
    "azure_conn": "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq",
    "private_key_body": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
    "basic": "dXNlcjpwYXNzd29yZDEyMzQ=",
    "token_yaml": "tok_7Hh3Kk9Qq2Ww5Ee8Rr1",
    "secret_json": "s3cr3t-v4lue-0f-json",
    "passphrase": "my long passphrase!",
}

FILE = f"""
import os
AWS_ACCESS_KEY_ID = "{SECRETS["aws_access_key"]}"
aws_secret_access_key = "{SECRETS["aws_secret"]}"
GITHUB = "{SECRETS["github_pat"]}"  # and {SECRETS["github_fine"]}
gitlab = '{SECRETS["gitlab"]}'
SLACK = "{SECRETS["slack_bot"]}"; HOOK = "{SECRETS["slack_hook"]}"
stripe.api_key = "{SECRETS["stripe"]}"
maps = "{SECRETS["google"]}"
client = OpenAI(api_key="{SECRETS["openai"]}")
claude = Anthropic(api_key="{SECRETS["anthropic"]}")
NPM = "{SECRETS["npm"]}"
PYPI = "{SECRETS["pypi"]}"
SENDGRID = "{SECRETS["sendgrid"]}"
TWILIO = "{SECRETS["twilio"]}"
headers = {{"Authorization": "Bearer {SECRETS["bearer"]}"}}
jwt = "{SECRETS["jwt"]}"
DB = "postgresql://admin:{SECRETS["url_password"]}@db.internal:5432/app"
db_password = "{SECRETS["db_password"]}"
config["api_key"] = "{SECRETS["api_key_assign"]}"
CLIENT_SECRET: {SECRETS["client_secret"]}
blob = "https://acct.blob.core.windows.net/c?sv=2021&sig={SECRETS["azure_sas"]}"
conn = "DefaultEndpointsProtocol=https;AccountName=a;AccountKey={SECRETS["azure_conn"]};"
auth = "Basic {SECRETS["basic"]}"
token: {SECRETS["token_yaml"]}
{{"secret": "{SECRETS["secret_json"]}"}}
passphrase = "{SECRETS["passphrase"]}"
"""
KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    f"{SECRETS['private_key_body']}\nAnotherLineOfKeyMaterial0123456789\n"
    "-----END RSA PRIVATE KEY-----\n"
)
DOTENV_DIFF = f"""diff --git a/.env.production b/.env.production
--- a/.env.production
+++ b/.env.production
@@ -1,2 +1,3 @@
 DATABASE_URL={SECRETS["env_value_1"]}
-FEATURE=off
+FEATURE={SECRETS["env_value_2"]}
"""


def _leaks(text: str) -> list[str]:
    return [name for name, secret in SECRETS.items() if secret in text]


@pytest.mark.parametrize("mode", ["standard", "strict"])
def test_no_secret_survives(mode: str) -> None:
    r = Redactor(mode)  # type: ignore[arg-type]
    for text, path in ((FILE, "app/settings.py"), (KEY, "deploy/id_rsa"), (DOTENV_DIFF, None)):
        out = r.redact(text, path)
        assert _leaks(out.text) == [], out.text
    assert len(SECRETS) == 30


def test_a_secret_inside_a_diff_is_redacted_and_code_survives() -> None:
    diff = "".join(f"+{line}\n" for line in FILE.splitlines())
    out = Redactor().redact(diff)
    assert _leaks(out.text) == []
    assert "import os" in out.text and "client = OpenAI(api_key=" in out.text
    assert out.counts["openai_key"] == 1 and out.total >= 25


def test_same_secret_same_placeholder_and_deterministic() -> None:
    text = f"a = '{SECRETS['stripe']}'\nb = '{SECRETS['stripe']}'\nc = '{SECRETS['twilio']}'\n"
    one, two = Redactor().redact(text), Redactor().redact(text)
    assert one.text == two.text and one.sha256 == two.sha256
    assert one.text.count("[REDACTED:stripe_key#1]") == 2
    assert "[REDACTED:twilio_key#1]" in one.text


def test_strict_removes_hosts_and_ips_standard_keeps_them() -> None:
    text = "connect to api.example.com at 10.1.2.3 as ops@example.org\n"
    assert Redactor("standard").redact(text).text == text
    strict = Redactor("strict").redact(text).text
    assert "example.com" not in strict and "10.1.2.3" not in strict and "ops@" not in strict


def test_payload_is_clamped() -> None:
    out = Redactor(max_bytes=1000).redact("x = 1\n" * 1000)
    assert out.clamped and len(out.text.encode()) < 1100 and "clamped to 1000 bytes" in out.text


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="'standard' or 'strict'"):
        Redactor("lenient")  # type: ignore[arg-type]
