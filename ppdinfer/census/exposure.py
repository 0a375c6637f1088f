r"""What a leaf's population scales with: its housing units and group-quarters facilities (the block-level prior).

A block's measurements say little (its total is measured with a noise sd of about 89 persons), but the file holds
exactly what its people live in: the housing units (the unit file's ``total_con``) and the group-quarters
facilities of each type (the lower bounds of the person file's ``hhgq_total_lb_con``: production sets each GQ
type's lower bound to its number of facilities). With a :class:`LeafExposure`,
:func:`~ppdinfer.census.people.sample_people` gives leaf l (a block) the prior total

.. math::

    N_l \sim \mathrm{NegBin}\Big(\text{mean } \mu_l = m_{p(l)}\, u_l + \sum_t c_t f_{l,t},\ \text{size } \phi\Big),

u_l its housing units, f_{l,t} its facilities of GQ type t, m_p the persons per housing unit of its parent (the
block group), c_t the persons per facility of type t (one per type over the fit), each learned under a log-normal
prior; the composition given N_l is the Dirichlet-multinomial of :mod:`~ppdinfer.census.sampler` over the
cells the block may hold (its bounds': :mod:`~ppdinfer.census.people`). What it does:

- a block with no housing unit and no facility holds nobody (mu = 0; the file's hhgq upper bounds say the same),
  and costs the sampler nothing;
- a block's expected size follows its housing units (about m_p people each: a block of 3 units expects about
  7, one of 300 about 700), with the spread phi learned over all blocks, so a tiny block's posterior stays near
  a handful of people whatever its noisy total says, and an empty-but-housed block (every unit vacant) is
  allowed but a priori unlikely;
- a facility adds its type's mean size, learned from the facilities' blocks and their measurements;
- with the zero-inflation v (``hyperparameters={"vacant": ...}``, off by default), a block of positive mean is
  empty with probability v + (1 - v) NB(0) and otherwise negative binomial: housed blocks whose units are all
  vacant (seasonal homes, a demolished row) are then as likely as v says, learned over the fit, rather than
  NB(0) = (phi / (phi + mu))^phi, which for a block of two units is a few per cent.

How to check it: the posterior predictive of the block measurements (each released value simulated from the drawn
cells plus fresh noise and compared with the file:
``ppdinfer.case_studies.census_nmf.block_checks.block_predictive_check``), and simulation-based calibration on a
small geography (draws of the prior, releases of them, the rank of the truth among the posterior draws:
``ppdinfer.case_studies.census_nmf.block_checks.block_prior_sbc``). docs/census_nmf_file.md gives what they measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .grouped_release import GroupedRelease
from .pl94 import PERSON

__all__ = ["LeafExposure", "file_exposure"]


@dataclass(frozen=True, eq=False)
class LeafExposure:
    """Per leaf: the housing units and the group-quarters facilities of each type (module docstring).

    Attributes
    ----------
    units : numpy.ndarray
        (leaves,) housing units, >= 0.
    facilities : numpy.ndarray
        (leaves, types) facilities of each GQ type, >= 0 (zero columns for none).
    types : tuple of str
        The GQ types' names.

    Examples
    --------
    >>> e = LeafExposure(np.array([3.0, 0.0, 12.0]), np.array([[0.0], [0.0], [1.0]]), ("nursing",))
    >>> e.n_leaves, e.empty.tolist()
    (3, [False, True, False])
    """

    units: np.ndarray
    facilities: np.ndarray
    types: tuple = ()

    def __post_init__(self):
        units = np.asarray(self.units, dtype=float)
        facilities = np.asarray(self.facilities, dtype=float)
        if units.ndim != 1:
            raise ValueError(f"LeafExposure: units must be one value per leaf, got shape {units.shape}")
        if facilities.ndim != 2 or facilities.shape[0] != units.size:
            raise ValueError(
                f"LeafExposure: facilities must be (leaves, types) with {units.size} rows, got shape {facilities.shape}"
            )
        if len(self.types) != facilities.shape[1]:
            raise ValueError(f"LeafExposure: types must name the {facilities.shape[1]} facility columns")
        for name, value in (("units", units), ("facilities", facilities)):
            if not np.all(np.isfinite(value)) or np.any(value < 0):
                raise ValueError(f"LeafExposure: {name} must be finite and >= 0")
        object.__setattr__(self, "units", units)
        object.__setattr__(self, "facilities", facilities)
        object.__setattr__(self, "types", tuple(str(t) for t in self.types))

    @property
    def n_leaves(self) -> int:
        """The number of leaves."""
        return int(self.units.size)

    @property
    def empty(self) -> np.ndarray:
        """Whether each leaf has no housing unit and no facility (it holds nobody)."""
        return (self.units == 0) & (self.facilities.sum(axis=1) == 0)


def file_exposure(release: GroupedRelease, unit_file, lower_bounds: str = "hhgq_total_lb_con") -> LeafExposure:
    """The exposure of a file's leaves: housing units from ``unit_file``'s ``total_con`` at the leaf level, GQ
    facilities from the leaf level's ``lower_bounds`` of ``release`` (groups 1.. of the hhgq bounds; group 0,
    households, has lower bound 0).

    Parameters
    ----------
    release : GroupedRelease
        From :func:`~ppdinfer.census.grouped_release.grouped_release` of the person file.
    unit_file : NoisyMeasurementFile
        The housing-unit file (``read_nmf(..., table="unit")``) of the same geography.
    lower_bounds : str
        The bound block holding the facility counts.

    Examples
    --------
    >>> import tempfile
    >>> from ppdinfer.census import grouped_release, read_nmf, synthetic_pl94_state, write_nmf
    >>> state = synthetic_pl94_state(["Cameron"], random_seed=1)
    >>> root = tempfile.mkdtemp()
    >>> _ = write_nmf(root, state, random_seed=2), write_nmf(root, state, random_seed=3, table="unit")
    >>> release = grouped_release(read_nmf(root, "42", state_total=int(state.persons.sum())))
    >>> exposure = file_exposure(release, read_nmf(root, "42", table="unit"))
    >>> bool((exposure.units == state.units.sum(axis=1)).all())
    True
    >>> bool((exposure.facilities == state.gq_facilities[:, 1:]).all()), exposure.types[2]
    (True, 'nursing')
    """
    if not isinstance(release, GroupedRelease):
        raise ValueError(f"release must be a GroupedRelease, got {type(release).__name__}")
    geo = release.geography
    level = geo.level_names[-1]
    if level not in unit_file.levels or "total_con" not in unit_file.constraint_names(level):
        raise ValueError(f"unit_file: no 'total_con' at level {level!r}, the release's leaves")
    rows, values, _ = unit_file.constraints(level, "total_con")
    found = pd.Series(values[:, 0], index=[str(v) for v in unit_file.geography.ids[rows]])
    leaf_ids = [str(v) for v in geo.ids[geo.leaves]]
    units = found.reindex(leaf_ids)
    if units.isna().any():
        missing = units.index[units.isna()][:3].tolist()
        raise ValueError(f"unit_file: no housing-unit total for leaves {missing} (of {int(units.isna().sum())})")
    blocks = [b for b in release.bounds if b.level == geo.n_levels - 1 and b.name == lower_bounds]
    if not blocks:
        raise ValueError(f"lower_bounds: the release has no leaf-level bound block {lower_bounds!r}")
    facilities = np.maximum(blocks[0].lower[:, 1:], 0).astype(float)
    gq_types = PERSON.axes[0][1][1:]
    types = (
        gq_types
        if len(gq_types) == facilities.shape[1]
        else tuple(f"group {v}" for v in range(1, 1 + len(facilities.T)))
    )
    return LeafExposure(units.to_numpy(dtype=float), facilities, types)
