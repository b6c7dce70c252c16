"""CNNSelect, exactly as seed 002 (Ogden & Guo) section 5 prints it.

Per request: T_budget = T_sla - 2 T_input, the range T_R = [T_L, T_U] with T_U = T_budget and
T_L = T_U - T_threshold; stage 1 picks the base model m* (equations 1-3, the fastest model when
none qualifies); stage 2 builds the exploration range T_E around T_L from m*'s profile and the
set M_E; stage 3 weighs M_E by the utility of equation 4 and draws the model. Where the print is
ambiguous (equation 3's direction, T_E's two cases, the m' in T_E) the formula is implemented as
printed; ``docs/selection.md`` says how each is read.

One implementation serves both callers: ``select_batch`` runs the three stages for many requests
at once (the simulation), ``select_model`` is that with one request plus the explanation.

Two readings (``policy``): ``paper`` is the algorithm exactly as printed; ``lab`` (the default)
is the same three stages with two changes, so that no probability goes to a model that is worse
in every respect: (a) candidates dominated by another model (at least as accurate and no slower
at every latency quantile of ``DOMINANCE_QUANTILES``, better in one) are dropped before stage 1;
(b) T_E is the centred interval the text describes, ``[T_L - d, T_L + d]`` with
``d = |T_L - mu(m*)| + sigma(m*)``, which always holds m* itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from devicelab.measure.stats import summarize

SELECT_POLICIES = ("lab", "paper")
DEFAULT_SELECT_POLICY = "lab"
# T_threshold when the caller gives none: the same for one request (``POST /api/select/``, the CLI)
# and for the simulation's built-in scenario, so a selection reproduces what a simulation assumed.
# 20 ms is about three times table 5's largest hot-start std (NasNet Large, 6.09 ms).
DEFAULT_THRESHOLD_MS = 20.0
# The latency quantiles dominance is judged on: a model is dominated when another is at least as
# accurate and no slower at each of these (first-order stochastic dominance read at five points,
# so a model with a fast median but a long tail is not dominated by a steadier, slower one).
DOMINANCE_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


# Standard normal quantiles of DOMINANCE_QUANTILES (scipy stays out of devicelab's imports).
_NORMAL_Z = {0.05: -1.6448536, 0.25: -0.6744898, 0.5: 0.0, 0.75: 0.6744898, 0.95: 1.6448536}


def _finite(name: str, value: float) -> float:
    """``value`` as a float, or ValueError naming ``name`` when it is not a finite number."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


@dataclass(frozen=True)
class ModelProfile:
    """A candidate model: accuracy (%, e.g. ImageNet top-1) and its execution time on the serving
    device as the profile CNNSelect reads (mean ``mu_ms``, std ``sigma_ms``) plus, where measured,
    the raw samples the simulation draws real execution times from."""

    name: str
    accuracy: float
    mu_ms: float
    sigma_ms: float
    samples_ms: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a model needs a non-empty name, got {self.name!r}")
        acc = _finite(f"accuracy of {self.name!r}", self.accuracy)
        # Equation 4 scales utility by accuracy: a model of accuracy 0 could never be drawn, and
        # percentages above 100 are a unit mistake (a fraction would be in (0, 1]).
        if not 0 < acc <= 100:
            raise ValueError(f"accuracy of {self.name!r} must be a percentage in (0, 100], got {self.accuracy!r}")
        mu = _finite(f"mu_ms of {self.name!r}", self.mu_ms)
        if mu <= 0:
            raise ValueError(f"mu_ms of {self.name!r} must be > 0, got {self.mu_ms!r}")
        sigma = _finite(f"sigma_ms of {self.name!r}", self.sigma_ms)
        if sigma < 0:
            raise ValueError(f"sigma_ms of {self.name!r} must be >= 0, got {self.sigma_ms!r}")
        samples = tuple(_finite(f"samples_ms of {self.name!r}", s) for s in self.samples_ms)
        if any(s <= 0 for s in samples):
            raise ValueError(f"samples_ms of {self.name!r} must all be > 0 ms")
        object.__setattr__(self, "accuracy", acc)
        object.__setattr__(self, "mu_ms", mu)
        object.__setattr__(self, "sigma_ms", sigma)
        object.__setattr__(self, "samples_ms", samples)

    @classmethod
    def from_samples(cls, name: str, accuracy: float, samples_ms: Sequence[float]) -> ModelProfile:
        """A profile whose mu and sigma are the mean and sample std of measured execution times."""
        if len(samples_ms) == 0:
            raise ValueError(f"samples_ms of {name!r} is empty: a profile from samples needs at least one")
        stats = summarize(samples_ms)
        return cls(name, accuracy, stats.mean, stats.std, tuple(float(s) for s in samples_ms))

    def quantiles_ms(self, qs: Sequence[float] = DOMINANCE_QUANTILES) -> np.ndarray:
        """Execution-time quantiles: the samples' own where measured, else the normal(mu, sigma)'s."""
        if self.samples_ms:
            return np.asarray(np.quantile(np.asarray(self.samples_ms), qs), dtype=np.float64)
        return self.mu_ms + self.sigma_ms * np.array([_NORMAL_Z[q] for q in qs])

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        d = asdict(self)
        d["samples_ms"] = list(self.samples_ms)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelProfile:
        """Inverse of ``as_dict``."""
        try:
            return cls(
                str(data["name"]),
                data["accuracy"],
                data["mu_ms"],
                data["sigma_ms"],
                tuple(data.get("samples_ms", ())),
            )
        except KeyError as missing:
            raise ValueError(f"a model profile needs the key {missing}") from None


