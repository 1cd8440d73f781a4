"""The strategy catalogue: the eight built-in families, the user's own, lookup and the default spread.

Built-in playbooks are package files (`playbooks/<name>.md`, read with importlib.resources). A user
adds a strategy without editing the package by dropping a YAML or TOML file in
`<user data dir>/strategies/` (`$KERNELARC_HOME/strategies/` when that is set). Imports without
torch; must not import agents or campaign. Budget: under 200 lines.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from kernelarc.errors import UserError
from kernelarc.paths import user_data_dir
from kernelarc.strategies.model import Strategy
from kernelarc.task.classify import KernelType as K

USER_STRATEGY_SUFFIXES = (".yaml", ".yml", ".toml")


class StrategyError(UserError):
    """An unknown strategy name, or a user strategy file that is missing or malformed."""


# Built-ins in preference order: among strategies equally relevant to a kernel type, the spread
# hands out the earlier ones first. Playbooks live in playbooks/<name>.md.
_BUILTINS: tuple[dict[str, Any], ...] = (
    dict(name="library", title="Library configuration",
         applies_to=(K.GEMM, K.ATTENTION, K.CONV, K.NORM, K.SOFTMAX),
         scope="Reach the fastest vendor or framework implementation of the operator without writing a kernel: "
               "the cuBLAS/cuBLASLt path of a matmul (layout, dtype, epilogue), the cuDNN and SDPA backends, "
               "fused torch op variants such as F.scaled_dot_product_attention, torch._addmm_activation, "
               "F.layer_norm or torch.baddbmm in place of step-by-step compositions. Changes which library call "
               "runs and how its operands are laid out; writes no Triton or CUDA."),
    dict(name="fusion", title="Operator and epilogue fusion", applies_to=(),
         scope="Remove round trips through global memory by computing several operators in one kernel: "
               "elementwise chains, bias, activation, residual and scaling epilogues in a GEMM or attention "
               "kernel, normalization plus the ops around it. Changes kernel boundaries and what stays in "
               "registers or shared memory; keeps the arithmetic and the numerics of each operator."),
    dict(name="memory", title="Memory access",
         applies_to=(K.ELEMENTWISE, K.NORM, K.SOFTMAX, K.REDUCTION, K.ATTENTION, K.CONV, K.SCAN, K.LOSS, K.POOLING),
         scope="Make a memory-bound kernel move each byte once at full bandwidth: coalesced loads and stores, "
               "vector width (128-bit accesses), contiguous or channels-last layouts, avoiding hidden copies from "
               ".contiguous() and transposes, tiling so data is reused from shared memory or L2. Changes access "
               "patterns and layouts; keeps the operator's math."),
    dict(name="tensor_cores", title="Tensor cores", applies_to=(K.GEMM, K.ATTENTION, K.CONV),
         scope="Put the matmul-class work on tensor cores: tl.dot or mma with tile shapes, operand dtypes and "
               "layouts the MMA units accept, fp32 accumulation, block sizes that fill the SM without spilling. "
               "Changes how the FLOPs are issued; keeps the input and output dtypes the task gives."),
    dict(name="scheduling", title="Scheduling and launch", applies_to=(),
         scope="Keep the GPU busy between and inside kernels: software pipelining (num_stages), grid shape "
               "and tile rasterization for L2 reuse, persistent kernels, fewer launches, CUDA graphs for "
               "launch-bound shapes, num_warps. Changes when and where work runs; keeps what is computed."),
    dict(name="reduction", title="Reductions",
         applies_to=(K.NORM, K.SOFTMAX, K.REDUCTION, K.ATTENTION, K.SCAN, K.LOSS, K.POOLING),
         scope="Make reductions cheap and exact enough: one pass instead of two (online softmax, Welford), "
               "a row per program when it fits, tree or warp-shuffle reductions, split reductions (split-K, "
               "split-KV) for skinny shapes with a deterministic combine, fp32 accumulators. Changes how partial "
               "results are combined; keeps the result within tolerance."),
    dict(name="precision", title="Precision", applies_to=(K.GEMM, K.ATTENTION, K.CONV),
         scope="Trade internal precision for speed where the task's tolerance allows it: tf32 for fp32 "
               "matmuls, bf16 or fp16 operands with fp32 accumulation, fp8 with scaling where the tolerance "
               "permits. Changes the precision of intermediate arithmetic only; the output dtype and the "
               "correctness tolerance are the task's and never move."),
    dict(name="arch", title="Architecture-specific kernels (Hopper)", applies_to=(K.GEMM, K.ATTENTION, K.CONV),
         scope="Use what only the target GPU has: on Hopper (sm_90) TMA bulk copies and tensor descriptors, "
               "warpgroup MMA (wgmma), thread-block clusters, warp specialization, and the 227 KiB of shared "
               "memory per block. Changes the kernel to one that may run only on that architecture; it must "
               "still be correct on every workload the task gives."),
)


@functools.cache
def builtin_strategies() -> tuple[Strategy, ...]:
    """The eight built-in strategies in preference order, playbooks read from the package."""
    playbooks = resources.files(__package__).joinpath("playbooks")
    return tuple(
        Strategy(**spec, builtin_moves=spec["name"],
                 playbook=playbooks.joinpath(f"{spec['name']}.md").read_text(encoding="utf-8"))
        for spec in _BUILTINS
    )


def user_strategy_dir() -> Path:
    """Where user strategy files are picked up: `strategies/` in the user data dir (`$KERNELARC_HOME` when set)."""
    return user_data_dir() / "strategies"


def load_user_strategy(path: str | Path) -> Strategy:
    """Read one strategy from a YAML or TOML file.

    The file holds `name`, `title`, `scope`, optionally `applies_to` and `builtin_moves`, and either
    `playbook` (markdown text) or `playbook_file` (a path relative to the file).

    Raises:
        StrategyError: the file is missing, unreadable, not YAML/TOML, or not a valid strategy.
    """
    p = Path(path)
    if p.suffix not in USER_STRATEGY_SUFFIXES:
        raise StrategyError(f"strategy file {p} must end in {', '.join(USER_STRATEGY_SUFFIXES)}, "
                            f"got {p.suffix or 'no suffix'!r}")
    try:
        text = p.read_text(encoding="utf-8")
        data = tomllib.loads(text) if p.suffix == ".toml" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, yaml.YAMLError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise StrategyError(f"cannot read strategy file {p}: {first}") from None
    if not isinstance(data, dict):
        raise StrategyError(f"strategy file {p} must hold a mapping of fields, got {type(data).__name__}")
    playbook_file = data.pop("playbook_file", None)
    if (playbook_file is None) == ("playbook" not in data):
        raise StrategyError(f"strategy file {p} needs exactly one of 'playbook' and 'playbook_file'")
    if playbook_file is not None:
        book = p.parent / str(playbook_file)
        try:
            data["playbook"] = book.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise StrategyError(f"strategy file {p}: cannot read playbook_file {book}: {e.strerror or e}") from None
    try:
        return Strategy.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(part) for part in err["loc"]) or "file"
        raise StrategyError(f"strategy file {p}: {where}: {err['msg']} (got {err['input']!r})") from None


def all_strategies() -> tuple[Strategy, ...]:
    """Built-ins in preference order, then the user's strategy files in file-name order.

    Raises:
        StrategyError: a user file is malformed or reuses a name already taken.
    """
    found = list(builtin_strategies())
    folder = user_strategy_dir()
    files = sorted(f for f in folder.iterdir() if f.suffix in USER_STRATEGY_SUFFIXES) if folder.is_dir() else []
    for f in files:
        strategy = load_user_strategy(f)
        if any(_key(s.name) == _key(strategy.name) for s in found):
            raise StrategyError(f"strategy file {f} reuses the name {strategy.name!r}, already taken: rename it")
        found.append(strategy)
    return tuple(found)


def get_strategy(name: str) -> Strategy:
    """The strategy called `name` (`-` and `_` are interchangeable).

    Raises:
        StrategyError: no strategy has that name; the message lists the known ones.
    """
    return _find(name, all_strategies())


def parse_strategies(text: str) -> tuple[Strategy, ...]:
    """Strategies from a comma-separated list such as `library,fusion,arch` (order and repeats kept).

    Raises:
        StrategyError: the list is empty or names an unknown strategy.
    """
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise StrategyError(f"no strategy named in {text!r}; give a comma-separated list such as 'library,fusion'")
    pool = all_strategies()
    return tuple(_find(n, pool) for n in names)


def default_spread(n_agents: int, kernel_type: str,
                   with_work: frozenset[str] | None = None) -> tuple[Strategy, ...]:
    """One strategy per agent: those relevant to `kernel_type` first, in catalogue order, cycling past the end.

    Args:
        with_work: when the backend knows it (the built-in agents do), the strategies it has moves
            for on this task; among relevant strategies these come first.

    Deterministic: the same arguments and strategy files give the same assignment. With at most as
    many agents as strategies, every agent gets a different one.
    """
    if n_agents < 1:
        raise ValueError(f"need at least one agent, got {n_agents}")
    idle = (lambda s: False) if with_work is None else (lambda s: s.name not in with_work)
    ranked = sorted(all_strategies(), key=lambda s: (not s.is_relevant(kernel_type), idle(s)))
    return tuple(ranked[i % len(ranked)] for i in range(n_agents))


def _key(name: str) -> str:
    return name.replace("-", "_")


def _find(name: str, pool: tuple[Strategy, ...]) -> Strategy:
    for s in pool:
        if _key(s.name) == _key(name):
            return s
    raise StrategyError(f"unknown strategy {name!r}; known: {', '.join(s.name for s in pool)}")


__all__ = [
    "StrategyError", "builtin_strategies", "user_strategy_dir", "load_user_strategy", "all_strategies",
    "get_strategy", "parse_strategies", "default_spread", "USER_STRATEGY_SUFFIXES",
]
