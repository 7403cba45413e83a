"""Anonymize a table: reduce it to a frequency table, search, release, prove, report.

The pipeline, one module a stage, for an in-memory frame or a file read chunk by chunk:

1. :mod:`~blendin.anonymize.prepare`: the spec compiled against the input: columns checked,
   rows reduced by the engine to distinct (QI, sensitive) tuples, hierarchies built from the
   distinct values, models bound, the frequency table encoded;
2. :mod:`~blendin.anonymize.search`: the search (full-domain lattice, or Mondrian) on the
   frequency table, and the outcome: what to recode and suppress, and its figures;
3. :mod:`~blendin.anonymize.release`: the rows recoded by the engine (one gather per QI,
   chunk by chunk, in a random order), the violating classes suppressed, and the release
   verified by the independent checker, which regroups the released values themselves; a
   release it rejects is never returned nor written;
4. :mod:`~blendin.anonymize.result`: the :class:`Result` (the release and its figures).

:mod:`~blendin.anonymize.run` runs them in that order (:func:`anonymize`), and
:mod:`~blendin.anonymize.tables` runs it on related tables (their stack);
:mod:`~blendin.anonymize.apply` re-applies a saved solution
(:mod:`~blendin.anonymize.solutions`) to new data of the same shape.
"""

from blendin.anonymize.apply import apply_solution
from blendin.anonymize.prepare import as_spec, prepare
from blendin.anonymize.release import verify, with_row_columns
from blendin.anonymize.result import Result
from blendin.anonymize.run import anonymize
from blendin.anonymize.search import FULL_DOMAIN, Outcome, full_domain_outcome
from blendin.anonymize.solutions import (
    SOLUTION_FORMAT,
    changed_since_saved,
    load_solution,
    solution_dict,
    spec_from_solution,
    with_digest,
)
from blendin.plan import Plan

__all__ = [
    "FULL_DOMAIN", "SOLUTION_FORMAT", "Outcome", "Plan", "Result", "anonymize",
    "apply_solution", "as_spec", "changed_since_saved", "full_domain_outcome",
    "load_solution", "prepare", "solution_dict", "spec_from_solution", "verify",
    "with_digest", "with_row_columns",
]
