"""What changes values beyond generalization, each with its own check: local (cell)
suppression (:mod:`~blendin.transform.cells`), microaggregation
(:mod:`~blendin.transform.microaggregation`) and PRAM (:mod:`~blendin.transform.pram`),
applied to a release table by :mod:`~blendin.transform.table`. They work on arrays and
tables in memory, never on files or engines."""
