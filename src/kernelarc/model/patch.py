"""The patch that swaps a model run's ops into the model (`patch.py`), and the patched model as one
self-contained candidate source for the guard.

The guard judges a candidate from its source text alone, in a sandbox that cannot see the run
directory, so the candidate carries patch.py and the ops' files as strings and writes them to a
temporary folder when imported (Triton reads a kernel's source from its file). Budget: about 80 lines.
"""

from __future__ import annotations

import pprint

import jinja2

_TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("kernelarc.model", "templates"),
                                undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                keep_trailing_newline=True, autoescape=False)

_PATCHED_MODEL = '''

# --- kernelarc model: this model with its regions' kernels swapped in (patch.py and the ops,
# written to a temporary folder at import so that Triton can read the kernels' source) ---
import importlib.util as _kernelarc_importlib_util
import tempfile as _kernelarc_tempfile
from pathlib import Path as _KernelarcPath

_KERNELARC_FILES = {files}
_KERNELARC_ONLY = {only}


def _kernelarc_patch_module():
    root = _KernelarcPath(_kernelarc_tempfile.mkdtemp(prefix="kernelarc-patch-"))
    for name, text in _KERNELARC_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    spec = _kernelarc_importlib_util.spec_from_file_location("kernelarc_patch", root / "patch.py")
    module = _kernelarc_importlib_util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_kernelarc_patch = _kernelarc_patch_module()


class ModelNew(torch.nn.Module):
    """Model, built the same way (same weights), with the ops swapped in."""

    def __init__(self, *args):
        super().__init__()
        self.model = _kernelarc_patch.apply(Model(*args), only=_KERNELARC_ONLY)

    def forward(self, *args):
        return self.model(*args)
'''


def _region_entry(row: dict, region) -> dict:
    graph = region.graph
    return {"op": row["op"], "folder": row["op_folder"], "modules": list(region.modules),
            "state": [[i.source, i.key] for i in graph.inputs if i.source != "arg"],
            "calls": [{"args": [list(a) for a in graph.args], "kwargs": {k: list(v) for k, v in graph.kwargs.items()}}],
            "outputs": graph.outputs}


def patch_source(model_name: str, swapped: list[tuple[dict, object]]) -> str:
    """patch.py for the swapped regions: (summary row, Region) pairs."""
    regions = [_region_entry(row, region) for row, region in swapped]
    return _TEMPLATES.get_template("patch.py.j2").render(model=model_name,
                                                         regions=pprint.pformat(regions, width=110, sort_dicts=False))


def patched_model_source(model_source: str, files: dict[str, str], only: list[str] | None = None) -> str:
    """The model's task source plus a `ModelNew` that is the model with the ops swapped in (all of
    them, or the ops named in `only`); `files` maps paths relative to patch.py to their text."""
    return model_source + _PATCHED_MODEL.format(files=repr(files), only=repr(only))


__all__ = ["patch_source", "patched_model_source"]
