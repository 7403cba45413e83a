"""(ε, δ)-differential privacy by SafePub (Bild, Kuhn & Prasser, "SafePub: a truthful data
anonymization algorithm with strong privacy guarantees", PoPETs 2018(1), as in ARX).

SafePub releases a random sample of the records, generalized and with rare classes
suppressed:

1. every record is kept independently with probability ``beta = 1 - exp(-eps_anon)``;
2. one generalization (a lattice node) is chosen, either fixed in advance (data-independent:
   each QI at ``round(degree * top level)``, ARX's generalization degree) or by the
   exponential mechanism (data-dependent), which spends ``generalization_budget * epsilon``
   of the budget and leaves ``eps_anon = (1 - generalization_budget) * epsilon``;
3. every class with fewer than ``k`` sampled records is suppressed, ``k`` derived from
   ``eps_anon`` and ``delta`` (:func:`safepub_k`).

Steps 1 and 3 satisfy (eps_anon, delta)-differential privacy when ``d(k) <= delta`` with
``gamma = (e^eps - 1 + beta) / e^eps``, ``n_m = ceil(k / gamma - 1)``,
``a_n = sum_{j > floor(gamma n)}^{n} Binomial(j; n, beta)``,
``c_n = exp(-n (gamma ln(gamma / beta) - (gamma - beta)))`` and
``d(k) = max_{n >= n_m} a_n``, the maximum found once ``a`` reaches the bound ``c_n`` on
every later term. The exponential mechanism walks down from the top: at every step it adds
the predecessors of the current node to the candidates and picks the next node with
probability proportional to ``exp(eps_step * score / 2)``, ``eps_step`` the search budget
over ``steps``; ``score`` is ARX's Loss score of sensitivity 1 (records not sampled or
suppressed lose everything, the others their generalized value's domain share, summed over
the QIs and divided by ``QIs * (k - 1)``). The release is the visited node of best score
(of two equal, the lower).

Only the k threshold can be verified from the released values (the checker does); the
sampling and the choice of the node are the mechanism's, reproducible with ``seed``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from blendin.codes import COUNT
from blendin.errors import BlendinError
from blendin.frequency import Classes, SensitiveDomain
from blendin.hierarchy.core import domain_shares
from blendin.models.base import PrivacyModel, _real, _share, _whole_number


def safepub_beta(epsilon: float) -> float:
    """The sampling probability: ``1 - exp(-epsilon)``.

    >>> round(safepub_beta(2.0), 6)
    0.864665
    """
    return 1.0 - math.exp(-epsilon)


_LOG_FACTORIALS = np.zeros(1)


def _log_factorials(n: int) -> np.ndarray:
    """log(i!) for i = 0..n (grown on demand, shared)."""
    global _LOG_FACTORIALS
    if len(_LOG_FACTORIALS) <= n:
        size = max(n + 1, 2 * len(_LOG_FACTORIALS))
        _LOG_FACTORIALS = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, size)))])
    return _LOG_FACTORIALS


#: the epsilons SafePub is offered for (see DifferentialPrivacy._check)
EPSILON_RANGE = (0.001, 5.0)

#: terms of a binomial tail summed at once (past the mean they fall at least geometrically)
_WINDOW = 256


def _binomial_tail(n: int, start: int, beta: float) -> float:
    """P(X >= start) for X ~ Binomial(n, beta), summed in log space; ``start`` lies above
    the mean, so the terms fall fast and a window of them holds the sum (the whole tail
    when the window's last term still counts)."""
    if start > n:
        return 0.0
    logf = _log_factorials(n)
    stop = min(n, start + _WINDOW)
    while True:
        j = np.arange(max(start, 0), stop + 1)
        log_pmf = (logf[n] - logf[j] - logf[n - j] + j * math.log(beta)
                   + (n - j) * math.log1p(-beta))
        top = log_pmf.max()
        if stop == n or log_pmf[-1] < top - 80:  # e^-80: nothing left to add
            return float(math.exp(top) * np.exp(log_pmf - top).sum())
        stop = n


class _Tails:
    """``a_n`` of one epsilon, computed once each (the search for k asks many times)."""

    def __init__(self, epsilon: float) -> None:
        self.beta = safepub_beta(epsilon)
        power = math.exp(epsilon)
        self.gamma = (power - 1.0 + self.beta) / power
        self.rate = self.gamma * math.log(self.gamma / self.beta) - (self.gamma - self.beta)
        self.values: dict[int, float] = {}

    def __call__(self, n: int) -> float:
        value = self.values.get(n)
        if value is None:
            value = self.values[n] = _binomial_tail(n, int(math.floor(n * self.gamma)) + 1,
                                                    self.beta)
        return value


_TAILS: dict[float, _Tails] = {}


def safepub_delta(k: int, epsilon: float) -> float:
    """``d(k)``: the delta that sampling with ``safepub_beta(epsilon)`` and suppressing
    classes below ``k`` guarantee (module docstring).

    >>> safepub_delta(131, 2.0) < 1e-6 < safepub_delta(130, 2.0)
    True
    """
    tails = _TAILS.get(epsilon)
    if tails is None:
        if len(_TAILS) > 16:
            _TAILS.clear()
        tails = _TAILS[epsilon] = _Tails(epsilon)
    n = max(int(math.ceil(k / tails.gamma - 1.0)), 1)
    delta, bound = -math.inf, math.inf
    while delta <= bound:  # every later term is below the bound c_n
        delta = max(delta, tails(n))
        bound = math.exp(-n * tails.rate)
        n += 1
    return delta


def safepub_k(epsilon: float, delta: float) -> int:
    """The suppression threshold: one more than the smallest k with ``d(k) < delta``, as
    ARX's loop derives it (the smallest k would do too; the larger one is kept so that both
    tools release the same thing). ``d`` falls as k grows: found by doubling, then
    bisection.

    >>> safepub_k(2.0, 1e-6)
    132
    """
    high = 1
    while safepub_delta(high, epsilon) >= delta:
        high *= 2
    low = high // 2  # d(low) >= delta, or low = 0
    while high - low > 1:
        mid = (low + high) // 2
        if safepub_delta(mid, epsilon) >= delta:
            low = mid
        else:
            high = mid
    return high + 1


class DifferentialPrivacy(PrivacyModel):
    """(epsilon, delta)-differential privacy by SafePub (module docstring).

    ``generalization_budget`` is the share of epsilon spent choosing the node (0: the node
    is fixed in advance at ``degree`` of every hierarchy's height, ARX's default 0.5);
    ``steps`` the exponential mechanism's steps; ``seed`` makes the sampling and the choice
    reproducible (None: fresh randomness). As a model of classes it holds where a class has
    at least :attr:`k` records, which the checker verifies.

    >>> model = DifferentialPrivacy(2.0, 1e-6)
    >>> round(model.beta, 4), model.k
    (0.8647, 132)
    """

    key = "differential-privacy"
    figure_name = "smallest class"
    local_recoding = False
    local_recoding_note = ("SafePub samples the records and chooses one full-domain "
                           "generalization; use the default algorithm")

    def __init__(self, epsilon: float, delta: float, generalization_budget: float = 0.0,
                 seed: int | None = None, degree: float = 0.5, steps: int = 300) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.generalization_budget = generalization_budget
        self.seed = seed
        self.degree = degree
        self.steps = steps
        self._check()
        self.epsilon, self.delta = float(epsilon), float(delta)
        self.generalization_budget, self.degree = float(generalization_budget), float(degree)
        #: epsilon left for sampling and suppression
        self.epsilon_anonymization = self.epsilon * (1.0 - self.generalization_budget)
        self.beta = safepub_beta(self.epsilon_anonymization)
        self.k = safepub_k(self.epsilon_anonymization, self.delta)

    def _check(self) -> None:
        fix = "e.g. epsilon = 2 (smaller is more private)"
        _real(self.key, "epsilon", self.epsilon, fix)
        if self.epsilon <= 0:
            raise BlendinError(f"{self.key}: epsilon must be > 0, got {self.epsilon!r}",
                               fix=fix)
        if not EPSILON_RANGE[0] <= self.epsilon <= EPSILON_RANGE[1]:
            # beyond, SafePub's k runs into the thousands (2045 at 5) or its derivation
            # into millions of terms (below 0.001)
            raise BlendinError(
                f"{self.key}: epsilon must be between {EPSILON_RANGE[0]:g} and "
                f"{EPSILON_RANGE[1]:g} for SafePub, got {self.epsilon!r}", fix=fix)
        _real(self.key, "delta", self.delta, "e.g. delta = 1e-6")
        if not 0 < self.delta < 1:
            raise BlendinError(f"{self.key}: delta must be in (0, 1), got {self.delta!r}",
                               fix="e.g. delta = 1e-6 (well below 1 / records)")
        _share(self.key, "generalization_budget", self.generalization_budget, "0.05",
               zero=True)
        if self.generalization_budget >= 1:
            raise BlendinError(f"{self.key}: generalization_budget must be below 1, got "
                               f"{self.generalization_budget!r}",
                               fix="spend a small share choosing the node, e.g. 0.05")
        _share(self.key, "degree", self.degree, "0.5", zero=True)
        _whole_number(self.key, "steps", self.steps, "e.g. steps = 300")
        if self.seed is not None and (not isinstance(self.seed, int | np.integer) or isinstance(
                self.seed, bool) or self.seed < 0):
            raise BlendinError(f"{self.key}: seed must be a whole number >= 0, got "
                               f"{self.seed!r}", fix="e.g. seed = 1, or leave it out")

    def params(self) -> dict:
        params = {"epsilon": self.epsilon, "delta": self.delta,
                  "generalization_budget": self.generalization_budget}
        if self.seed is not None:
            params["seed"] = self.seed
        if self.generalization_budget:
            params["steps"] = self.steps
        else:
            params["degree"] = self.degree
        return params

    def validate(self, n_records: int, domains: Mapping[str, SensitiveDomain]) -> None:
        self._check()

    def holds(self, classes: Classes) -> np.ndarray:
        return np.asarray(classes.sizes) >= self.k

    def per_class(self, classes: Classes) -> np.ndarray:
        return np.asarray(classes.sizes, dtype=float)

    # -- the mechanism ----------------------------------------------------------------------

    def generator(self, stream: int = 0) -> np.random.Generator:
        """A random stream of one release (0: the sampling, 1: the choice of the node),
        the same on every pass over the rows."""
        if getattr(self, "_entropy", None) is None:
            self._entropy = (self.seed if self.seed is not None
                             else np.random.SeedSequence().entropy)
        return np.random.default_rng(np.random.SeedSequence(self._entropy,
                                                            spawn_key=(stream,)))

    def check_spec(self, spec) -> None:
        """SafePub's guarantee is its own (no other model), and it suppresses every class
        smaller than its k, however many records that is (max_suppression 1)."""
        if len(spec.models) > 1:
            others = ", ".join(m.key for m in spec.models if m is not self)
            raise BlendinError(f"differential-privacy cannot be combined with other models "
                               f"({others}): SafePub's guarantee is its own",
                               fix="release with differential-privacy alone, or drop it")
        if spec.max_suppression < 1:
            raise BlendinError(
                "differential-privacy suppresses every class smaller than its k, however "
                f"many records that is, but max_suppression is {spec.max_suppression:g}",
                fix="set max_suppression = 1 (as ARX requires for SafePub)")

    def fresh(self) -> None:
        """Forget the drawn randomness (a release without a seed draws anew)."""
        self._entropy = None

    def fixed_levels(self, heights: Sequence[int]) -> tuple[int, ...]:
        """The data-independent node: ``round(degree * top)`` per QI (halves up, as ARX)."""
        return tuple(int(math.floor(self.degree * (h - 1) + 0.5)) for h in heights)


def sampled(batches: Iterable, model: DifferentialPrivacy, mark: str | None = None):
    """The chunks' sampled rows (each kept with probability ``model.beta``), drawn from
    the model's stream in row order; with ``mark``, every row with a 0/1 column of that
    name instead."""
    rng = model.generator()
    for batch in batches:
        keep = rng.random(batch.num_rows) < model.beta
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if mark is None:
            yield table.filter(pa.array(keep))
        else:
            yield table.append_column(mark, pa.array(keep.astype(np.int8)))


def loss_score(shares: Sequence[np.ndarray], sizes: np.ndarray, kept: np.ndarray,
               n_total: int, k: int) -> float:
    """ARX's Loss score of a node (sensitivity 1): ``shares[i]`` the domain share of every
    class's value of QI i, ``sizes`` the sampled records per class, ``kept`` the classes
    not suppressed, ``n_total`` all records of the input.

    >>> loss_score([np.array([0.5, 1.0])], np.array([4, 1]), np.array([True, False]), 10, 3)
    -4.0
    """
    q = len(shares)
    released = float(sizes[kept].sum())
    lost = sum((n_total - released) + float(share[kept] @ sizes[kept]) for share in shares)
    score = -lost / q if q else 0.0
    return score / (k - 1) if k > 1 else score


def exponential_choice(scores: np.ndarray, epsilon: float, rng: np.random.Generator) -> int:
    """Index drawn with probability proportional to ``exp(epsilon * score / 2)``."""
    exponents = 0.5 * epsilon * np.asarray(scores, dtype=float)
    weights = np.exp(exponents - exponents.max())
    return int(rng.choice(len(weights), p=weights / weights.sum()))


def node_score(model: DifferentialPrivacy, checker, levels: Sequence[int],
               n_total: int) -> float:
    """:func:`loss_score` of the node ``levels`` of the sample (``checker`` over it)."""

    result = checker.check(tuple(int(v) for v in levels))
    codes = result.groups.codes
    shares = [domain_shares(h, lv)[c] for h, lv, c in zip(checker.ft.hierarchies, levels,
                                                           codes)]
    return loss_score(shares, result.groups.sizes, ~result.violating, n_total, model.k)


def find_dp(model: DifferentialPrivacy, checker, n_total: int) -> tuple[int, ...]:
    """The node SafePub releases: fixed, or chosen by the exponential mechanism walking
    down from the top (module docstring), the visited node of best score."""
    lattice = checker.lattice
    if not model.generalization_budget:
        return model.fixed_levels(lattice.heights)
    rng = model.generator(1)
    epsilon_step = model.epsilon * model.generalization_budget / model.steps
    cache: dict[tuple[int, ...], float] = {}

    def score(levels: tuple[int, ...]) -> float:
        if levels not in cache:
            cache[levels] = node_score(model, checker, levels, n_total)
        return cache[levels]

    pivot = lattice.top
    best, best_score = pivot, score(pivot)
    candidates: dict[tuple[int, ...], float] = {pivot: best_score}
    for _ in range(model.steps):
        for node in lattice.predecessors(pivot):
            if node not in candidates:  # earlier pivots lie above: never met again
                candidates[node] = score(node)
        candidates.pop(pivot, None)
        if not candidates:
            break
        nodes = list(candidates)
        pivot = nodes[exponential_choice(np.array([candidates[n] for n in nodes]),
                                         epsilon_step, rng)]
        if candidates[pivot] > best_score or (  # ties to the lower node, as ARX
                candidates[pivot] == best_score and sum(pivot) < sum(best)):
            best, best_score = pivot, candidates[pivot]
    return best


#: the column that marks the sampled records while the input is read
MARK = "__blendin_sampled__"


def sample_model(spec) -> DifferentialPrivacy | None:
    """The spec's differential privacy model (None without one), drawn afresh; the spec's
    validation checked it is usable (:meth:`DifferentialPrivacy.check_spec`)."""
    found = [m for m in spec.models if isinstance(m, DifferentialPrivacy)]
    if not found:
        return None
    found[0].fresh()
    return found[0]


def sample_of(model: DifferentialPrivacy, distinct: pa.Table) -> pa.Table:
    """The distinct tuples of the sampled records (``MARK`` = 1), the input's size noted."""
    marks = distinct.column(MARK).to_numpy() if distinct.num_rows else np.zeros(0, int)
    model.records_in_input = int(distinct.column(COUNT).to_numpy().sum())
    kept = distinct.filter(pa.array(np.asarray(marks).astype(str) == "1"))
    if not kept.num_rows:
        raise BlendinError("differential-privacy: no record was sampled, so nothing can be "
                           "released", fix="give more records, or a larger epsilon")
    return kept.drop_columns([MARK])
