"""What the release still answers: utility measured the way analysts (and ARX) read it.

:func:`utility` compares an input with its release, record by record. A release is shuffled
and drops its suppressed records, so the records are matched by what they must be: each
quasi-identifier of a full-domain release shows one level of its hierarchy (found from the
released labels), so every input record's released tuple follows from its own values, and
the classes the release lacks were suppressed whole. The matching is checked: a release
that does not come from the input this way (another input, a Mondrian release, a release
in parts) is refused. A record that shows ``*`` in every QI reads as suppressed (it says
nothing, whether suppressed or generalized to the top).

Per column it reports ARX's quality measures (granularity, non-uniform entropy, squared
error, generalization intensity, missings) with a plain-language line; per table ARX's
row-oriented ones (ambiguity, AECS, SSE/SST, record-level squared error, discernibility);
summary statistics of numeric columns before and after (a released interval counts as its
midpoint, as ARX does); contingency tables of chosen pairs with their distance; and, with a
target column, classification accuracy, Brier score and AUC of models trained on the input
and on the release against the zero-rule baseline (scikit-learn, ``blendin[utility]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blendin.codes import as_text, combine_keys
from blendin.errors import BlendinError, preview
from blendin.hierarchy.core import SUPPRESSED, Hierarchy, domain_shares, domain_size
from blendin.io import Source, to_arrow
from blendin.labels import parse_numeric


@dataclass(frozen=True, eq=False)
class Aligned:
    """The input's records beside their releases: per QI the level the release shows and
    each record's code at that level; which records were suppressed."""

    qis: tuple[str, ...]
    hierarchies: tuple[Hierarchy, ...]
    levels: tuple[int, ...]
    #: (records, QIs) ground codes of the input, and the codes at the released levels
    ground: np.ndarray
    general: np.ndarray
    suppressed: np.ndarray

    @property
    def records(self) -> int:
        return len(self.suppressed)


def align(original: pa.Table, release: pa.Table, qis: Sequence[str],
          hierarchies: Sequence[Hierarchy], missing: str = "") -> Aligned:
    """Match ``original``'s records with ``release``'s (see the module): the level of each
    QI, each record's released codes, and the suppressed records.

    >>> h = Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3", "*"]])
    >>> a = align(pa.table({"x": ["1", "2", "3"]}), pa.table({"x": ["1-2", "1-2"]}),
    ...           ["x"], [h])
    >>> a.levels, a.suppressed.tolist()
    ((1,), [False, False, True])
    """
    ground = np.stack([h.encode(as_text(original.column(q), missing), q)
                       for q, h in zip(qis, hierarchies)], axis=1).astype(np.int64)
    shown = [as_text(release.column(q), missing) for q in qis]
    starred = np.logical_and.reduce([np.asarray(pc.equal(s, SUPPRESSED).to_numpy(
        zero_copy_only=False), bool) for s in shown]) if qis else np.zeros(0, bool)
    levels, released = [], []
    for q, h, labels in zip(qis, hierarchies, shown):
        labels = pc.filter(labels, pa.array(~starred))
        level = _level_of(q, h, pc.unique(labels))
        levels.append(level)
        codes = pc.index_in(labels, value_set=pa.array(h.labels[level].astype(str).tolist()))
        released.append(codes.to_numpy(zero_copy_only=False).astype(np.int64))
    general = np.stack([h.codes[lv][ground[:, i]] for i, (h, lv) in
                        enumerate(zip(hierarchies, levels))], axis=1).astype(np.int64)
    radices = [len(h.labels[lv]) for h, lv in zip(hierarchies, levels)]
    suppressed = _suppressed(general, np.stack(released, axis=1) if released else
                             np.zeros((0, 0), np.int64), radices, int(starred.sum()))
    return Aligned(tuple(qis), tuple(hierarchies), tuple(levels), ground, general,
                   suppressed)