@dataclass(frozen=True)
class Selection:
    """What CNNSelect decided for one request, and why (section 5.1's three stages)."""

    chosen: str
    probabilities: dict[str, float]  # every candidate; > 0 only in M_E (or the base/fallback model)
    base: str  # m*: stage 1's pick, the fastest model when nothing qualifies
    exploration: tuple[str, ...]  # M_E, in the candidates' order
    t_budget: float
    t_lower: float  # T_L = T_U - T_threshold
    t_upper: float  # T_U = T_budget
    t_explore: tuple[float, float] | None  # T_E; None when stage 1 fell back
    fallback: bool  # no model met equations 2 and 3
    utilities: dict[str, float]  # U(m) of equation 4 for the members of M_E (inf where mu(m) == T_L)
    why: str
    policy: str = DEFAULT_SELECT_POLICY
    dominated: dict[str, str] = field(default_factory=dict)  # dropped model -> a model dominating it

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON (infinite utilities as the string "inf")."""
        d = asdict(self)
        d["exploration"] = list(self.exploration)
        d["t_explore"] = None if self.t_explore is None else list(self.t_explore)
        d["utilities"] = {k: (v if math.isfinite(v) else "inf") for k, v in self.utilities.items()}
        return d


@dataclass(frozen=True)
class BatchSelection:
    """The three stages for N requests over K models, as arrays (rows: requests; columns: models)."""

    base: np.ndarray  # (N,) index of m*
    fallback: np.ndarray  # (N,) stage 1 found no model meeting equations 2 and 3
    explore_low: np.ndarray  # (N,) T_E's bounds (NaN where fallback)
    explore_high: np.ndarray
    in_explore: np.ndarray  # (N, K) membership of M_E
    utilities: np.ndarray  # (N, K) U(m) on M_E, 0 elsewhere, inf where |T_L - mu(m)| = 0
    probabilities: np.ndarray  # (N, K) rows sum to 1

    def draw(self, u: np.ndarray) -> np.ndarray:
        """The chosen model per request for uniform draws ``u`` in [0, 1) (inverse CDF over the row)."""
        cdf = np.cumsum(self.probabilities, axis=1)
        cdf /= cdf[:, -1:]  # rounding: the last entry is exactly 1, so u < 1 always lands on a model
        # The chosen index is the number of models whose cumulative probability is <= u; a model of
        # probability 0 shares its predecessor's cumulative value, so it can never be the one landed on.
        chosen: np.ndarray = np.minimum((cdf <= u[:, None]).sum(axis=1), self.probabilities.shape[1] - 1)
        return chosen


def time_range(
    sla_ms: float, input_ms: float, threshold_ms: float, round_trip_factor: float = 2.0
) -> tuple[float, float, float]:
    """(T_budget, T_L, T_U): T_budget = T_sla - k T_input (section 5: k = 2), T_U = T_budget, T_L = T_U - T_threshold."""
    sla = _finite("sla_ms", sla_ms)
    if sla <= 0:
        raise ValueError(f"sla_ms must be > 0, got {sla_ms!r}")
    t_in = _finite("input_ms", input_ms)
    if t_in < 0:
        raise ValueError(f"input_ms must be >= 0, got {input_ms!r}")
    thr = _finite("threshold_ms", threshold_ms)
    if thr < 0:
        raise ValueError(f"threshold_ms must be >= 0 (the paper bounds it to [0, T_D]), got {threshold_ms!r}")
    budget = sla - round_trip_factor * t_in
    return budget, budget - thr, budget


def check_models(models: Sequence[ModelProfile]) -> tuple[ModelProfile, ...]:
    """The candidates as a tuple, or ValueError when there are none, a non-profile, or a repeated name."""
    if isinstance(models, ModelProfile) or not isinstance(models, Sequence) or len(models) == 0:
        raise ValueError("models must be a non-empty sequence of ModelProfile")
    for m in models:
        if not isinstance(m, ModelProfile):
            raise ValueError(f"models must hold ModelProfile, got {type(m).__name__}")
    names = [m.name for m in models]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"model names must be unique; repeated: {', '.join(repeated)}")
    return tuple(models)


def _accuracy_order(acc: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Model indices from most to least accurate; ties go to the faster model, then the earlier one."""
    return np.lexsort((np.arange(len(acc)), mu, -acc))


