"""The words and paths the orient rules read (``rules.orient``): keyword patterns per category
and risk, the shapes of secrets and credential stores, and how a path is classified. Kept
apart from the rules so the vocabulary can grow without touching the precedence logic."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Literal


def _words(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.IGNORECASE)


# --- vocabulary ----------------------------------------------------------------------------

SECURITY_RE = _words(
    r"security",
    r"secure",
    r"vulnerab\w*",
    r"exploit\w*",
    r"cve-\d+",
    r"xss",
    r"csrf",
    r"ssrf",
    r"(?:sql|command|code|shell|script|header|ldap|template|prompt) injection",
    r"sanitiz\w*",
    r"crypto\w*",
    r"encrypt\w*",
    r"decrypt\w*",
    r"cipher\w*",
    r"tls",
    r"ssl",
    r"certificates?",
    r"secrets?",
    r"credentials?",
    r"passwords?",
    r"api[ _-]?keys?",
    r"private keys?",
    r"hmac",
    r"permissions?",
    r"privileges?",
    r"access control",
)
AUTH_RE = _words(
    r"auth",
    r"authn",
    r"authz",
    r"authenticat\w*",
    r"authoriz\w*",
    r"login",
    r"logout",
    r"sign[ -]?(?:in|up|on)",
    r"jwt",
    r"oauth\w*",
    r"sso",
    r"saml",
    r"rbac",
)
SCHEMA_RE = _words(
    r"schemas?",
    r"migrations?",
    r"migrate",
    r"alter table",
    r"(?:drop|add|rename) (?:table|column)",
    r"database",
    r"ddl",
)
MIGRATION_RE = _words(
    r"migrations?",
    r"migrate",
    r"alter table",
    r"drop (?:table|column)",
    r"(?:database|db) schema",
)
REFACTOR_RE = _words(
    r"rename\w*",
    r"refactor\w*",
    r"extract",
    r"inline",
    r"move",
    r"restructure",
    r"reorgani[sz]e",
    r"dedup\w*",
    r"split",
    r"simplify",
    r"clean ?up",
)
TESTS_RE = re.compile(
    r"\b(?:add|write|create|extend|improve|increase|expand)\b(?:\s+\w+){0,3}?\s+"
    r"(?:tests?|test cases?|coverage)\b|\btest coverage\b|\bflaky tests?\b",
    re.IGNORECASE,
)
DOCS_RE = _words(
    r"readme",
    r"documentation",
    r"docs",
    r"docstrings?",
    r"changelog",
    r"user guide",
    r"tutorial",
)
CONFIG_RE = _words(
    r"pyproject(?:\.toml)?",
    r"setup\.cfg",
    r"tox\.ini",
    r"dockerfile",
    r"docker-compose",
    r"makefile",
    r"ci (?:config\w*|pipeline|workflow)",
    r"github actions",
    r"editorconfig",
    r"gitignore",
    r"pre-commit",
    r"dependabot",
    r"(?:lint|linter|ruff|mypy) (?:config\w*|rules?|settings)",
    r"tsconfig(?:\.json)?",
    r"package\.json",
)
FEATURE_VERBS = (
    "add",
    "implement",
    "create",
    "support",
    "introduce",
    "build",
    "write",
    "allow",
    "enable",
)
FEATURE_RE = _words(*FEATURE_VERBS, r"new")
BUGFIX_RE = _words(
    r"fix\w*",
    r"bugs?",
    r"broken",
    r"crash\w*",
    r"errors?",
    r"exceptions?",
    r"fail\w*",
    r"regressions?",
    r"incorrect\w*",
    r"wrong",
    r"repair",
    r"resolve",
    r"hangs?",
)
NEW_SYMBOL_RE = re.compile(
    r"\b(?:add|create|implement|introduce|write|define|new)\b[^.\n]{0,40}?"
    r"\b(?:function|method|class|type|struct|enum|interface|trait|endpoint|module|dataclass)\b",
    re.IGNORECASE,
)
EXPLICIT_TESTS_RE = re.compile(
    r"\b(?:keep|make|ensure|leave)\b[^.\n]{0,20}?\btests?\b[^.\n]{0,12}?"
    r"\b(?:green|pass\w*|working|succeed\w*)\b|\btests? (?:must|should) (?:still )?pass\b",
    re.IGNORECASE,
)
SCOPE_RE = _words(
    r"everywhere",
    r"across",
    r"throughout",
    r"all (?:files|modules|call ?sites|callers|usages|occurrences|uses)",
    r"(?:whole|entire) (?:repo\w*|codebase|project)",
    r"every (?:file|module|call ?site|caller|usage|occurrence|use)",
)
VAGUE_RE = _words(
    r"somehow",
    r"something",
    r"stuff",
    r"things?",
    r"better",
    r"nicer",
    r"improve",
    r"whatever",
    r"etc",
    r"fix it",
    r"make it work",
)
# A concrete anchor: a backticked or quoted name, a path, a snake_case / CamelCase / call name.
ANCHOR_RE = re.compile(
    r"`[^`]+`|'[^']+'|\"[^\"]+\"|\w+/\w+|\w+\.\w{1,5}\b|\b[a-z]+_\w+|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z]\w*|\w+\(\)"
)

# Black: the instruction asks for something destructive or exfiltrating. Each is (label, regex).
# Reading credentials or disabling the sandbox is black only as an order to the agent (a verb
# that starts a clause: "Print ~/.ssh/id_rsa", "… and disable the sandbox"); a task about code
# that handles keys ("add a function that reads private keys") or docs about the sandbox are
# not orders, and security words make them red instead.
_CLAUSE = r"(?:^|[.;:!?,]\s*|\b(?:and|then|please|also|now|just|first|finally)\s+)"
_CRED_STORE = (
    r"(?:id_rsa|id_ed25519|id_ecdsa|ssh keys?|private keys?|~/\.ssh|\.ssh/|~/\.aws|"
    r"\.aws/credentials|\.netrc|\.pgpass|credentials? files?|keychain|keyring|"
    # .env itself, not its committed templates (.env.example, …).
    r"\.env\b(?!\.(?:example|sample|template|dist))(?: file)?)"
)
_SECRET_OBJ = (
    r"(?:credentials?|secrets?|passwords?|api[ _-]?keys?|access tokens?|auth tokens?|tokens?)"
    r"(?!\s*(?:reset|field|input|form|hash\w*|strength|policy|validat\w*|check\w*))"
)
_READ_VERBS = (
    r"(?:read|cat|print|show|dump|display|output|reveal|send|upload|post|leak|copy|email|steal)"
)
_LEAK_VERBS = r"(?:print|dump|reveal|leak|send|upload|post|email|steal)"
BLACK_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "deletes the repository or the file system",
        re.compile(
            r"\brm\s+-(?:rf|fr|r)\b|\b(?:delete|remove|wipe|erase|destroy|nuke)\s+"
            r"(?:the\s+|this\s+|your\s+)?(?:whole\s+|entire\s+)?(?:repo\w*|codebase|project|"
            r"git history|\.git\b|home directory|file ?system|disk)\b|"
            r"\b(?:delete|remove|wipe|erase)\s+(?:all|every)\s+(?:the\s+)?files\b",
            re.IGNORECASE,
        ),
    ),
    (
        "reads or exfiltrates credentials",
        re.compile(
            r"\bexfiltrat\w*"
            rf"|{_CLAUSE}{_READ_VERBS}\b[^.\n]{{0,40}}?{_CRED_STORE}"
            rf"|{_CLAUSE}{_LEAK_VERBS}\b[^.\n]{{0,30}}?\b(?:the |all |your |my |our )*{_SECRET_OBJ}",
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
    (
        "disables the sandbox or the capability checks",
        re.compile(
            rf"{_CLAUSE}(?:disable|bypass|escape|turn off|circumvent|break out of|get around|"
            r"remove|skip)\b[^.\n]{0,30}?\b(?:sandbox\w*|bwrap|bubblewrap|capability checks?|"
            r"permission checks?|seccomp|apparmor|selinux)\b",
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
    (
        "force-pushes or rewrites published history",
        re.compile(
            r"\bforce[- ]?push\w*|\bpush\b[^.\n]{0,30}?(?:--force\b|\s-f\b)|"
            r"\brewrite (?:the )?(?:git |published |remote )?history\b",
            re.IGNORECASE,
        ),
    ),
)

DOC_SUFFIXES = frozenset({".md", ".rst", ".txt", ".adoc"})
DOC_NAMES = frozenset({"readme", "license", "changelog", "authors", "contributing", "notice"})
CONFIG_SUFFIXES = frozenset({".toml", ".yaml", ".yml", ".ini", ".cfg", ".json", ".conf"})
CONFIG_NAMES = frozenset(
    {"dockerfile", "makefile", ".gitignore", ".editorconfig", ".dockerignore", ".gitattributes"}
)
_PATH_SUFFIXES = (
    "py|pyi|js|mjs|cjs|jsx|ts|tsx|rs|go|java|c|h|cc|cpp|hpp|rb|md|rst|txt|adoc|toml|yaml|yml|"
    "json|cfg|ini|conf|sh|html|css|sql|lock"
)
_PATH_RE = re.compile(
    r"(?<![\w/.:-])((?:[\w.-]+/)+[\w.-]*|[\w.-]*[\w-]\.(?:" + _PATH_SUFFIXES + r"))(?![\w/])"
)


# --- paths ---------------------------------------------------------------------------------


def mentioned_paths(instruction: str) -> list[str]:
    """File or directory paths named in an instruction (``webtool/client.py``, ``README.md``,
    ``src/``), in order of appearance, without duplicates; URLs are ignored. The orient
    handler checks which exist to fill ``mentioned_existing`` / ``mentioned_missing``."""
    without_urls = re.sub(r"\b[a-z][a-z0-9+.-]*://\S+", " ", instruction, flags=re.IGNORECASE)
    seen: dict[str, None] = {}
    for match in _PATH_RE.finditer(without_urls):
        path = match.group(1).rstrip(".")
        if path and path not in ("/", ".", ".."):
            seen.setdefault(path, None)
    return list(seen)


def _file_class(path: str) -> Literal["doc", "config", "test", "code"]:
    pure = PurePosixPath(path)
    name = pure.name.lower()
    stem = name.split(".", 1)[0]
    if pure.suffix.lower() in DOC_SUFFIXES or stem in DOC_NAMES or "docs" in pure.parts[:-1]:
        return "doc"
    if pure.suffix.lower() in CONFIG_SUFFIXES or name in CONFIG_NAMES:
        return "config"
    parts = {p.lower() for p in pure.parts[:-1]}
    if (
        parts & {"tests", "test", "__tests__", "spec"}
        or name.startswith("test_")
        or (re.search(r"(_test\.\w+|\.(test|spec)\.\w+)$", name))
    ):
        return "test"
    return "code"
