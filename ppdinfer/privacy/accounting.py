"""epsilon-TP accounting: composition and conditioning rules (Seeman, Reimherr & Slavkovic, Section 2)."""

from __future__ import annotations

from collections.abc import Iterable

from .._validation import positive_finite


def sequential_composition(epsilons: Iterable[float]) -> float:
    """Lemma 6: releases each eps_b-TP and independent given (X, Z) are jointly (sum of eps_b)-TP.

    Examples
    --------
    >>> from ppdinfer.privacy import sequential_composition
    >>> sequential_composition([0.5, 0.25])      # two releases about the same records
    0.75
    """
    return sum(_epsilons(epsilons))


def parallel_composition(epsilons: Iterable[float]) -> float:
    """Lemma 7: releases on disjoint partitions X_b, each depending on X only through X_b, are (max eps_b)-TP.

    The lemma states it for a common eps; a release that is eps_b-TP is also max(eps)-TP, so
    the maximum covers unequal budgets.

    Examples
    --------
    >>> from ppdinfer.privacy import parallel_composition
    >>> parallel_composition([0.5, 1.0])          # one release per county, counties disjoint
    1.0
    """
    return max(_epsilons(epsilons))


def condition_on_public_subset(epsilon: float) -> float:
    """Lemma 8: an eps-DP release conditioned on the public event "X lies in a subset" is 2 eps-TP.

    Examples
    --------
    >>> from ppdinfer.privacy import condition_on_public_subset
    >>> condition_on_public_subset(0.5)           # e.g. a DP count known to be k-anonymous
    1.0
    """
    return 2.0 * positive_finite(epsilon, "epsilon")


def _epsilons(epsilons: Iterable[float]) -> list[float]:
    """Check a non-empty collection of privacy budgets, each a positive finite number."""
    try:
        values = list(epsilons)
    except TypeError:
        raise ValueError(f"epsilons must be a collection of numbers, got {epsilons!r}") from None
    if not values:
        raise ValueError("epsilons must hold at least one epsilon")
    return [positive_finite(value, f"epsilons[{i}]") for i, value in enumerate(values)]