def _level_of(name: str, hierarchy: Hierarchy, labels: pa.Array) -> int:
    """The lowest level whose labels hold every released label of the column."""
    shown = {str(v) for v in labels.to_pylist()}
    if not shown:  # every record shows *: the top
        return hierarchy.height - 1
    for level in range(hierarchy.height):
        if shown <= {str(v) for v in hierarchy.labels[level]}:
            return level
    odd = sorted(shown - {str(v) for v in hierarchy.labels[0]})
    raise BlendinError(
        f"the release's column {name!r} shows labels no single level of its hierarchy has "
        f"({preview(odd)}): utility compares a full-domain release with its input",
        fix="give the input the release was made from and its spec (a Mondrian release, "
            "which recodes each group on its own, cannot be matched record by record)")


def _suppressed(general: np.ndarray, released: np.ndarray, radices: Sequence[int],
                starred: int) -> np.ndarray:
    """Which input records were suppressed: those of the classes the release lacks,
    checked against the release's own counts (a class is released whole or not at all)."""
    key = combine_keys([general[:, i] for i in range(general.shape[1])], list(radices))
    shown = combine_keys([released[:, i] for i in range(released.shape[1])], list(radices))
    classes, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    kept = np.zeros(len(classes), np.int64)
    found = np.searchsorted(classes, shown)
    inside = (found < len(classes))
    inside[inside] = classes[found[inside]] == shown[inside]
    np.add.at(kept, found[inside], 1)
    whole = (kept == 0) | (kept == counts)
    gone = int(counts[kept == 0].sum())
    if not inside.all() or not whole.all() or (starred and starred != gone):
        raise BlendinError(
            "the release does not come from this input record by record (a class holds "
            "other counts than the input's at the released levels)",
            fix="give the input the release was made from, with its spec")
    return (kept == 0)[inverse.reshape(-1)]


# -- classification -----------------------------------------------------------------------

#: the models trained on the input and on the release (scikit-learn)
MODELS = ("logistic regression", "naive bayes", "random forest")
#: records the classification trains on at most (a random sample beyond)
CLASSIFY_SAMPLE = 50_000


@dataclass(frozen=True)
class Scores:
    """How well a model predicts the target: accuracy, Brier score (mean squared error of
    the predicted class probabilities; lower is better) and AUC (one class against the
    rest, averaged over the classes; 0.5 is chance)."""

    accuracy: float
    brier: float
    auc: float


@dataclass(frozen=True, eq=False)
class Classification:
    """Per model, its scores trained on the input and on the release, beside the zero-rule
    baseline (always the most frequent class of the training folds)."""

    target: str
    features: tuple[str, ...]
    folds: int
    seed: int
    records: int
    baseline: Scores
    original: dict[str, Scores]
    released: dict[str, Scores]

    def kept(self, model: str) -> float:
        """The share of the input's accuracy gain over the baseline the release keeps
        (1: all of it; 0: no better than the baseline; nan when the input gains nothing)."""
        gain = self.original[model].accuracy - self.baseline.accuracy
        if gain <= 0:
            return float("nan")
        return (self.released[model].accuracy - self.baseline.accuracy) / gain

    def to_dict(self) -> dict:
        return {"target": self.target, "features": list(self.features), "folds": self.folds,
                "seed": self.seed, "records": self.records,
                "baseline": vars(self.baseline),
                "models": {m: {"original": vars(self.original[m]),
                               "released": vars(self.released[m]),
                               "kept": self.kept(m)} for m in self.original}}


