"""Is a proposal a real draft, or only a parameter change of the incumbent?

A draft must change algorithm, language or data layout. We cannot prove the first and last, but we
can refuse the cheap imitation: a source whose syntax tree equals the incumbent's once every number,
flag and number inside a string (tile sizes, warp counts, `#define BLOCK 128`) is blanked out is only
a re-tuning. Strings keep their other text: a CUDA kernel passed to `load_inline`, or the sources of a
solution.json, is code, and rewriting it is a draft.
"""

from __future__ import annotations

import ast
import re

from kernelarc.guard.candidate import infer_language

DRAFT_INSTRUCTION = (
    "You are on a plateau: your last candidates did not beat your incumbent. Your next candidate must "
    "change the ALGORITHM, the LANGUAGE (PyTorch, Triton, CUDA C++) or the DATA LAYOUT. A proposal that only "
    "changes numbers or flags of your incumbent will be refused without evaluation."
)


_NUMBER = re.compile(r"\d+")


class _BlankLiterals(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        value = _NUMBER.sub("0", node.value) if isinstance(node.value, str) else "<literal>"
        return ast.copy_location(ast.Constant(value=value), node)


def _shape(source: str) -> str | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):  # docstrings and comments do not make a draft either
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(_BlankLiterals().visit(tree), annotate_fields=False)


def is_parameter_change(proposal_source: str, incumbent_source: str | None) -> bool:
    """True if the proposal differs from the incumbent only in numbers and flags (or not at all)."""
    if incumbent_source is None:
        return False
    if infer_language(proposal_source) != infer_language(incumbent_source):
        return False
    a, b = _shape(proposal_source), _shape(incumbent_source)
    return a is not None and a == b


__all__ = ["DRAFT_INSTRUCTION", "is_parameter_change"]
