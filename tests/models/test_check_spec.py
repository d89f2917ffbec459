"""``check_spec`` (the intake's and the CLI's offline model check) on scripted files: a file
checked once is not parsed again while unchanged, and a changed file is checked anew."""

from __future__ import annotations

import os
from pathlib import Path

from oopav.models.registry import check_spec


def test_scripted_file_rechecked_when_it_changes(tmp_path: Path) -> None:
    script = tmp_path / "model.yaml"
    script.write_text('- \'{"kind": "finish"}\'\n')
    spec = f"scripted:{script}"
    assert check_spec(spec) is None
    assert check_spec(spec) is None  # unchanged: the cached verdict
    script.write_text("{unclosed: [\n")  # now broken (another size)
    problem = check_spec(spec)
    assert problem is not None and "not valid JSON/YAML" in problem
    # Same size, new modification time: still noticed.
    script.write_text("- 'x'\n- 'y'\n")
    assert check_spec(spec) is None
    script.write_text("{bad: [1, 2\n")
    st = script.stat()
    os.utime(script, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert "not valid JSON/YAML" in (check_spec(spec) or "")
    script.unlink()
    assert check_spec(spec) == f"scripted model file {script} does not exist"