def classify(target: np.ndarray, original: np.ndarray, released: np.ndarray, *,
             features: Sequence[str], name: str, folds: int = 5, seed: int = 0,
             sample: int = CLASSIFY_SAMPLE) -> Classification:
    """Train each of :data:`MODELS` on the input's features (``original``: records ×
    features, category codes) and on the release's (``released``, the suppressed records'
    codes one category of their own), with the same ``folds``-fold cross-validation
    (stratified, shuffled with ``seed``), and score the predictions of the held-out folds.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 4, (400, 1))
    >>> c = classify(x[:, 0] % 2, x, np.zeros_like(x), features=["x"], name="y")
    >>> round(c.original["random forest"].accuracy, 2), c.kept("random forest") < 0.1
    (1.0, True)
    """
    try:
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold
        from sklearn.naive_bayes import CategoricalNB
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import OneHotEncoder
    except ImportError:
        raise BlendinError("the classification needs scikit-learn",
                           fix='pip install "blendin[utility]"') from None
    rng = np.random.default_rng(seed)
    rows = np.arange(len(target))
    if len(rows) > sample:
        rows = np.sort(rng.choice(rows, sample, replace=False))
    classes, y = np.unique(np.asarray(target)[rows], return_inverse=True)
    if len(classes) < 2:
        raise BlendinError(f"the target {name!r} holds one value only: there is nothing to "
                           "predict", fix="choose a column with two values or more")
    smallest = int(np.bincount(y).min())
    folds = max(2, min(folds, smallest))
    split = list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(rows, y))
    makers = {
        "logistic regression": lambda: make_pipeline(
            OneHotEncoder(handle_unknown="ignore"), LogisticRegression(max_iter=1000)),
        "naive bayes": lambda: CategoricalNB(min_categories=None),
        "random forest": lambda: make_pipeline(
            OneHotEncoder(handle_unknown="ignore"),
            RandomForestClassifier(100, random_state=seed, n_jobs=-1)),
    }
    baseline = np.zeros((len(y), len(classes)))
    for train, test in split:
        baseline[test] = np.bincount(y[train], minlength=len(classes)) / len(train)
    scores = {}
    for label, x in (("original", original[rows]), ("released", released[rows])):
        x = _dense_codes(x)
        scores[label] = {m: _scores(y, _predicted(make, x, y, split, len(classes)))
                         for m, make in makers.items()}
    return Classification(name, tuple(features), folds, seed, len(rows),
                          _scores(y, baseline), scores["original"], scores["released"])


def _dense_codes(x: np.ndarray) -> np.ndarray:
    """Each feature's codes renumbered 0, 1, ... (CategoricalNB wants them dense)."""
    return np.stack([np.unique(x[:, i], return_inverse=True)[1].reshape(-1)
                     for i in range(x.shape[1])], axis=1) if x.size else x


def _predicted(make, x: np.ndarray, y: np.ndarray, split, n_classes: int) -> np.ndarray:
    """Class probabilities of every record, from the model trained on the other folds."""
    found = np.zeros((len(y), n_classes))
    for train, test in split:
        model = make()
        if hasattr(model, "min_categories"):  # naive Bayes: every category of the data
            model.set_params(min_categories=x.max(axis=0) + 1)
        model.fit(x[train], y[train])
        found[np.ix_(test, model.classes_)] = model.predict_proba(x[test])
    return found


def _scores(y: np.ndarray, proba: np.ndarray) -> Scores:
    from sklearn.metrics import roc_auc_score

    truth = np.eye(proba.shape[1])[y]
    accuracy = float((proba.argmax(axis=1) == y).mean())
    brier = float(np.square(proba - truth).sum(axis=1).mean())
    present = truth.any(axis=0)
    if proba.shape[1] == 2:
        auc = float(roc_auc_score(y, proba[:, 1])) if len(set(y)) == 2 else float("nan")
    else:
        auc = float(roc_auc_score(truth[:, present], proba[:, present], average="macro"))
    return Scores(accuracy, brier, auc)


# -- summary statistics -------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """Summary statistics of a numeric column: records counted, mean, quartiles."""

    records: int
    mean: float
    q1: float
    median: float
    q3: float

    @classmethod
    def of(cls, values: np.ndarray) -> Summary:
        values = np.asarray(values, float)
        values = values[~np.isnan(values)]
        if not len(values):
            return cls(0, *(float("nan"),) * 4)
        q1, median, q3 = np.quantile(values, [0.25, 0.5, 0.75])
        return cls(len(values), float(values.mean()), float(q1), float(median), float(q3))


def midpoints(labels: Sequence[str] | np.ndarray) -> np.ndarray:
    """The midpoint of each numeric label (``30-39`` is 34.5, ``42`` is 42; NaN for ``*``
    and anything not a number or an interval), as ARX summarizes a released interval.

    >>> midpoints(["30-39", "42", "*", "[20, 30)"]).round(3).tolist()[:3]
    [34.5, 42.0, nan]
    """
    lo, hi = parse_numeric(np.asarray(labels, dtype=object))
    return (lo + hi) / 2


