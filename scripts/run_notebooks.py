"""Execute notebooks in place, so that what they store is exactly what a fresh run prints.

    python scripts/run_notebooks.py                       # every notebook in notebooks/ and solutions/
    python scripts/run_notebooks.py notebooks/02_*.ipynb  # just these

Each notebook runs top to bottom in a fresh ``python3`` kernel of *this* interpreter
(whatever kernelspecs the machine has), with its own folder as the working directory
and a timeout per cell. The stored result is made deterministic, so re-running an
unchanged notebook (with the same Python) gives a byte-identical file and a clean ``git diff``:

* execution counts run 1, 2, 3, ... (a fresh kernel, cells in order);
* no timing metadata (nbclient's per-cell timestamps are not recorded);
* widget state is stored with the notebook, and each widget view beside its plain-text form,
  so a page opened (or reloaded) before its kernel has run shows the panels as they were left
  rather than a ``VBox(children=...)`` line; the model ids the kernel draws at random are
  replaced by ids made from each model's place in the run (the n-th model made, every run);
* adjacent pieces of the same stream are joined (how print output is split into
  messages depends on timing);
* ``language_info`` is stored exactly as the kernel reported it, Python version included:
  JupyterLab writes the kernel's ``language_info`` into a notebook as soon as the kernel
  connects, and a notebook that stored anything else shows the unsaved-changes dot before
  anyone touched it (a kernel of another Python version still changes it);
* authoring-tool metadata is dropped;
* cell ids are derived from each cell's own content, so converting the same source again
  (jupytext makes new random ids every time) changes nothing.

A notebook with an error in any cell is not written, and the script exits with 1.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("notebooks", "solutions")
KERNEL_NAME = "python3"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": KERNEL_NAME}
KERNEL_START_TIMEOUT = 120  # seconds; as pytest's --nbval-kernel-startup-timeout (a busy machine)
CELL_TIMEOUT = 300  # seconds; the same as pytest's --nbval-cell-timeout (a packaged-model cell on a busy machine)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _kernel_manager_class() -> type:
    """An AsyncKernelManager whose ``python3`` is always this interpreter's ipykernel.

    A user- or system-wide ``python3`` kernelspec may point at another Python;
    nbval's ``--nbval-current-env`` avoids it the same way.
    """
    import ipykernel.kernelspec
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class CurrentEnvSpecs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> Any:
            if kernel_name == KERNEL_NAME:
                return self.kernel_spec_class(resource_dir=ipykernel.kernelspec.RESOURCES,
                                              **ipykernel.kernelspec.get_kernel_dict())
            return super().get_kernel_spec(kernel_name)

    class CurrentEnvKernelManager(AsyncKernelManager):
        @default("kernel_spec_manager")
        def _current_env_specs(self) -> KernelSpecManager:
            return CurrentEnvSpecs(data_dir=self.data_dir)

        @default("transport_encryption")
        def _keys_given(self) -> str:
            """Encrypted sockets, as the course's launchers give: no "eavesdropping" warning."""
            import zmq

            return "auto" if zmq.has("curve") else "disabled"

    return CurrentEnvKernelManager


def execute(nb: Any, cwd: Path, allow_errors: bool = False, timeout: int = CELL_TIMEOUT,
            widget_state: bool = False) -> Any:
    """Run every cell of ``nb`` (changed in place and returned) in a fresh kernel started in ``cwd``.

    With ``widget_state=True`` the widgets' state is collected into ``nb.metadata.widgets``.

    With ``allow_errors=False`` the first failing cell raises ``nbclient.exceptions.CellExecutionError``.
    With ``allow_errors=True`` every cell runs and failures are stored as ``error`` outputs.
    """
    from nbclient import NotebookClient

    client = NotebookClient(nb, timeout=timeout, kernel_name=KERNEL_NAME, allow_errors=allow_errors,
                            record_timing=False, store_widget_state=widget_state,
                            startup_timeout=KERNEL_START_TIMEOUT,
                            kernel_manager_class=_kernel_manager_class(),
                            resources={"metadata": {"path": str(cwd)}})
    client.execute()
    return nb


