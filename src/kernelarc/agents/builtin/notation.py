"""The canonical text of a parameter point, `[family K=V ...]`, written into claims and reflections
so that findings in the shared memory can be read back as (family, params) by any built-in agent.

Values are ints, floats, bools or bare words; keys are sorted, so one point has one spelling.
Imports without torch. Budget: about 80 lines.
"""

from __future__ import annotations

import re
from typing import Any

CLAIM_CAP = 160
"""A proposal's claim is at most this many characters."""
_POINT = re.compile(r"\[([a-z][a-z0-9_]*)((?:\s+[A-Za-z_][A-Za-z0-9_]*=[^\s\]]+)*)\s*\]")


def params_text(params: dict[str, Any]) -> str:
    """`BLOCK_M=128 form=addmm`: the point's values, keys sorted."""
    return " ".join(f"{k}={_value_text(params[k])}" for k in sorted(params))


def point_text(family: str, params: dict[str, Any]) -> str:
    """`[library_gemm form=addmm]`."""
    inner = params_text(params)
    return f"[{family}{' ' + inner if inner else ''}]"


def parse_points(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Every `[family K=V ...]` in `text`, values parsed back to ints, floats, bools or words."""
    found = []
    for m in _POINT.finditer(text):
        params = {}
        for pair in m.group(2).split():
            key, _, raw = pair.partition("=")
            params[key] = _parse_value(raw)
        found.append((m.group(1), params))
    return found


def point_key(family: str, params: dict[str, Any]) -> str:
    """A hashable identity of a point (its canonical text)."""
    return point_text(family, params)


def claim_text(family: str, params: dict[str, Any], what: str) -> str:
    """`<point> <what>`, clipped to the claim cap (the point is kept whole when it fits)."""
    text = f"{point_text(family, params)} {what}"
    return text if len(text) <= CLAIM_CAP else text[: CLAIM_CAP - 3] + "..."


def _value_text(value: Any) -> str:
    text = str(value)
    if re.search(r"[\s\]=]", text):
        raise ValueError(f"parameter value {value!r} cannot be written in a point (no spaces, '=' or ']')")
    return text


def _parse_value(raw: str) -> Any:
    if raw in ("True", "False"):
        return raw == "True"
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw


__all__ = ["CLAIM_CAP", "claim_text", "params_text", "parse_points", "point_key", "point_text"]