# -- ARX's quality measures -----------------------------------------------------------------
# Each is a loss r between its least (min) and greatest (max) possible; the quality shown is
# 1 - (r - min) / (max - min): 1 is the input itself, 0 the worst (ARX's convention).


def _quality(loss: float, least: float, most: float) -> float:
    span = most - least
    if span == 0:
        return float("nan") if loss == least else 0.0
    return float(1.0 - min(max((loss - least) / span, 0.0), 1.0))


@dataclass(frozen=True)
class ColumnQuality:
    """ARX's column-oriented measures of one quasi-identifier, each a quality (1: as in the
    input, 0: nothing left), and the share of its cells the release suppressed."""

    name: str
    level: int
    height: int
    granularity: float
    non_uniform_entropy: float
    generalization_intensity: float
    squared_error: float | None
    suppressed: float
    example: str

    def line(self) -> str:
        """One plain sentence: what the release shows of the column."""
        if self.level == 0:
            shown = "values as they are"
        elif self.level == self.height - 1:
            shown = "nothing (every value is *)"
        else:
            shown = f"level {self.level} of {self.height - 1}, e.g. {self.example}"
        return f"{self.name}: {shown}; {100 * self.suppressed:.1f}% of values suppressed"


def column_quality(a: Aligned, i: int, numbers: np.ndarray | None) -> tuple[ColumnQuality,
                                                                          tuple]:
    """The measures of QI ``i`` of ``a`` (``numbers``: the input's values as numbers, for
    the squared error of a numeric column), and its (loss, min, max) triples for the
    aggregate over columns."""
    h, level, n = a.hierarchies[i], a.levels[i], a.records
    sup = a.suppressed
    d = domain_size(h)
    share = np.where(sup, 1.0, domain_shares(h, level)[a.general[:, i]])
    granularity = (float(share.mean()), 1.0 / d if d else 0.0, 1.0)
    precision = np.where(sup, 1.0, level / (h.height - 1) if h.height > 1 else 0.0)
    intensity = (float(precision.mean()), 0.0, 1.0)
    entropy = _entropy(h, a.ground[:, i], level, sup)
    error = _squared_error(numbers, a.general[:, i], sup) if numbers is not None else None
    triples = (granularity, intensity, entropy, error)
    top = level == h.height - 1
    quality = ColumnQuality(
        a.qis[i], level, h.height, _quality(*granularity), _quality(*entropy),
        _quality(*intensity), None if error is None else _quality(*error),
        float(sup.mean()) if not top else 1.0,
        str(h.labels[level][np.bincount(a.general[:, i]).argmax()]) if n else "")
    return quality, triples


def _entropy(h: Hierarchy, ground: np.ndarray, level: int, sup: np.ndarray) -> tuple:
    """Non-uniform entropy (bits): the information a record's released label loses about
    its value, in the steps ARX takes (the released level, then the top for the
    suppressed records); max: the input column's entropy times its records."""
    n = len(ground)
    if not n:
        return (0.0, 0.0, 0.0)
    top = h.height - 1
    f_in = np.bincount(ground)
    most = float(np.log2(n / f_in[ground]).sum())
    loss = 0.0
    if level > 0:
        cur = h.codes[level][ground]
        loss += float(np.log2(np.bincount(cur)[cur] / f_in[ground]).sum())
    if sup.any() and level < top:
        prev = h.codes[level][ground[sup]]
        loss += float(np.log2(sup.sum() / np.bincount(prev)[prev]).sum())
    return (loss, 0.0, most)


def _bounds(numbers: np.ndarray, general: np.ndarray, sup: np.ndarray):
    """Each record's released interval as ARX reads it: the least and greatest input value
    among the records sharing its label; a suppressed record's is the whole range."""
    lo_all, hi_all = np.nanmin(numbers), np.nanmax(numbers)
    groups = general.max(initial=0) + 1
    lo = np.full(groups, np.inf)
    hi = np.full(groups, -np.inf)
    np.fmin.at(lo, general, numbers)
    np.fmax.at(hi, general, numbers)
    return (np.where(sup, lo_all, lo[general]), np.where(sup, hi_all, hi[general]),
            lo_all, hi_all)


