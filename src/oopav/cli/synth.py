"""``oopav synth``: rules by example from the command line (docs/synth.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

EXIT_NO_RULE = 3


def load_examples(path: Path) -> tuple[list[dict[str, Any]], str | None]:
    """Examples from a JSON/YAML file: a list of ``{before, after, language?, path?}``, or a
    mapping with ``examples`` (and optionally ``language``). ``before_file`` / ``after_file``
    name files relative to the examples file. ``{before, negative: true}`` (or an ``after``
    equal to ``before``) is a negative: code the rule must leave unchanged. ``partial: true``:
    the user edited some sites of the file and left the others for the rule; its unchanged
    code is not a negative, but for the 1-based lines in ``keep`` (docs/synth.md § Partial
    examples)."""
    import yaml  # here, not at the top: `oopav synth` starts in fewer imports (issue 28)

    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = json.loads(raw) if path.suffix == ".json" else yaml.safe_load(raw)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        from oopav.config import yaml_error  # pydantic: only on this error path

        raise click.ClickException(f"{path} is not valid JSON/YAML: {yaml_error(exc)}") from None
    language = None
    if isinstance(data, dict):
        language = data.get("language")
        data = data.get("examples")
    if not isinstance(data, list) or not data:
        raise click.ClickException(
            f"{path} must hold a non-empty list of examples ({{before, after, language?, path?}}) "
            "or a mapping with `examples`"
        )
    out: list[dict[str, Any]] = []
    for i, item in enumerate(data, 1):
        if not isinstance(item, dict):
            raise click.ClickException(f"{path}: example {i} must be a mapping")
        item = dict(item)
        if item.pop("negative", False) is True and "after" not in item:
            item["after"] = item.get("before")  # code the rule must leave unchanged
        for side in ("before", "after"):
            ref = item.pop(f"{side}_file", None)
            if ref is not None and side not in item:
                try:
                    item[side] = (path.parent / str(ref)).read_text(encoding="utf-8")
                except OSError as exc:
                    raise click.ClickException(
                        f"{path}: example {i}: cannot read {ref}: {exc.strerror}"
                    ) from None
            if not isinstance(item.get(side), str):
                raise click.ClickException(f"{path}: example {i} needs a string `{side}`")
        if "partial" in item and not isinstance(item["partial"], bool):
            raise click.ClickException(
                f"{path}: example {i}: `partial` must be true or false, not {item['partial']!r}"
            )
        keep = item.get("keep", [])
        if not isinstance(keep, list) or not all(
            isinstance(k, int) and not isinstance(k, bool) for k in keep
        ):
            raise click.ClickException(
                f"{path}: example {i}: `keep` must be a list of line numbers, not {keep!r}"
            )
        if "keep" in item:
            item["keep"] = tuple(keep)
        unknown = set(item) - {"before", "after", "language", "path", "partial", "keep"}
        if unknown:
            raise click.ClickException(
                f"{path}: example {i} has unknown fields: {', '.join(sorted(unknown))}"
            )
        out.append(item)
    return out, language


def register(cli: click.Group) -> None:
    @cli.command("synth")
    @click.argument("examples", required=False, type=click.Path(path_type=Path))
    @click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print {rules, examples_reproduced, ambiguous, notes}.",
    )
    @click.option(
        "--language", help="Language of examples that name no path (python, javascript, ...)."
    )
    @click.option(
        "--apply",
        "apply_dir",
        type=click.Path(file_okay=False, exists=True, path_type=Path),
        help="Apply the rules to DIR and print a match report (files, sites, diff).",
    )
    @click.option("--write", is_flag=True, help="With --apply: write the rewritten files.")
    @click.option(
        "--fit",
        is_flag=True,
        help="With --apply --write: when the learned rules match nothing in DIR, write what "
        "the rule fitted to DIR rewrites (a dry run always shows it).",
    )
    @click.option(
        "--split",
        "split_dir",
        type=click.Path(file_okay=False, path_type=Path),
        help="Also write each rule to its own file DIR/NN-ID.yml, to run one `ast-grep scan` "
        "per file in order (one scan of a multi-rule file applies every rule to the original "
        "text at once).",
    )
    @click.option(
        "--from-git",
        "from_git",
        nargs=2,
        metavar="REPO REV",
        help="Learn from commit REV in REPO: one rule per group of same-shaped changes "
        "(--by hunk: one per hunk, verified on the parent tree).",
    )
    @click.option(
        "--by",
        type=click.Choice(["group", "hunk"]),
        default="group",
        show_default=True,
        help="With --from-git: group the commit's changes by their shape, or one rule per hunk.",
    )
    def synth(
        examples: Path | None,
        as_json: bool,
        language: str | None,
        apply_dir: Path | None,
        write: bool,
        fit: bool,
        from_git: tuple[str, str] | None,
        by: str,
        split_dir: Path | None,
    ) -> None:
        """Learn ast-grep rewrite rules from before/after EXAMPLES (JSON or YAML).

        Prints a rule file that `ast-grep scan --rule FILE --update-all DIR` accepts. When no
        rule reproduces every example, exits 3 with one line saying which example and why."""
        if from_git:
            if by == "group":
                _from_git_groups(Path(from_git[0]), from_git[1], as_json)
            else:
                _from_git(Path(from_git[0]), from_git[1], as_json)
            return
        if examples is None:
            raise click.UsageError("give an EXAMPLES file, or --from-git REPO REV")
        if write and apply_dir is None:
            raise click.UsageError("--write needs --apply DIR")
        if fit and not write:
            raise click.UsageError("--fit needs --apply DIR --write (a dry run always fits)")
        from oopav.synth import SynthesisError, synthesize

        items, file_language = load_examples(examples)
        try:
            result = synthesize(items, language=language or file_language)
        except SynthesisError as exc:
            click.echo(f"oopav synth: no rule: {exc.reason}", err=True)
            sys.exit(EXIT_NO_RULE)
        except ValueError as exc:  # an unknown language, and such
            click.echo(f"oopav synth: {exc}", err=True)
            sys.exit(2)
        report = None
        if apply_dir is not None:
            texts = _read_files(apply_dir, result.language)
            # As learned (a rule set that matches nothing writes nothing either way).
            report = _apply(result, apply_dir, write, texts)
            if texts and not report["files"]:
                # Nothing matches in DIR as learned: the least generalisation that still
                # reproduces every example and does something there (synth/target.py). A dry
                # run shows it; --write writes it only with --fit (the examples do not show it).
                try:
                    fitted = synthesize(items, language=language or file_language, target=texts)
                except (SynthesisError, ValueError):
                    fitted = result  # as learned: the report says it matches nothing
                if any(n.startswith("fitted to the repository") for n in fitted.notes):
                    if fit or not write:
                        result = fitted
                        report = _apply(result, apply_dir, write, texts)
                    else:
                        n = sum(fitted.apply(t)[1] for _, t in texts)
                        report["fitted_not_written"] = (
                            f"a rule fitted to {apply_dir} (the least generalisation that still "
                            f"reproduces every example) would rewrite {n} site(s); not written: "
                            "review it with a dry run (no --write), then pass --fit to write it"
                        )
        if split_dir is not None:
            written = write_split(result, split_dir)
            click.echo(_split_hint(written), err=True)
        if as_json:
            data = result.to_json()
            if report is not None:
                data["apply"] = report
            click.echo(json.dumps(data, indent=2))
            return
        for note in result.notes:
            click.echo(f"# note: {note}")
        click.echo(result.to_yaml(), nl=False)
        if report is not None:
            click.echo(_format_apply(report, write), err=True)


def write_split(result: Any, folder: Path) -> list[Path]:
    """One file per rule, numbered in the order they must be applied. Rules learned one after
    another (each on the text the earlier ones produced, a deletion and its companions) can
    read otherwise when one `ast-grep scan` applies them all to the original text at once; one
    scan per file, in order, gives what `oopav synth --apply` gives."""
    import re

    try:
        folder.mkdir(parents=True, exist_ok=True)
        stale = sorted(folder.glob("[0-9][0-9]-*.yml"))
        for old in stale:  # an earlier split's files would run with these
            old.unlink()
        written: list[Path] = []
        for i, rule in enumerate(result.rules, 1):
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", rule.id).strip("-") or "rule"
            path = folder / f"{i:02d}-{slug}.yml"
            path.write_text(rule.to_yaml(), encoding="utf-8")
            written.append(path)
    except OSError as exc:
        raise click.ClickException(f"cannot write the rules to {folder}: {exc.strerror}") from None
    return written


def _split_hint(written: list[Path]) -> str:
    folder = written[0].parent if written else Path(".")
    lines = [f"{len(written)} rule file(s) in {folder}; apply them one at a time, in order:"]
    lines.append(
        f'  for f in {folder}/[0-9][0-9]-*.yml; do ast-grep scan --rule "$f" --update-all SRC; done'
    )
    lines.append("  (a deletion rule may need its scan run again until nothing changes)")
    return "\n".join(lines)


def _read_files(root: Path, language: str) -> list[tuple[str, str]]:
    """(relative path, text) of DIR's files in ``language`` (unreadable ones left out)."""
    from oopav.sandbox.astgrep import files_for

    texts: list[tuple[str, str]] = []
    for rel in files_for(root, ["."], language):
        try:
            texts.append((rel, (root / rel).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    return texts


def _apply(result: Any, root: Path, write: bool, texts: list[tuple[str, str]]) -> dict[str, Any]:
    from oopav.sandbox.apply import FileChange, unified_diff

    files: list[dict[str, Any]] = []
    changes = []
    for rel, before in texts:
        path = root / rel
        after, sites = result.apply(before)
        if after == before:
            continue
        files.append({"path": rel, "sites": sites})
        changes.append(FileChange(path=rel, before=before, after=after))
        if write:
            path.write_text(after, encoding="utf-8")
    report = {
        "files": files,
        "sites": sum(f["sites"] for f in files),
        "diff": unified_diff(changes),
        "written": write,
    }
    if not files and result.rules:
        from oopav.synth.diagnose import explain

        r = result.rules[0]
        report["unmatched"] = explain(r.rule, r.language, texts, str(root))
    return report


def _format_apply(report: dict[str, Any], write: bool) -> str:
    lines = [f"{f['path']}: {f['sites']} site(s)" for f in report["files"]]
    verb = "rewritten" if write else "would be rewritten (dry run; --write to write)"
    lines.append(f"{len(report['files'])} file(s), {report['sites']} site(s) {verb}")
    if report.get("unmatched"):
        lines.append(report["unmatched"])
    if report.get("fitted_not_written"):
        lines.append(report["fitted_not_written"])
    if report["diff"]:
        lines.append(report["diff"].rstrip("\n"))
    return "\n".join(lines)


def _from_git(repo: Path, rev: str, as_json: bool) -> None:
    from oopav.synth.gitlearn import format_report, learn_commit

    try:
        results = learn_commit(repo, rev)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(
            json.dumps(
                {
                    "hunks": [r.to_json() for r in results],
                    "learnable": sum(1 for r in results if r.learnable),
                    "total": len(results),
                },
                indent=2,
            )
        )
    else:
        click.echo(format_report(results))


def _from_git_groups(repo: Path, rev: str, as_json: bool) -> None:
    from oopav.synth.groups import format_groups, learn_groups

    try:
        results = learn_groups(repo, rev)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        data = {
            "groups": [g.to_json() for g in results],
            "whole": sum(1 for g in results if g.whole),
            "sites": sum(g.sites for g in results if not g.reordering),
            "reproduced": sum(g.reproduced for g in results),
        }
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(format_groups(results))
