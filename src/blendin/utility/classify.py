"""Classification: models trained on the input and on the release, against the zero-rule
baseline (scikit-learn, imported only when asked)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from blendin.errors import BlendinError

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
             sample: int = CLASSIFY_SAMPLE, models: Sequence[str] = MODELS
             ) -> Classification:
    """Train each of ``models`` (:data:`MODELS`) on the input's features (``original``:
    records × features, category codes) and on the release's (``released``, the suppressed records'
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
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise BlendinError(f"a cross-validation needs 2 folds or more, got {folds!r}",
                           fix="pass folds=2 or more (--folds 2)")
    unknown = [m for m in models if m not in MODELS]
    if unknown or not models:
        raise BlendinError(f"unknown model(s) {', '.join(map(repr, unknown))}",
                           fix=f"choose among {', '.join(MODELS)}")
    rng = np.random.default_rng(seed)
    rows = np.arange(len(target))
    if len(rows) > sample:
        rows = np.sort(rng.choice(rows, sample, replace=False))
    classes, y = np.unique(np.asarray(target)[rows], return_inverse=True)
    if len(classes) < 2:
        raise BlendinError(f"the target {name!r} holds one value only: there is nothing to "
                           "predict", fix="choose a column with two values or more")
    counts = np.bincount(y)
    if counts.max() < 2:  # no fold could hold a value seen in training (sklearn raised)
        raise BlendinError(f"the target {name!r} holds a value of its own in every record: "
                           "there is nothing to learn", fix="choose a column whose values "
                           "repeat (a category, not an identifier)")
    smallest = int(counts.min())
    folds = max(2, min(folds, smallest))
    split = list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(rows, y))
    # one-hot categories for the linear model (Newton's method: fast on wide sparse
    # features); the trees split the codes, which keep each hierarchy's order, and stop at
    # leaves of 5 records (as accurate on adult, several times faster than grown trees)
    makers = {
        "logistic regression": lambda: make_pipeline(
            OneHotEncoder(handle_unknown="ignore"),
            LogisticRegression(solver="newton-cg", max_iter=1000)),
        "naive bayes": lambda: CategoricalNB(min_categories=None),
        "random forest": lambda: RandomForestClassifier(
            100, min_samples_leaf=5, random_state=seed, n_jobs=-1),
    }
    baseline = np.zeros((len(y), len(classes)))
    for train, test in split:
        baseline[test] = np.bincount(y[train], minlength=len(classes)) / len(train)
    scores = {}
    for label, x in (("original", original[rows]), ("released", released[rows])):
        x = _dense_codes(x)
        scores[label] = {m: _scores(y, _predicted(makers[m], x, y, split, len(classes)))
                         for m in models}
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