def _squared_error(numbers: np.ndarray, general: np.ndarray, sup: np.ndarray) -> tuple:
    """Attribute-level squared error: each value's squared distance to the farther end of
    its released interval, capped by its distance to the farther end of the column."""
    lo, hi, least, most = _bounds(numbers, general, sup)
    cap = np.maximum(np.square(numbers - least), np.square(numbers - most))
    far = np.maximum(np.square(numbers - lo), np.square(numbers - hi))
    return (float(np.minimum(far, cap).sum()), 0.0, float(cap.sum()))


def table_quality(a: Aligned, numbers: dict[int, np.ndarray]) -> dict[str, float]:
    """ARX's row-oriented measures, each a quality: ambiguity, average class size,
    discernibility; over the numeric QIs (``numbers``: their input values by QI index),
    record-level squared error and SSE/SST."""
    n, sup = a.records, a.suppressed
    kept = ~sup
    radices = [len(h.labels[lv]) for h, lv in zip(a.hierarchies, a.levels)]
    out_classes = np.unique(combine_keys([a.general[kept, i] for i in range(len(a.qis))],
                                         radices), return_counts=True)[1]
    in_classes = np.unique(combine_keys([a.ground[:, i] for i in range(len(a.qis))],
                                        [len(h.ground) for h in a.hierarchies]),
                           return_counts=True)[1]
    found = {}
    sizes = [domain_size(h) for h in a.hierarchies]
    factor = np.ones(n)
    for i, (h, level) in enumerate(zip(a.hierarchies, a.levels)):
        factor *= np.where(sup, 1.0, domain_shares(h, level)[a.general[:, i]]) * sizes[i]
    found["ambiguity"] = _quality(float(factor.sum()), float(n),
                                  float(n * np.prod(np.asarray(sizes, float))))
    found["aecs"] = (_quality(kept.sum() / len(out_classes), n / len(in_classes), float(n))
                     if len(out_classes) else 0.0)
    found["discernibility"] = _quality(
        float(np.square(out_classes.astype(float)).sum() + sup.sum() * float(n)),
        float(np.square(in_classes.astype(float)).sum()), float(n) ** 2)
    if numbers:
        found["record_squared_error"] = _record_error(a, numbers)
        found["sse_sst"] = _sse_sst(a, numbers)
    return found


def _record_error(a: Aligned, numbers: dict[int, np.ndarray]) -> float:
    """Record-level squared error: each record's distance (in standard deviations, over
    the numeric QIs) to the farther ends of its released intervals, against the distance
    to the farther ends of the columns."""
    real = np.zeros(a.records)
    most = np.zeros(a.records)
    for i, x in numbers.items():
        lo, hi, least, top = _bounds(x, a.general[:, i], a.suppressed)
        sigma = float(np.std(x))
        for bounds, total in (((lo, hi), real), ((np.full_like(x, least),
                                                 np.full_like(x, top)), most)):
            far = np.where(bounds[1] - x > x - bounds[0], bounds[1], bounds[0])
            total += np.square((x - far) / sigma) if sigma else 0.0
    return _quality(float(np.sqrt(real).sum()), 0.0, float(np.sqrt(most).sum()))


def _sse_sst(a: Aligned, numbers: dict[int, np.ndarray]) -> float:
    """SSE/SST: the squared distances of the values to their intervals' midpoints, against
    those of the midpoints to the column's mean (ARX's definition)."""
    sse = sst = 0.0
    for i, x in numbers.items():
        lo, hi, _, _ = _bounds(x, a.general[:, i], a.suppressed)
        middle = (lo + hi) / 2
        sse += float(np.square(x - middle).sum())
        sst += float(np.square(middle - x.mean()).sum())
    return _quality(sse, 0.0, sst)


