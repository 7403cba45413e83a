"""The progress display: silent when short, off without a terminal, fed by the search."""

import io

import numpy as np
import pandas as pd

from blendin.anonymize import anonymize
from blendin.hierarchy.core import Hierarchy
from blendin.models import KAnonymity
from blendin.progress import Progress
from blendin.spec import Spec


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_off_when_not_a_terminal():
    out = io.StringIO()
    with Progress(stream=out, delay=0.0, interval=0.0) as show:
        show(5, 10)
    assert out.getvalue() == ""


def test_off_when_disabled_even_on_a_terminal():
    out = FakeTerminal()
    with Progress(stream=out, enabled=False, delay=0.0, interval=0.0) as show:
        show(5, 10)
    assert out.getvalue() == ""


def test_draws_counts_and_erases_the_line():
    out = FakeTerminal()
    with Progress(stream=out, delay=0.0, interval=0.0) as show:
        show(120, 4320)
        show(240, 4320)
    text = out.getvalue()
    assert "searching: 120 of 4,320 nodes checked (3%)" in text
    assert "240 of 4,320 nodes checked (6%)" in text
    assert text.endswith("\r")
    assert text.split("\r")[-2].strip() == ""  # the last draw is blanked out


def test_silent_during_the_first_second_and_throttled():
    out = FakeTerminal()
    with Progress(stream=out, delay=30.0) as show:
        show(1, 2)
    assert out.getvalue() == ""
    out = FakeTerminal()
    with Progress(stream=out, delay=0.0, interval=60.0) as show:
        for i in range(50):
            show(i, 50)
    assert out.getvalue().count("nodes checked") == 1


def test_line_without_total():
    assert Progress.line(7, None, 1.25) == "7 nodes checked, 1.2 s"


def test_anonymize_feeds_the_callback():
    rng = np.random.default_rng(0)
    n = 500
    df = pd.DataFrame({"a": rng.integers(0, 16, n), "b": rng.integers(0, 4, n)})
    ha = Hierarchy.from_rows([[str(i), str(i // 2), str(i // 4), str(i // 8), "*"]
                              for i in range(16)])
    hb = Hierarchy.from_rows([[str(i), str(i // 2), "*"] for i in range(4)])
    spec = Spec(quasi_identifiers={"a": ha, "b": hb}, models=[KAnonymity(10)])
    calls = []
    result = anonymize(df, spec, progress=lambda done, total: calls.append((done, total)))
    assert calls
    assert {total for _, total in calls} == {5 * 3}
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] <= result.nodes_checked
