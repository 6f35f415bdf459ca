"""Chapter 04: exercise 04's given part: the three candidate calls of the worked example, priced.

``choice_candidates()`` returns ``(read, edit, shell, refusal)``: the read of
the build script (value 8, cost 1, risk 1), the eager edit priced from the
``edit_file`` contract (value 11), the shell shortcut (value 14) whose
legality is what the legality check says about a call to an undeclared tool,
and that check's first error, so the notebook can say why it is illegal.
Nothing is run: only prices and the legality verdict are read.
"""
from __future__ import annotations

from toolkit.kernel import Option, ToolError, check, request
from toolkit.files import edit_file_contract
from course.worlds import AGENT, SCENARIO


def choice_candidates() -> tuple[Option, Option, Option, ToolError]:
    """The read, the eager edit and the (illegal) shell shortcut of Chapter 4, and why the shortcut is illegal."""
    read = Option("read the script", value=8, cost=1, risk=1)
    edit = Option.from_contract(edit_file_contract(SCENARIO), value=11, name="eager edit")
    sed = request("shell", {"cmd": "sed -i 's/json.loads(.*/load_manifest(BOOK_DIR)/' scripts/build_site.py"})
    verdict = check(sed, None, AGENT, declared=("edit_file", "inspect_exports"))
    shell = Option("shell: sed -i", value=14, cost=1, risk=2, legal=verdict.legal)
    return read, edit, shell, verdict.errors[0]