# -- contingency tables ---------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Contingency:
    """Two columns crossed: the input's table (its values) and the release's (its labels),
    and how far apart they are: the total variation distance between the input's joint
    distribution and the release's spread evenly over the values each label covers
    (0: the same; 1: nothing in common)."""

    columns: tuple[str, str]
    original: pa.Table
    released: pa.Table
    distance: float

    def to_dict(self) -> dict:
        return {"columns": list(self.columns), "distance": self.distance,
                "original": self.original.to_pylist(), "released": self.released.to_pylist()}


def contingency(a: Aligned, pair: Sequence[str], source: pa.Table, missing: str = ""
                ) -> Contingency:
    """The contingency tables of the two columns ``pair`` (quasi-identifiers, or columns
    the release keeps as they are) in the input and in the release matched to it."""
    codes, labels, spread, texts = [], [], [], []
    for name in pair:
        if name in a.qis:
            i = a.qis.index(name)
            h, level = a.hierarchies[i], a.levels[i]
            ground, general = a.ground[:, i], a.general[:, i]
            values = np.asarray(h.ground, dtype=object).astype(str)
            shown = np.asarray(h.labels[level], dtype=object).astype(str)
            label_of = h.codes[level]
        elif name in source.column_names:
            found = pc.dictionary_encode(as_text(source.column(name), missing)
                                         .combine_chunks())
            ground = general = found.indices.to_numpy().astype(np.int64)
            values = shown = np.asarray(found.dictionary.to_pylist(), dtype=object)
            label_of = np.arange(len(values))
        else:
            raise BlendinError(f"--pair names {name!r}, which the input does not have",
                               fix="cross two of the input's columns, e.g. --pair age,sex")
        codes.append(ground)
        labels.append(general)
        # how many of the input's values each label covers, for spreading it evenly
        spread.append((label_of, np.maximum(np.bincount(label_of, minlength=len(shown)), 1)))
        texts.append((values, shown))
    kept = ~a.suppressed
    p_keys, p_counts = np.unique(codes[0] * len(texts[1][0]) + codes[1], return_counts=True)
    r_keys, r_counts = np.unique(labels[0][kept] * len(texts[1][1]) + labels[1][kept],
                                 return_counts=True)
    # the release's mass at each of the input's (value, value) pairs
    va, vb = p_keys // len(texts[1][0]), p_keys % len(texts[1][0])
    (la, na), (lb, nb) = spread
    at = la[va] * len(texts[1][1]) + lb[vb]
    mass = np.zeros(len(at))
    if len(r_keys):
        found = np.minimum(np.searchsorted(r_keys, at), len(r_keys) - 1)
        mass = np.where(r_keys[found] == at, r_counts[found], 0)
    released = max(int(kept.sum()), 1)
    q = mass / (na[la[va]] * nb[lb[vb]]) / released
    p = p_counts / len(codes[0])
    distance = 0.5 * (np.abs(p - q).sum() + max(0.0, 1.0 - q.sum())) if kept.any() else 1.0
    original = pa.table({pair[0]: texts[0][0][va].tolist(), pair[1]: texts[1][0][vb].tolist(),
                         "records": p_counts})
    ra, rb = r_keys // len(texts[1][1]), r_keys % len(texts[1][1])
    release = pa.table({pair[0]: texts[0][1][ra].tolist(), pair[1]: texts[1][1][rb].tolist(),
                        "records": r_counts})
    return Contingency(tuple(pair), original, release, float(distance))


# -- the report ------------------------------------------------------------------------------

#: what each table measure says, and that higher is better (all are qualities in [0, 1])
MEANINGS = {
    "granularity": "how finely the released labels split each column's domain",
    "non_uniform_entropy": "how much of each value's information the labels keep",
    "generalization_intensity": "how far down its hierarchy each column stays",
    "squared_error": "how close each numeric value stays to its released interval",
    "record_squared_error": "how close each record stays to its released intervals, in "
                            "standard deviations over the numeric columns",
    "ambiguity": "how few input tuples each released record could stand for",
    "aecs": "how small the released classes stay (average class size)",
    "discernibility": "how small the classes stay, suppressed records counting as one big "
                      "class",
    "sse_sst": "how much of the numeric columns' spread the intervals' midpoints keep",
}


