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

from blendin.utility.align import Aligned, align
from blendin.utility.classify import MODELS, Classification, Scores, classify
from blendin.utility.columns import Contingency, Summary, contingency, midpoints
from blendin.utility.quality import MEANINGS, ColumnQuality, column_quality, table_quality
from blendin.utility.report import UtilityReport, utility

__all__ = ["MEANINGS", "MODELS", "Aligned", "Classification", "ColumnQuality", "Contingency",
           "Scores", "Summary", "UtilityReport", "align", "classify", "column_quality",
           "contingency", "midpoints", "table_quality", "utility"]
