"""The report's plots: matplotlib figures drawn off-screen (Agg), returned as base64 PNG text.

Figures are built with :class:`matplotlib.figure.Figure` and an Agg canvas, never through
``pyplot``, so no display and no global state are involved and the caller's backend is left
alone. Every function takes figures already computed (class sizes, levels, risks) and draws
them; none looks at the data.

>>> png = class_sizes(np.array([5, 5, 7, 12]), k=5)
>>> base64.b64decode(png)[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

BEFORE = "#b9b9b9"
AFTER = "#2f6f9f"
LIMIT = "#c0392b"
#: up to this largest class size, one bar per size; beyond, log-spaced bins
LINEAR_SIZES = 40
#: spread of bar heights beyond which the count axis goes logarithmic
LOG_COUNTS = 50
#: the same for the class-size histogram: a release's classes next to the input's many
#: singletons (Mondrian: hundreds of groups of 5-10 next to thousands of 1s) must both show
LOG_SIZES = 8


def png_base64(fig: Figure) -> str:
    """The figure as PNG bytes in base64 (no software tag, so the bytes are reproducible)."""
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


#: plain numbers on log axes (1, 10, 100, 1,000), not powers of ten
PLAIN = FuncFormatter(lambda x, _: f"{x:,.0f}" if x >= 1 else f"{x:g}")


def _log(axis) -> None:
    axis.set_major_formatter(PLAIN)


def _figure(width: float = 7.0, height: float = 3.4) -> tuple[Figure, object]:
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.subplots()
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def size_bins(largest: int) -> np.ndarray:
    """Bin edges for class sizes 1..largest: one per size when few, else log-spaced.

    >>> size_bins(3).tolist()
    [0.5, 1.5, 2.5, 3.5]
    >>> edges = size_bins(1000); float(edges[0]), float(edges[-1]), len(edges) < 40
    (0.5, 1000.5, True)
    """
    largest = max(int(largest), 1)
    if largest <= LINEAR_SIZES:
        return np.arange(largest + 1) + 0.5
    # whole-number edges, so each bin holds whole sizes; the last is largest + 1
    edges = np.unique(np.round(np.geomspace(1, largest + 1, 30)))
    return edges - 0.5


def class_sizes(after: np.ndarray, before: np.ndarray | None = None, *, k: int | None = None,
                what: str = "equivalence classes", unit: str = "records") -> str:
    """The class-size histogram (:func:`class_sizes_figure`) as base64 PNG text."""
    return png_base64(class_sizes_figure(after, before, k=k, what=what, unit=unit))


def class_sizes_figure(after: np.ndarray, before: np.ndarray | None = None, *,
                       k: int | None = None, what: str = "equivalence classes",
                       unit: str = "records") -> Figure:
    """Histogram of class sizes in the release (bars) and in the input (an outline drawn
    over them); ``k`` is a line at the edge of the bars of size k, so every release bar is
    right of it. Counts go on a log axis when they spread widely, so a few release classes
    show next to thousands of input singletons; a linear axis gets whole-number ticks."""
    after = np.asarray(after, dtype=np.int64)
    sizes = [after] if before is None else [after, np.asarray(before, dtype=np.int64)]
    largest = max(int(s.max()) for s in sizes if len(s)) if any(len(s) for s in sizes) else 1
    edges = size_bins(largest)
    fig, ax = _figure()
    counts = [np.histogram(after, edges)[0]]
    ax.hist(after, edges, color=AFTER, alpha=0.9, label="release", zorder=2,
            edgecolor="white", linewidth=0.6)  # neighbouring sizes stay apart
    if before is not None:
        counts.append(np.histogram(before, edges)[0])
        ax.hist(before, edges, histtype="step", color="#555555", linewidth=1.4,
                label="input", zorder=3)
    if k is not None:
        ax.axvline(k - 0.5, color=LIMIT, linestyle="--", linewidth=1.2, label=f"k = {k}",
                   zorder=4)
    if largest > LINEAR_SIZES:
        ax.set_xscale("log")
        _log(ax.xaxis)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    shown = np.concatenate(counts)
    shown = shown[shown > 0]
    if len(shown) and shown.max() / shown.min() > LOG_SIZES:
        ax.set_yscale("log")
        ax.set_ylim(bottom=0.5)  # a class count of 1 still shows as a bar
        _log(ax.yaxis)
    else:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"{unit} in the class" if "class" in what else f"{unit} in the group")
    ax.set_ylabel(f"number of {what}")
    ax.set_title(f"Sizes of the {what}")
    ax.legend(frameon=False)
    return fig


def levels(levels: Mapping[str, int], heights: Mapping[str, int]) -> str:
    """One bar per quasi-identifier: chosen level over the top level (1 = fully ``*``)."""
    names = list(levels)
    tops = np.array([max(heights[q] - 1, 1) for q in names], dtype=float)
    chosen = np.array([levels[q] for q in names], dtype=float)
    fig, ax = _figure(height=0.45 * len(names) + 1.4)
    y = np.arange(len(names))[::-1]
    ax.barh(y, np.ones(len(names)), color="#e6e6e6")
    ax.barh(y, chosen / tops, color=AFTER)
    for yi, q, top in zip(y, names, tops):
        ax.text(1.01, yi, f"level {levels[q]} of {int(top)}", va="center", fontsize=9)
    ax.set_yticks(y, names)
    ax.set_xlim(0, 1.25)
    ax.set_xticks([0, 0.5, 1], ["original", "half-way", "fully *"])
    ax.set_title("Generalization per quasi-identifier")
    return png_base64(fig)


def distinct_values(after: Mapping[str, int], before: Mapping[str, int] | None = None) -> str:
    """Distinct values per quasi-identifier in the input and in the release (grouped bars);
    the view of generalization for local recoding, which has no levels."""
    names = list(after)
    fig, ax = _figure(height=0.5 * len(names) + 1.4)
    y = np.arange(len(names))[::-1].astype(float)
    bar = 0.38 if before is not None else 0.6
    if before is not None:
        ax.barh(y + bar / 2, [before[q] for q in names], bar, color=BEFORE, label="input")
        y = y - bar / 2
    ax.barh(y, [after[q] for q in names], bar, color=AFTER, label="release")
    ax.set_yticks(np.arange(len(names))[::-1], names)
    values = [*after.values(), *(before or {}).values()]
    if values and max(values) / max(min(values), 1) > LOG_COUNTS:
        ax.set_xscale("log")
        _log(ax.xaxis)
    ax.set_xlabel("distinct values")
    ax.set_title("Distinct values per quasi-identifier")
    ax.legend(frameon=False)
    return png_base64(fig)


def risks(labels: Sequence[str], after: Sequence[float],
          before: Sequence[float] | None = None) -> str:
    """Grouped bars of risk figures (shares, drawn in percent), input next to release."""
    x = np.arange(len(labels), dtype=float)
    fig, ax = _figure(width=7.5)
    width = 0.38 if before is not None else 0.6
    if before is not None:
        bars = ax.bar(x - width / 2, 100 * np.asarray(before), width, color=BEFORE,
                      label="input")
        ax.bar_label(bars, fmt="%.1f", fontsize=8, padding=1)
        x = x + width / 2
    bars = ax.bar(x, 100 * np.asarray(after), width, color=AFTER, label="release")
    ax.bar_label(bars, fmt="%.1f", fontsize=8, padding=1)
    ax.set_xticks(np.arange(len(labels)), labels, fontsize=9)
    ax.set_ylim(0, 112)
    ax.set_ylabel("percent")
    ax.set_title("Re-identification risk, input and release")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return png_base64(fig)


def distribution(name: str, before: Sequence[tuple[str, int]],
                 after: Sequence[tuple[str, int]], records: int, *,
                 before_what: str = "input") -> Figure:
    """A column's values in the input (left) and its labels in the release (right), each
    bar the share of the input's ``records``: what the release no longer tells apart,
    and the records it suppressed (``*``), show as the bars it merged or lost.
    ``before_what`` names the left side (the input, or the input at the released labels).

    >>> fig = distribution("sex", [("F", 6), ("M", 4)], [("F", 5), ("*", 5)], 10)
    >>> [ax.get_title() for ax in fig.axes]
    ['sex in the input', 'sex in the release']
    """
    rows = max(len(before), len(after), 1)
    fig = Figure(figsize=(8.0, 0.24 * rows + 1.3), layout="constrained")
    axes = fig.subplots(1, 2)  # each side its own scale: a merged bar would flatten the other
    for ax, bars, what, color in ((axes[0], before, before_what, BEFORE),
                                  (axes[1], after, "release", AFTER)):
        ax.spines[["top", "right"]].set_visible(False)
        y = rows - 1 - np.arange(len(bars))  # from the top, whatever the other side has
        shares = [100 * n / max(records, 1) for _, n in bars]
        ax.barh(y, shares, color=[LIMIT if v == "*" else color for v, _ in bars])
        ax.set_yticks(y, [_short(v) for v, _ in bars], fontsize=8)
        ax.set_ylim(-0.6, rows - 0.4)
        ax.set_xlim(0, 1.05 * max(shares, default=1.0))
        ax.set_xlabel("percent of the input's records", fontsize=8)
        ax.set_title(f"{name} in the {what}", fontsize=10)
    return fig


def _short(label: str, width: int = 24) -> str:
    return label if len(label) <= width else label[:width - 1] + "…"


def classification(target: str, baseline: float, original: Mapping[str, float],
                   released: Mapping[str, float]) -> Figure:
    """Accuracy of each model trained on the input and on the release, the zero-rule
    baseline a line: how much of the input's gain over it the release keeps.

    >>> fig = classification("y", 0.6, {"naive bayes": 0.9}, {"naive bayes": 0.8})
    >>> fig.axes[0].get_title()
    "Predicting 'y': accuracy"
    """
    models = list(original)
    x = np.arange(len(models), dtype=float)
    fig, ax = _figure(width=7.0, height=3.2)
    width = 0.38
    for shift, scores, color, what in ((-width / 2, original, BEFORE, "trained on the input"),
                                       (width / 2, released, AFTER,
                                        "trained on the release")):
        bars = ax.bar(x + shift, [100 * scores[m] for m in models], width, color=color,
                      label=what)
        ax.bar_label(bars, fmt="%.1f", fontsize=8, padding=1)
    ax.axhline(100 * baseline, color=LIMIT, linestyle="--", linewidth=1.2,
               label="zero rule (most frequent class)")
    ax.set_xticks(x, models, fontsize=9)
    ax.set_ylim(0, 112)
    ax.set_ylabel("accuracy, percent")
    ax.set_title(f"Predicting {target!r}: accuracy")
    ax.legend(frameon=False, fontsize=8, loc="lower right")
    return fig