@dataclass(frozen=True, eq=False)
class UtilityReport:
    """What :func:`utility` found (every quality in [0, 1]: 1 is the input itself)."""

    records: int
    released: int
    columns: list[ColumnQuality]
    #: ARX's aggregate of each column measure over the QIs (a ratio of the means)
    overall: dict[str, float]
    table: dict[str, float]
    statistics: dict[str, tuple[Summary, Summary]]
    classification: Classification | None = None
    contingencies: list[Contingency] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"records": self.records, "released": self.released,
                "columns": [vars(c) | {"line": c.line()} for c in self.columns],
                "overall": dict(self.overall), "table": dict(self.table),
                "statistics": {name: {"input": vars(a), "release": vars(b)}
                               for name, (a, b) in self.statistics.items()},
                "classification": (self.classification.to_dict()
                                   if self.classification else None),
                "contingencies": [c.to_dict() for c in self.contingencies]}

    def columns_table(self) -> pa.Table:
        """The per-column view as a table (what ``--csv`` writes)."""
        return pa.table({key: [getattr(c, key) for c in self.columns]
                         for key in ColumnQuality.__dataclass_fields__})

    def lines(self) -> list[str]:
        """The report as text, the plain view first."""
        lines = [f"records: {self.records:,}, released {self.released:,} "
                 f"({100 * self.released / max(self.records, 1):.1f}%)", "columns:"]
        lines += [f"  {c.line()}" for c in self.columns]
        for name, (before, after) in self.statistics.items():
            lines.append(f"  {name}: mean {before.mean:.4g} -> {after.mean:.4g}, median "
                         f"{before.median:.4g} -> {after.median:.4g}, quartiles "
                         f"{before.q1:.4g}-{before.q3:.4g} -> {after.q1:.4g}-{after.q3:.4g}")
        for c in self.contingencies:
            lines.append(f"  {c.columns[0]} x {c.columns[1]}: {c.original.num_rows:,} pairs "
                         f"of values in the input, {c.released.num_rows:,} of labels in the "
                         f"release; distance {c.distance:.4f} (0: the same, 1: nothing in "
                         "common)")
        if self.classification is not None:
            c = self.classification
            lines.append(f"classification of {c.target!r} ({c.folds}-fold, {c.records:,} "
                         f"records, seed {c.seed}): zero-rule accuracy "
                         f"{c.baseline.accuracy:.3f}")
            for model in c.original:
                o, r = c.original[model], c.released[model]
                lines.append(f"  {model}: accuracy {o.accuracy:.3f} -> {r.accuracy:.3f} "
                             f"(keeps {100 * c.kept(model):.0f}% of the gain over the "
                             f"baseline), Brier {o.brier:.3f} -> {r.brier:.3f}, AUC "
                             f"{o.auc:.3f} -> {r.auc:.3f}")
        lines.append("quality per column (1: as in the input, 0: nothing left):")
        width = max((len(c.name) for c in self.columns), default=4)
        lines.append(f"  {'':<{width}}  granularity  entropy  intensity  sq.error")
        for c in self.columns:
            error = "-" if c.squared_error is None else f"{c.squared_error:.4f}"
            lines.append(f"  {c.name:<{width}}  {c.granularity:11.4f}  "
                         f"{c.non_uniform_entropy:7.4f}  {c.generalization_intensity:9.4f}  "
                         f"{error:>8}")
        lines.append("quality of the table:")
        for name, value in self.overall.items():
            lines.append(f"  {name + ' (columns)':<34} {value:.4f}  {MEANINGS[name]}")
        lines += [f"  {name:<34} {value:.4f}  {MEANINGS[name]}"
                  for name, value in self.table.items()]
        return lines

    def __str__(self) -> str:
        return "\n".join(self.lines())