def normalize(nb: Any, widgets: bool = False) -> Any:
    """Remove everything that changes from run to run (see the module docstring); returns ``nb``.

    ``widgets=False`` drops widget state and views; ``widgets=True`` keeps them, under stable
    model ids.
    """
    if widgets and nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state"):
        nb = stable_widget_ids(nb)
    else:
        nb.metadata.pop("widgets", None)
    nb.metadata.pop("jupytext", None)   # authoring-tool bookkeeping, not part of the notebook
    nb.metadata["kernelspec"] = dict(KERNELSPEC)   # what JupyterLab writes for this kernel, too
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = _normalize_outputs(cell.outputs, widgets)
    stable_ids(nb)
    return nb


def stable_widget_ids(nb: Any) -> Any:
    """Rename every widget model after its place in the run (the order the kernel made them).

    The ids appear in the state (``IPY_MODEL_<id>`` references between models) and in each
    output's widget view; all of them are renamed together, in the notebook's text. Returns ``nb``.
    """
    import nbformat

    state = nb.metadata.widgets[WIDGET_STATE]["state"]
    text = json.dumps(nb)
    for n, old in enumerate(list(state)):
        new_id = hashlib.sha256(f"widget model {n}".encode("utf-8")).hexdigest()[:32]
        text = text.replace(old, new_id)
    new = nbformat.from_dict(json.loads(text))
    nb.clear()
    nb.update(new)
    return nb


def stable_ids(nb: Any) -> Any:
    """Give every cell an id made from its type and source (unique within the notebook); returns ``nb``."""
    if (nb.nbformat, nb.nbformat_minor) < (4, 5):
        return nb
    seen: set[str] = set()
    for cell in nb.cells:
        digest = hashlib.sha256(f"{cell.cell_type}\n{cell.source}".encode("utf-8")).hexdigest()
        cell_id, n = digest[:8], 0
        while cell_id in seen:  # two cells with the same content
            n += 1
            cell_id = hashlib.sha256(f"{digest}{n}".encode("utf-8")).hexdigest()[:8]
        seen.add(cell_id)
        cell.id = cell_id
    return nb


def _normalize_outputs(outputs: list, widgets: bool = False) -> list:
    kept: list = []
    for output in outputs:
        output.pop("transient", None)
        if output.output_type in ("display_data", "execute_result"):
            if not widgets:
                output.data.pop(WIDGET_VIEW, None)
            output.metadata.pop(WIDGET_VIEW, None)
            if not output.data:
                continue
        if (output.output_type == "stream" and kept and kept[-1].output_type == "stream"
                and kept[-1].name == output.name):
            kept[-1].text += output.text
            continue
        kept.append(output)
    return kept


def text_of(nb: Any) -> str:
    """The exact file content ``nbformat.write`` produces for ``nb`` (sorted keys, one-space indent)."""
    import nbformat

    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def run_one(path: Path, timeout: int = CELL_TIMEOUT) -> bool:
    """Execute one notebook and store its outputs; False (and nothing written) if a cell failed."""
    import nbformat
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    started = time.perf_counter()
    try:
        execute(nb, path.parent, timeout=timeout, widget_state=True)
    except CellExecutionError as exc:
        print(f"FAILED {_show(path)}: a cell raised an error; nothing written\n{exc}", file=sys.stderr)
        return False
    normalize(nb, widgets=True)
    nbformat.validate(nb)
    new = text_of(nb)
    changed = not path.exists() or path.read_text(encoding="utf-8") != new
    if changed:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            nbformat.write(nb, f)
    cells = sum(1 for c in nb.cells if c.cell_type == "code")
    print(f"ok     {_show(path)}: {cells} code cells, {time.perf_counter() - started:.1f} s,"
          f" {'updated' if changed else 'unchanged'}")
    return True


def _show(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return path.name


def default_notebooks(root: Path = ROOT) -> list[Path]:
    """Every committed notebook that stores outputs: notebooks/*.ipynb and solutions/*.ipynb."""
    return sorted(p for folder in FOLDERS for p in (root / folder).glob("*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to run (default: all)")
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT, help="seconds allowed per cell")
    args = parser.parse_args(argv)
    paths = args.notebooks or default_notebooks()
    missing = [p for p in paths if not p.is_file()]
    if missing:
        print("no such notebook: " + ", ".join(map(str, missing)), file=sys.stderr)
        return 2
    if not paths:
        print("no notebooks found in " + " or ".join(FOLDERS))
        return 0
    failed = [p for p in paths if not run_one(p, args.timeout)]
    if failed:
        print(f"{len(failed)} of {len(paths)} notebooks failed: " + ", ".join(map(_show, failed)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
