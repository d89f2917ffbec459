"""Wave 3s of issue 26: missing semicolons (docs/synth.md § Missing semicolons) learned from an
example whose only statements are `import` and `export … from` lines, and statements that
hold a template literal over several lines."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules

EXAMPLE = "import './src/styles/index.css'\n\nexport * from './gatsby-ssr'\n"

HELD = """import React from 'react'

export const query = graphql`
  query {
    site { title }
  }
`

export const Demo = () => {
  const code = `import { atom } from 'jotai'
const countAtom = atom(0)
`
  const other = `one line ${code}`

  return (
    <pre>{code}</pre>
  )
}

export default function Page() {
  return null
}

export { Demo as Default }
"""

WANT = """import React from 'react';

export const query = graphql`
  query {
    site { title }
  }
`;

export const Demo = () => {
  const code = `import { atom } from 'jotai'
const countAtom = atom(0)
`
  const other = `one line ${code}`;

  return (
    <pre>{code}</pre>
  );
};

export default function Page() {
  return null;
}

export { Demo as Default };
"""


def test_semicolons_learned_from_import_and_re_export_lines_reach_every_statement() -> None:
    """jotai dfcf2c77 (149 held-out sites): the example gains `;` on an `import` and an
    `export * from` line only. `export` was outside the statement family, so no semicolon rule
    was tried and the literal lines reached nothing. Now the forms of `export` that end with
    `;` are in the family (`export * from`, `export { … }`, `export default <value>`), not
    `export function` or `export default function`. A nested statement holding a template
    literal over lines is left alone: `$A;` would re-indent the literal's lines (its text);
    a top-level one stands at column 0, where nothing moves."""
    after = EXAMPLE.replace("css'", "css';").replace("ssr'", "ssr';")
    result = synthesize([Example(EXAMPLE, after, path="gatsby-browser.js")])
    assert result.apply(EXAMPLE)[0] == after
    got, _ = result.apply(HELD)
    assert got == WANT
    # Each rule alone, in the real ast-grep CLI, rewrites what it does in process. (The whole
    # rule file at once reaches the outermost statements only, as for trailing commas: the
    # `follow_up: nested` copies are for the loop, one action each.)
    files = [("gatsby-browser.js", EXAMPLE), ("demo.js", HELD)]
    found = check_rules(result.rules, files, "javascript")
    assert not found, [f.line() for f in found]
    assert not check_file(result.rules, files[:1], "javascript")
