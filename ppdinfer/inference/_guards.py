"""Checks the samplers run before and after sampling, so that a wrong answer is never silent.

- :func:`check_z_keys`: warn about entries of z that nothing in the model reads (a misspelt key);
- :func:`check_possible`: refuse a y of probability zero under the model, where that can be
  decided soundly (by y alone for some mechanisms, or over x's whole finite support);
- :func:`check_proposal`: warn when an importance proposal misses posterior mass (by a pilot);
- :func:`check_box`: let the mechanism warn where its likelihood is approximate at the x drawn
  (a post-processed release whose box misses mass there).
"""

from __future__ import annotations

import warnings

import numpy as np

from .model import PPDModel, draw_theta, theta_logpdf

#: Prior draws of the pilots (z keys read, importance proposal's coverage).
PILOT_DRAWS = 4096
#: A proposal may miss at most this share of the posterior (estimated by the pilot) without a warning.
PROPOSAL_MISS_TOLERANCE = 1e-3
#: Largest finite support of x enumerated to decide that y has probability zero.
SUPPORT_LIMIT = 100_000

ZERO_PROBABILITY = "y has probability zero under the model"


class _RecordingZ(dict):
    """z that remembers which keys were looked up; any iteration over it counts every key as read."""

    def __init__(self, z):
        super().__init__(z)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def _all(self):
        self.read.update(super().keys())

    def __iter__(self):
        self._all()
        return super().__iter__()

    def keys(self):
        self._all()
        return super().keys()

    def items(self):
        self._all()
        return super().items()

    def values(self):
        self._all()
        return super().values()


def check_z_keys(model: PPDModel, y: np.ndarray, z, caller: str) -> None:
    """Warn (UserWarning) naming each key of z that the prior, the data model and the mechanism's
    likelihood all leave unread on a small prior-predictive pass: a misspelt or misplaced key.

    A warning, not a refusal: a model may read a key only in a branch the pass does not reach.
    """
    if not z:
        return
    recording = _RecordingZ(z)
    rng = np.random.default_rng(0)
    try:
        check_z = getattr(model.simulate, "check_z", None)
        if check_z is not None:
            check_z(recording)
        theta = draw_theta(model.prior, 2, rng, recording)
        model.prior_logpdf(theta, recording)
        x = model.simulate_x(theta, recording, rng)
        model.mechanism.logpdf(y.reshape(-1), x, recording)
        model.mechanism.log_bound(recording, size=y.size)
    except Exception:
        return
    unread = [key for key in z if key not in recording.read]
    if unread:
        warnings.warn(
            f"{caller}: z has {'keys' if len(unread) > 1 else 'key'} {', '.join(map(repr, unread))}, "
            f"which neither the prior, the data model nor the mechanism reads (a misspelt key?); "
            f"they read {sorted(map(str, recording.read)) or 'no key'}",
            UserWarning,
            stacklevel=3,
        )


def check_possible(model: PPDModel, y: np.ndarray, z, support_loglik: np.ndarray | None = None) -> None:
    """Raise ValueError when y has probability zero under the model, where this is decided soundly.

    Decided by y alone for a post-processed release (no raw release of the box is published as y)
    and a congenial mechanism (y breaks the invariants); otherwise when the log likelihood of y is
    -inf at every x of the data model's finite support: ``support_loglik`` when the caller has it,
    else computed when a pilot of prior-predictive x finds y impossible at all of them and the
    support is finite and at most ``SUPPORT_LIMIT`` values. A y of small but positive likelihood
    is never refused.
    """
    reason = model.mechanism.impossible_release(y, z)
    if reason is None and support_loglik is None:
        theta = draw_theta(model.prior, 16, np.random.default_rng(0), z)
        if np.any(np.isfinite(model.loglik(y, model.simulate_x(theta, z, np.random.default_rng(1)), z))):
            return
        support_loglik = _support_loglik(model, y, z, theta.shape[1])
    if reason is None and support_loglik is not None and not np.any(np.isfinite(support_loglik)):
        reason = f"its likelihood is zero at every one of the {support_loglik.size} x of the data model's support"
    if reason is not None:
        raise ValueError(f"{ZERO_PROBABILITY}: {reason}; check y and z (no sampler can condition on it)")


def _support_loglik(model: PPDModel, y: np.ndarray, z, theta_dim: int) -> np.ndarray | None:
    """log pi(y | x, z) over the data model's whole finite support, or None if it has none affordable."""
    support = getattr(model.simulate, "support", None)
    if support is None or model.blocks is not None or getattr(model.prior, "units", None) is not None:
        return None
    try:
        values = np.asarray(support(z, theta_dim))
    except (ValueError, NotImplementedError, MemoryError):
        return None
    if values.shape[0] > SUPPORT_LIMIT:
        return None
    return model.loglik(y, values.reshape(values.shape[0], -1), z)


def check_proposal(model: PPDModel, proposal, y: np.ndarray, z) -> str | None:
    """The problem, if any, of an importance ``proposal`` that misses posterior mass.

    A pilot of ``PILOT_DRAWS`` prior draws, weighted by the likelihood (importance sampling with
    the prior as proposal), estimates the posterior mass where the proposal's density is zero;
    more than ``PROPOSAL_MISS_TOLERANCE`` of it is a problem (the estimate would be biased).
    """
    rng = np.random.default_rng(0)
    theta = draw_theta(model.prior, PILOT_DRAWS, rng, z)
    outside = ~np.isfinite(theta_logpdf(proposal, theta, z))
    if not outside.any():
        return None
    log_lik = model.loglik(y, model.simulate_x(theta, z, rng), z)
    weights = np.exp(log_lik - log_lik.max()) if np.isfinite(log_lik).any() else np.ones(theta.shape[0])
    missed = float(weights[outside].sum() / weights.sum())
    if missed <= PROPOSAL_MISS_TOLERANCE:
        return None
    return (
        f"the proposal's density is zero at {outside.mean():.0%} of {PILOT_DRAWS} prior draws, which hold about "
        f"{missed:.0%} of the posterior (a pilot weighted by the likelihood): it does not cover the posterior's "
        "support, so the weights never reach that part and the estimates are biased; use a proposal whose "
        "support contains the prior's"
    )


def check_box(model: PPDModel, x: np.ndarray, z, caller: str) -> None:
    """Let the mechanism warn where its likelihood is approximate at the distinct x drawn (a
    post-processed release: its box misses more than ``BOX_TOLERANCE`` of the raw release's mass)."""
    if x.size:
        model.mechanism.check_latent(np.unique(x.reshape(x.shape[0], -1), axis=0), z, caller=caller, stacklevel=4)