def dominated(models: Sequence[ModelProfile]) -> dict[str, str]:
    """Each dominated candidate with a model dominating it: at least as accurate and no slower at
    every quantile of ``DOMINANCE_QUANTILES``, strictly better in accuracy or one quantile."""
    models = check_models(models)
    q = [m.quantiles_ms() for m in models]
    out: dict[str, str] = {}
    for j, b in enumerate(models):
        for i, a in enumerate(models):
            if i == j or a.accuracy < b.accuracy or np.any(q[i] > q[j]):
                continue
            if a.accuracy > b.accuracy or np.any(q[i] < q[j]):
                out[b.name] = a.name
                break
    return out


def round_trip_factor(policy: str, download_ratio: float | None = None) -> float:
    """k in T_budget = T_sla - k T_input: the paper's 2 (the round trip as twice the upload,
    "conservatively"); in the lab's reading 1 + the network profile's mean download / upload time
    ratio for this request and response when the caller knows it (the answer is rarely as large as
    the image), else 2 too."""
    if check_policy(policy) == "paper" or download_ratio is None:
        return 2.0
    ratio = _finite("download_ratio", download_ratio)
    if ratio < 0:
        raise ValueError(f"download_ratio must be >= 0, got {download_ratio!r}")
    return 1.0 + ratio


def check_policy(policy: str) -> str:
    """``policy`` if it is one of ``SELECT_POLICIES``, else ValueError listing them."""
    if policy not in SELECT_POLICIES:
        raise ValueError(f"policy must be one of {', '.join(SELECT_POLICIES)}, got {policy!r}")
    return policy


def fastest_index(models: Sequence[ModelProfile]) -> int:
    """The model with the lowest mean (stage 1's fallback); ties go to the more accurate, then the earlier."""
    return min(range(len(models)), key=lambda j: (models[j].mu_ms, -models[j].accuracy, j))