def utility(original, release, spec, *, target: str | None = None,
            pairs: Sequence[Sequence[str]] = (), folds: int = 5, seed: int = 0,
            sample: int = CLASSIFY_SAMPLE, delimiter: str | None = None,
            encoding: str | None = None) -> UtilityReport:
    """How much of ``original`` the ``release`` (of it, made with ``spec``) keeps.

    Both are files, DataFrames or Arrow tables. With ``target`` (a column of the input
    that is not a QI), models are trained on the QIs of the input and of the release to
    predict it (:func:`classify`; ``folds``, ``seed``, ``sample`` set the protocol).
    ``pairs`` (two column names each) adds their contingency tables (:func:`contingency`).

    >>> import blendin as bl
    >>> df = bl.datasets.hospital(300, seed=1)
    >>> spec = bl.Spec(identifiers=["name", "ssn"], quasi_identifiers={
    ...     "zip": bl.masking(), "sex": bl.flat()}, models=[bl.KAnonymity(5)],
    ...     max_suppression=0.1)
    >>> report = utility(df, bl.anonymize(df, spec).data, spec)
    >>> [c.line() for c in report.columns][1]
    'sex: values as they are; 0.3% of values suppressed'
    """
    def read(data):
        if isinstance(data, str):
            return Source(data, delimiter=delimiter or spec.delimiter,
                          encoding=encoding or spec.encoding).read_all()
        return to_arrow(data)

    qis = list(spec.quasi_identifiers)
    source, released = read(original), read(release)
    for table, what in ((source, "the input"), (released, "the release")):
        absent = [q for q in qis if q not in table.column_names]
        if absent:
            raise BlendinError(f"{what} has no column(s) {preview(absent)}",
                               fix="give the input and the release the spec was used on")
    hierarchies = spec.build_hierarchies(source)
    a = align(source, released, qis, [hierarchies[q] for q in qis], spec.missing)
    numbers = {i: np.asarray(h.numbers, float)[a.ground[:, i]]
               for i, h in enumerate(a.hierarchies) if h.numbers is not None
               and not np.isnan(np.asarray(h.numbers, float)[a.ground[:, i]]).any()}
    columns, triples = [], []
    for i in range(len(qis)):
        quality, found = column_quality(a, i, numbers.get(i))
        columns.append(quality)
        triples.append(found)
    names = ("granularity", "generalization_intensity", "non_uniform_entropy",
             "squared_error")
    overall = {}
    for j, name in enumerate(names):
        kept = [t[j] for t in triples if t[j] is not None]
        if kept:
            loss, least, most = np.mean(np.asarray(kept, float), axis=0)
            overall[name] = _quality(float(loss), float(least), float(most))
    statistics = {}
    for i, x in numbers.items():
        if a.hierarchies[i].kind != "numeric":  # dates: days since 1970 say nothing
            continue
        shown = as_text(released.column(qis[i]), spec.missing).to_numpy(zero_copy_only=False)
        statistics[qis[i]] = (Summary.of(x), Summary.of(midpoints(shown)))
    found = None
    if target is not None:
        found = _classification(source, a, target, qis, folds=folds, seed=seed,
                                sample=sample)
    crossed = []
    for pair in pairs:
        pair = [c.strip() for c in pair.split(",")] if isinstance(pair, str) else list(pair)
        if len(pair) != 2:
            raise BlendinError(f"--pair {','.join(pair)!r} does not name two columns",
                               fix="give two columns, e.g. --pair age,sex")
        crossed.append(contingency(a, pair, source, spec.missing))
    return UtilityReport(a.records, int((~a.suppressed).sum()), columns, overall,
                         table_quality(a, numbers), statistics, found, crossed)


def _classification(source: pa.Table, a: Aligned, target: str, qis: Sequence[str], **how
                    ) -> Classification:
    if target not in source.column_names:
        raise BlendinError(f"the input has no column {target!r} to predict",
                           fix=f"name one of its columns: {preview(source.column_names, 10)}")
    if target in qis:
        raise BlendinError(f"the target {target!r} is a quasi-identifier, which the models "
                           "take as a feature", fix="predict another column (--target)")
    released = np.where(a.suppressed[:, None], -1, a.general)  # suppressed: one category
    labels = as_text(source.column(target)).to_numpy(zero_copy_only=False)
    return classify(labels, a.ground, released + 1, features=qis, name=target, **how)
