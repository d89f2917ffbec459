"""Wave 3s of issue 26: `import {…}` -> `import type {…}` learned as "any import whose names
the file uses as types only" (typescript-eslint's consistent-type-imports), not the example's
module (docs/synth.md § Imports used as types only)."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules

COMBINE = """import { StateCreator, StoreMutatorIdentifier } from '../vanilla'

type Write<T, U> = Omit<T, keyof U> & U

export const combine = <T extends object, U extends object>(
  initialState: T,
  create: StateCreator<T, [], [], U>,
): StateCreator<Write<T, U>, [], []> => (...a) => Object.assign({}, initialState, create(...a))
"""

REDUX = """import { StateCreator, StoreMutatorIdentifier } from '../vanilla'
import { NamedSet } from './devtools'
import { create } from './react'
import type { Draft } from 'immer'
import { Options } from './options'

type Action = { type: unknown }
export const redux = (set: NamedSet<unknown>, opts: typeof Options): StateCreator<Draft> =>
  create(set) as unknown as StoreMutatorIdentifier
"""


def test_an_import_used_as_types_only_gains_type_whatever_its_module() -> None:
    """zustand 0f4913c7: two examples import from '../vanilla' and no import of theirs is
    kept, so nothing told the rule apart from `import … from '../vanilla'` and the held-out
    `import { NamedSet } from './devtools'` was left. Now any import whose names the file
    uses as types only (`typeof X` in a type is a type use), never one with a value use
    (`create(set)`) or one that is `import type` already."""
    after = COMBINE.replace("import {", "import type {", 1)
    result = synthesize([Example(COMBINE, after, path="src/middleware/combine.ts")])
    assert result.apply(COMBINE)[0] == after
    got, _ = result.apply(REDUX)
    want = (
        REDUX.replace("import { StateCreator", "import type { StateCreator")
        .replace("import { NamedSet }", "import type { NamedSet }")
        .replace("import { Options }", "import type { Options }")
    )
    assert got == want
    files = [("combine.ts", COMBINE), ("redux.ts", REDUX)]
    found = check_rules(result.rules, files, "typescript") + check_file(
        result.rules, files, "typescript"
    )
    assert not found, [f.line() for f in found]
