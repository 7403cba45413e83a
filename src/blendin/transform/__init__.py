"""What changes values beyond generalization, each with its own check: local (cell)
suppression (:mod:`~blendin.transform.cells`) and microaggregation
(:mod:`~blendin.transform.microaggregation`). They work on arrays (codes, numbers), never
on files or engines."""