def select_batch(
    models: Sequence[ModelProfile],
    t_upper: np.ndarray,
    t_lower: np.ndarray,
    policy: str = DEFAULT_SELECT_POLICY,
) -> BatchSelection:
    """Stages 1-3 of section 5.1 for N requests given their T_U and T_L (arrays of shape (N,)),
    as printed (``policy="paper"``) or in the lab's reading (``"lab"``, the module docstring)."""
    models = check_models(models)
    check_policy(policy)
    mu = np.array([m.mu_ms for m in models])
    sigma = np.array([m.sigma_ms for m in models])
    acc = np.array([m.accuracy for m in models])
    t_u = np.asarray(t_upper, dtype=np.float64)[:, None]
    t_l = np.asarray(t_lower, dtype=np.float64)[:, None]
    n, k = t_u.shape[0], len(models)
    # The lab's reading never offers a dominated model, in any stage, the fallback included.
    eligible = np.ones(k, dtype=bool)
    if policy == "lab":
        gone = dominated(models)
        eligible = np.array([m.name not in gone for m in models])
    fastest = fastest_index([m for m, ok in zip(models, eligible, strict=True) if ok])
    fastest = int(np.flatnonzero(eligible)[fastest])

    # Stage 1: maximize A(m) (eq. 1) subject to mu + sigma < T_U (eq. 2) and mu - sigma < T_L (eq. 3).
    meets = (mu + sigma < t_u) & (mu - sigma < t_l) & eligible
    order = _accuracy_order(acc, mu)
    ranked = meets[:, order]
    fallback = ~ranked.any(axis=1)
    base = np.where(fallback, fastest, order[ranked.argmax(axis=1)])
    if policy == "lab":
        # When the soft limit T_L (eq. 3) leaves no model but the hard one (eq. 2) still holds some,
        # the lab runs the most accurate of those rather than the fastest: it fits the budget too.
        hard = ((mu + sigma < t_u) & eligible)[:, order]
        use_hard = fallback & hard.any(axis=1)
        base = np.where(use_hard, order[hard.argmax(axis=1)], base)

    # Stage 2: T_E from m*'s profile (the printed m' is m*: "we leverage m*'s performance profile").
    mu_b, sigma_b = mu[base][:, None], sigma[base][:, None]
    right = t_l > mu_b  # the first case: T_L > mu(m*)
    if policy == "paper":
        low = np.where(right, mu_b + sigma_b, 2 * t_l - mu_b + sigma_b)
        high = np.where(right, 2 * t_l - mu_b + sigma_b, mu_b + sigma_b)
    else:
        # The text's "acceptable distance |T_L - mu(m*)| + sigma(m*)" around T_L, both sides.
        d = np.abs(t_l - mu_b) + sigma_b
        low, high = t_l - d, t_l + d
    in_explore = (mu >= low) & (mu <= high) & (mu + sigma < t_u) & ~fallback[:, None] & eligible
    if policy == "lab":
        # m* already meets both constraints, so a less accurate member would only give up accuracy:
        # the lab explores towards more accurate models (those equation 3 kept out of stage 1).
        in_explore &= acc >= acc[base][:, None]

    # Stage 3: U(m) = A(m) (T_U - (mu + sigma)) / |T_L - mu| (eq. 4); Pr(m) = U(m) / sum over M_E.
    # The numerator is > 0 on M_E (its members satisfy mu + sigma < T_U). A member with mu == T_L
    # has infinite utility: in the limit it takes all the probability (shared among such members).
    dist = np.abs(t_l - mu)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        utilities = np.where(in_explore, acc * (t_u - (mu + sigma)) / dist, 0.0)
    infinite = in_explore & ~np.isfinite(utilities)  # dist == 0, or so small the quotient overflows
    probabilities = np.zeros((n, k))
    rows_inf = infinite.any(axis=1)
    probabilities[rows_inf] = infinite[rows_inf] / infinite[rows_inf].sum(axis=1, keepdims=True)
    finite_rows = in_explore.any(axis=1) & ~rows_inf
    probabilities[finite_rows] = utilities[finite_rows] / utilities[finite_rows].sum(axis=1, keepdims=True)
    # Stage 1's pick runs when there is nothing to explore: the fallback, and the (as printed, possible)
    # empty M_E of the first case, whose T_E starts at mu(m*) + sigma(m*) and so leaves m* out.
    empty = ~in_explore.any(axis=1)
    probabilities[empty, base[empty]] = 1.0
    nan = np.full(n, np.nan)
    return BatchSelection(
        base=base,
        fallback=fallback,
        explore_low=np.where(fallback, nan, low[:, 0]),
        explore_high=np.where(fallback, nan, high[:, 0]),
        in_explore=in_explore,
        utilities=utilities,
        probabilities=probabilities,
    )


def _ms(v: float) -> str:
    return f"{v:.4g}"


