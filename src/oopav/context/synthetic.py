"""Generated repositories and session streams for the context tests and benchmarks.

The generator is seeded and has no randomness of its own, so a given ``(n_files, seed)`` always
writes the same bytes: a benchmark run and a test see the same repository. Files reference
symbols defined in earlier files of the same language with a bias toward the first few, which
gives the reference graph a few hubs, like a real code base (utilities imported everywhere).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from oopav.events.catalog import Event, PlanProposed, PlanStep, SessionCompleted, TaskSubmitted
from oopav.events.clock import ManualClock
from oopav.events.factory import caused_event, root_event
from oopav.events.ids import IdGenerator

LANGUAGES: tuple[str, ...] = ("python", "javascript", "typescript", "java", "go", "rust")

_VERBS = ("parse", "load", "build", "render", "fetch", "store", "merge", "split", "check", "apply")
_NOUNS = ("invoice", "order", "user", "report", "token", "config", "session", "record", "page")


@dataclass
class _File:
    path: str
    language: str
    index: int
    functions: list[str] = field(default_factory=list)
    type_name: str = ""


def _snake(i: int, k: int) -> str:
    return f"{_VERBS[(i + k) % len(_VERBS)]}_{_NOUNS[(i * 3 + k) % len(_NOUNS)]}_{i}_{k}"


def _camel(i: int, k: int) -> str:
    head, *rest = _snake(i, k).split("_")
    return head + "".join(part.capitalize() for part in rest)


def _pascal(name: str) -> str:
    return name[0].upper() + name[1:]


def _plan(n_files: int) -> list[_File]:
    files: list[_File] = []
    for i in range(n_files):
        lang = LANGUAGES[i % len(LANGUAGES)]
        n_funcs = 2 + i % 3
        if lang == "python":
            path = f"py/pkg{i % 4}/mod_{i}.py"
            funcs = [_snake(i, k) for k in range(n_funcs)]
        elif lang == "javascript":
            path = f"web/js/module{i}.js"
            funcs = [_camel(i, k) for k in range(n_funcs)]
        elif lang == "typescript":
            path = f"web/ts/service{i}.ts"
            funcs = [_camel(i, k) for k in range(n_funcs)]
        elif lang == "java":
            path = f"java/src/com/example/Component{i}.java"
            funcs = [_camel(i, k) for k in range(n_funcs)]
        elif lang == "go":
            path = f"go/pkg{i % 3}/unit{i}.go"
            funcs = [_pascal(_camel(i, k)) for k in range(n_funcs)]
        else:
            path = f"rust/src/part{i}.rs"
            funcs = [_snake(i, k) for k in range(n_funcs)]
        files.append(_File(path, lang, i, funcs, f"Model{i}"))
    return files


def _targets(rng: random.Random, files: list[_File], me: _File, count: int) -> list[_File]:
    pool = [f for f in files if f.language == me.language and f.index < me.index]
    if not pool:
        return []
    # Squaring a uniform draw biases toward the first files: hubs emerge.
    return [pool[int(len(pool) * rng.random() ** 2)] for _ in range(count)]


def _render(f: _File, calls: list[tuple[_File, str]], uses: list[_File]) -> str:
    t = f.type_name
    if f.language == "python":
        lines = [f'"""Module {f.index}."""', ""]
        lines += [f"from py.pkg{c.index % 4}.mod_{c.index} import {name}" for c, name in calls]
        lines += ["", f"LIMIT_{f.index} = {f.index}", "", ""]
        lines += [
            f"class {t}:",
            f"    def describe_{f.index}(self) -> str:",
            "        return 'x'",
            "",
        ]
        for k, name in enumerate(f.functions):
            body = f"    return {calls[k % len(calls)][1]}(value)" if calls else "    return value"
            lines += ["", f"def {name}(value: int) -> int:", body, ""]
        return "\n".join(lines) + "\n"
    if f.language in ("javascript", "typescript"):
        ann = ": number" if f.language == "typescript" else ""
        lines = [
            f"import {{ {name} }} from './{'module' if f.language == 'javascript' else 'service'}{c.index}';"
            for c, name in calls
        ]
        lines += ["", f"export const LIMIT{f.index} = {f.index};", ""]
        if f.language == "typescript":
            lines += [f"export interface Shape{f.index} {{", f"  size{ann};", "}", ""]
        lines += [
            f"export class {t} {{",
            f"  describe{f.index}() {{",
            "    return 'x';",
            "  }",
            "}",
            "",
        ]
        for k, name in enumerate(f.functions):
            body = f"  return {calls[k % len(calls)][1]}(value);" if calls else "  return value;"
            lines += [f"export function {name}(value{ann}){ann} {{", body, "}", ""]
        return "\n".join(lines)
    if f.language == "java":
        lines = ["package com.example;", "", f"public class Component{f.index} {{"]
        for u in uses:
            lines.append(f"    private Component{u.index} dep{u.index} = new Component{u.index}();")
        for k, name in enumerate(f.functions):
            lines.append(f"    public int {name}(int value) {{")
            if calls:
                c, cname = calls[k % len(calls)]
                lines.append(f"        return dep{c.index}.{cname}(value);")
            else:
                lines.append("        return value;")
            lines.append("    }")
        lines += ["}", ""]
        return "\n".join(lines)
    if f.language == "go":
        lines = [f"package pkg{f.index % 3}", "", f"type {t} struct {{", "\tSize int", "}", ""]
        for k, name in enumerate(f.functions):
            lines.append(f"func {name}(value int) int {{")
            if calls:
                lines.append(f"\treturn {calls[k % len(calls)][1]}(value)")
            else:
                lines.append("\treturn value")
            lines += ["}", ""]
        lines += [f"func (m *{t}) Describe{f.index}() string {{", '\treturn "x"', "}", ""]
        return "\n".join(lines)
    lines = [f"use crate::part{c.index}::{name};" for c, name in calls]
    lines += [
        "",
        f"pub const LIMIT_{f.index}: i32 = {f.index};",
        "",
        f"pub struct {t} {{",
        "    size: i32,",
        "}",
        "",
    ]
    for k, name in enumerate(f.functions):
        lines.append(f"pub fn {name}(value: i32) -> i32 {{")
        lines.append(f"    {calls[k % len(calls)][1]}(value)" if calls else "    value")
        lines += ["}", ""]
    return "\n".join(lines)


def generate_repo(root: str | Path, n_files: int = 100, *, seed: int = 0) -> list[str]:
    """Write ``n_files`` source files under ``root``; returns their relative paths, sorted."""
    rng = random.Random(seed)
    root = Path(root)
    files = _plan(n_files)
    for f in files:
        targets = _targets(rng, files, f, 2 + f.index % 3)
        calls: list[tuple[_File, str]] = []
        for t in targets:
            calls.append((t, t.functions[rng.randrange(len(t.functions))]))
        uses = sorted({c.index: c for c, _ in calls}.values(), key=lambda x: x.index)
        out = root / f.path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(_render(f, calls, uses), encoding="utf-8")
    return sorted(f.path for f in files)


_TASKS = (
    "rename {a} to {b} across the repo and keep the tests green",
    "add type hints to {a} in {path}",
    "fix the off-by-one error in {a} when the {noun} list is empty",
    "replace the deprecated call to {a} with {b} in {path}",
    "extract the {noun} validation from {a} into a new function {b}",
    "add a regression test for {a} returning None on a missing {noun}",
)


def session_events(
    n_sessions: int, *, seed: int = 0, concurrency: int = 3
) -> list[tuple[int, Event]]:
    """A stream of ``n_sessions`` sessions as ``(sequence, event)`` pairs: each is submitted,
    planned and completed, and ``concurrency`` sessions are interleaved at a time so the fold
    has to keep several sessions' pieces pending. About two in three succeed."""
    rng = random.Random(seed)
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC), step=0.001)
    ids = IdGenerator(clock, seed=seed)
    out: list[tuple[int, Event]] = []
    for start in range(0, n_sessions, concurrency):
        batch = range(start, min(n_sessions, start + concurrency))
        submitted: list[TaskSubmitted] = []
        for i in batch:
            a, b = _snake(i % 97, rng.randrange(4)), _snake(rng.randrange(97), 4)
            path = f"py/pkg{i % 4}/mod_{i % 97}.py"
            text = _TASKS[rng.randrange(len(_TASKS))].format(
                a=a, b=b, path=path, noun=_NOUNS[rng.randrange(len(_NOUNS))]
            )
            submitted.append(
                root_event(
                    TaskSubmitted,
                    handler="intake",
                    clock=clock,
                    ids=ids,
                    instruction=text,
                    repo="/srv/repo",
                    mission="synthetic",
                )
            )
        plans = [
            caused_event(
                PlanProposed,
                task,
                handler="planner",
                clock=clock,
                steps=[
                    PlanStep(id=1, description="locate the definition", files=[f"mod_{k}.py"]),
                    PlanStep(id=2, description="apply the change and run the tests"),
                ],
                files=[f"mod_{k}.py"],
            )
            for k, task in enumerate(submitted)
        ]
        done = [
            caused_event(
                SessionCompleted,
                plan,
                handler="verifier",
                clock=clock,
                outcome="success" if rng.random() < 0.67 else "failed",
                summary="done",
            )
            for plan in plans
        ]
        for event in [*submitted, *plans, *done]:
            out.append((len(out) + 1, event))
    return out
