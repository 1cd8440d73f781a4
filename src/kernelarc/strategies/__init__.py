"""kernelarc.strategies: the strategy catalogue (what each agent is bound to change) and its playbooks."""

from kernelarc.strategies.catalogue import (
    USER_STRATEGY_SUFFIXES,
    StrategyError,
    all_strategies,
    builtin_strategies,
    default_spread,
    get_strategy,
    load_user_strategy,
    parse_strategies,
    user_strategy_dir,
)
from kernelarc.strategies.model import Strategy

__all__ = [
    "Strategy", "StrategyError", "USER_STRATEGY_SUFFIXES", "all_strategies", "builtin_strategies",
    "default_spread", "get_strategy", "load_user_strategy", "parse_strategies", "user_strategy_dir",
]