def _explain(
    models: tuple[ModelProfile, ...],
    batch: BatchSelection,
    chosen: int,
    t_budget: float,
    t_l: float,
    t_u: float,
    policy: str,
) -> str:
    """A readable account of the three stages for one request."""
    base = models[int(batch.base[0])]
    parts = [f"T_budget = {_ms(t_budget)} ms, T_R = [T_L, T_U] = [{_ms(t_l)}, {_ms(t_u)}] ms"]
    if policy == "lab":
        gone = dominated(models)
        if gone:
            parts.append("dropped as dominated: " + ", ".join(f"{b} (by {a})" for b, a in gone.items()))
    if batch.fallback[0]:
        if policy == "lab" and base.mu_ms + base.sigma_ms < t_u:
            parts.append(
                f"no model meets eq. 2 and 3 together: the most accurate meeting mu+sigma < T_U (eq. 2), "
                f"{base.name} (mu {_ms(base.mu_ms)} ms, sigma {_ms(base.sigma_ms)} ms), runs"
            )
            return "; ".join(parts)
        parts.append(
            f"no model meets mu+sigma < T_U and mu-sigma < T_L (eq. 2, 3): the fastest, {base.name} "
            f"(mu {_ms(base.mu_ms)} ms), runs as best effort"
        )
        return "; ".join(parts)
    parts.append(
        f"base m* = {base.name} (accuracy {_ms(base.accuracy)}, mu {_ms(base.mu_ms)} ms, sigma "
        f"{_ms(base.sigma_ms)} ms): the most accurate model meeting eq. 2 and 3"
    )
    case = "T_L > mu(m*)" if t_l > base.mu_ms else "T_L <= mu(m*)"
    if policy == "lab":
        case = "centred on T_L"
    low, high = float(batch.explore_low[0]), float(batch.explore_high[0])
    members = [models[j].name for j in np.flatnonzero(batch.in_explore[0])]
    if members:
        probs = ", ".join(
            f"{models[j].name} {batch.probabilities[0, j]:.3f}" for j in np.flatnonzero(batch.in_explore[0])
        )
        parts.append(f"T_E = [{_ms(low)}, {_ms(high)}] ms ({case}); M_E = {{{', '.join(members)}}}")
        parts.append(f"Pr by utility (eq. 4): {probs}; drew {models[chosen].name}")
    else:
        parts.append(
            f"T_E = [{_ms(low)}, {_ms(high)}] ms ({case}) holds no model with mu+sigma < T_U: "
            f"M_E is empty, so the base model runs"
        )
    return "; ".join(parts)


def select_model(
    models: Sequence[ModelProfile],
    *,
    sla_ms: float,
    input_ms: float,
    threshold_ms: float = DEFAULT_THRESHOLD_MS,
    rng: np.random.Generator | int | None = None,
    policy: str = DEFAULT_SELECT_POLICY,
    download_ratio: float | None = None,
) -> Selection:
    """CNNSelect for one request: the chosen model, the probabilities it was drawn with, and why.

    ``input_ms`` is T_input, the time the request's input took to reach the server; ``rng`` (a
    Generator or a seed) makes the stage-3 draw reproducible; ``policy`` is ``lab`` or ``paper``;
    ``download_ratio`` (the network's download / upload time, ``round_trip_factor``) is read by ``lab``.
    """
    candidates = check_models(models)
    k = round_trip_factor(policy, download_ratio)
    t_budget, t_l, t_u = time_range(sla_ms, input_ms, threshold_ms, k)
    batch = select_batch(candidates, np.array([t_u]), np.array([t_l]), policy)
    chosen = int(batch.draw(np.array([np.random.default_rng(rng).random()]))[0])
    members = np.flatnonzero(batch.in_explore[0])
    return Selection(
        chosen=candidates[chosen].name,
        probabilities={m.name: float(batch.probabilities[0, j]) for j, m in enumerate(candidates)},
        base=candidates[int(batch.base[0])].name,
        exploration=tuple(candidates[j].name for j in members),
        t_budget=t_budget,
        t_lower=t_l,
        t_upper=t_u,
        t_explore=None if batch.fallback[0] else (float(batch.explore_low[0]), float(batch.explore_high[0])),
        fallback=bool(batch.fallback[0]),
        utilities={candidates[j].name: float(batch.utilities[0, j]) for j in members},
        why=_explain(candidates, batch, chosen, t_budget, t_l, t_u, policy),
        policy=policy,
        dominated=dominated(candidates) if policy == "lab" else {},
    )
