"""The progress bars: tqdm, silent when short, off without a terminal, fed by the search and
by the passes over a file."""

import collections
import contextlib
import io
from unittest import mock

import numpy as np
import pandas as pd
import pytest

from blendin.anonymize import anonymize
from blendin.engines import embedded
from blendin.engines.embedded import EmbeddedEngine
from blendin.errors import BlendinError
from blendin.hierarchy.core import Hierarchy
from blendin.io import Source
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
    assert show.bar is None  # tqdm was never asked for a bar


def test_off_when_disabled_even_on_a_terminal():
    out = FakeTerminal()
    with Progress(stream=out, enabled=False, delay=0.0, interval=0.0) as show:
        show(5, 10)
    assert out.getvalue() == ""


def test_draws_a_tqdm_bar_with_counts_and_erases_it():
    out = FakeTerminal()
    with Progress(stream=out, delay=0.0, interval=0.0) as show:
        show(120, 4320)
        assert type(show.bar).__module__.startswith("tqdm")
        show(2160, 4320)
        assert show.bar.n == 2160 and show.bar.total == 4320
    text = out.getvalue()
    assert "searching:   3%|" in text and "120 of 4320 nodes checked" in text
    assert "searching:  50%|" in text and "2160 of 4320 nodes checked" in text
    assert "|####" in text  # a drawn bar (ASCII on a stream that is not UTF-8), not figures
    assert text.split("\r")[-1].strip() == ""  # the bar is erased at the end (leave=False)


def test_silent_during_the_delay_and_throttled():
    out = FakeTerminal()
    with Progress(stream=out, delay=30.0) as show:
        show(1, 2)
    assert "nodes checked" not in out.getvalue()
    out = FakeTerminal()
    with Progress(stream=out, delay=0.0, interval=60.0) as show:
        for i in range(50):
            show(i, 50)
    assert out.getvalue().count("nodes checked") <= 2  # the first draw, and the close


def test_a_step_that_tells_no_share_moves_the_clock_on():
    """None (a database statement running on) redraws the bar as it is, after the delay."""
    out = FakeTerminal()
    bars = Progress(stream=out, delay=0.0, interval=0.0)
    with bars.reading("releasing t") as told:
        told(0.2)
        drawn = out.getvalue().count("releasing t:  20%")
        told(None)
        assert out.getvalue().count("releasing t:  20%") == drawn + 1
    out = FakeTerminal()
    bars = Progress(stream=out, delay=30.0, interval=0.0)
    with bars.reading("releasing t") as told:
        told(None)
    assert "releasing t" not in out.getvalue()


def test_count_without_total():
    out = FakeTerminal()
    with Progress(stream=out, delay=0.0, interval=0.0) as show:
        show(7, None)
    assert "searching: 7 nodes checked" in out.getvalue()


def test_progress_true_draws_a_bar_on_stderr_during_a_search(capsys, monkeypatch):
    import blendin.progress as progress_module

    monkeypatch.setattr(progress_module.Progress, "__init__", _no_delay(
        progress_module.Progress.__init__))
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.integers(0, 16, 300), "b": rng.integers(0, 4, 300)})
    result = anonymize(df, _spec(), progress=True)
    err = capsys.readouterr().err
    assert "nodes checked" in err and f"of {5 * 3}" in err
    assert result.check.passed


def test_progress_must_be_a_flag_or_a_function():
    df = pd.DataFrame({"a": list(range(16)) * 2, "b": [0, 1] * 16})
    with pytest.raises(BlendinError, match="progress=True"):
        anonymize(df, _spec(), progress="yes")


def _no_delay(init):
    def patched(self, **options):
        init(self, **{**options, "delay": 0.0, "interval": 0.0})
    return patched


def _spec() -> Spec:
    ha = Hierarchy.from_rows([[str(i), str(i // 2), str(i // 4), str(i // 8), "*"]
                              for i in range(16)])
    hb = Hierarchy.from_rows([[str(i), str(i // 2), "*"] for i in range(4)])
    return Spec(quasi_identifiers={"a": ha, "b": hb}, models=[KAnonymity(10)],
                max_suppression=1.0)


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


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_each_pass_over_a_file_has_a_bar_to_the_end(tmp_path, suffix):
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"a": rng.integers(0, 16, 3000).astype(str),
                       "b": rng.integers(0, 4, 3000).astype(str)})
    path = tmp_path / f"people{suffix}"
    if suffix == ".parquet":
        df.to_parquet(path)
    else:
        df.to_csv(path, index=False)
    shares = []
    batches = list(Source(path, block_size=1 << 12).batches(progress=shares.append))
    assert len(shares) == len(batches) > 1  # a share as each block is read
    assert shares == sorted(shares) and shares[0] > 0 and shares[-1] == 1.0
    out = FakeTerminal()
    with Progress(stream=out, delay=0.0, interval=0.0) as bars:
        result = anonymize(path, _spec(), progress=bars, engine=EmbeddedEngine(block_size=4096),
                           output=tmp_path / "release.csv")
    shown = out.getvalue()
    for doing in ("reading", "releasing"):
        assert f"{doing} people{suffix}: 100%" in shown
    assert result.check.passed


@pytest.mark.parametrize("keep_order, kind", [(False, "parquet"), (True, "parquet"),
                                              (False, "csv"), (False, "parquet of texts")])
def test_a_shuffled_release_bar_reads_then_writes_to_the_end(tmp_path, keep_order, kind):
    """Shuffled into a file, the rows are written only once the last is read: the bar's
    first half reads them, the second writes them from the shuffle's parts. In the
    source's order, reading is writing, the whole bar; so it is for a CSV file, or a
    Parquet file of texts, whose first pass kept its rows shuffled already (not one with a
    dictionary column, which is read again)."""
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"a": rng.integers(0, 16, 3000).astype(str),
                       "b": rng.integers(0, 4, 3000).astype(str)})
    path = tmp_path / f"people.{kind.split()[0]}"
    if kind == "csv":
        df.to_csv(path, index=False)
    else:
        (df if kind == "parquet of texts" else df.astype({"b": "category"})).to_parquet(path)
    heard = collections.defaultdict(list)

    class Heard(Progress):
        @contextlib.contextmanager
        def reading(self, label):
            with super().reading(label) as show:
                def told(share):
                    heard[label.split()[0]].append(share)
                    show(share)
                yield told

    engine = EmbeddedEngine(block_size=4096, batch_rows=200)
    engine_parts = mock.patch.object(embedded, "SHUFFLE_PART_ROWS", 500)
    with engine_parts, Heard(stream=FakeTerminal(), delay=0.0, interval=0.0) as bars:
        anonymize(path, _spec(), progress=bars, engine=engine, keep_order=keep_order,
                  output=tmp_path / "release.csv")
    shares = heard["releasing"]
    assert shares == sorted(shares) and shares[-1] == 1.0
    written = [share for share in shares if share > 0.5]
    if keep_order or kind != "parquet":
        assert len(written) > 1  # reading the rows, and writing them as they come
    else:
        assert 0.5 in shares and len(written) > 3  # several parts, several tables each


def test_a_table_in_memory_has_no_reading_bar():
    out = FakeTerminal()
    df = pd.DataFrame({"a": [str(i % 16) for i in range(300)], "b": ["0", "1", "2"] * 100})
    with Progress(stream=out, delay=0.0, interval=0.0) as bars:
        anonymize(df, _spec(), progress=bars)
    assert "reading" not in out.getvalue() and "releasing" not in out.getvalue()


def test_check_and_risk_show_their_pass_over_a_file(tmp_path):
    from blendin.check import check
    from blendin.risk import risk

    path = tmp_path / "release.csv"
    pd.DataFrame({"a": ["1", "2"] * 1500, "b": ["0"] * 3000}).to_csv(path, index=False)
    source = Source(path, block_size=1 << 12)
    out = FakeTerminal()
    with Progress(stream=out, delay=0.0, interval=0.0) as bars:
        assert check(source, _spec(), progress=bars).passed
        assert risk(source, "a,b", progress=bars).classes == 2
    assert "checking release.csv: 100%" in out.getvalue()
    assert "reading release.csv: 100%" in out.getvalue()


def test_applying_a_solution_shows_its_passes_over_a_file(tmp_path):
    from blendin.anonymize import apply_solution

    path = tmp_path / "new.csv"
    rng = np.random.default_rng(4)
    pd.DataFrame({"a": rng.integers(0, 16, 3000).astype(str),
                  "b": rng.integers(0, 4, 3000).astype(str)}).to_csv(path, index=False)
    first = anonymize(path, _spec())
    out = FakeTerminal()
    with Progress(stream=out, delay=0.0, interval=0.0) as bars:
        applied = apply_solution(path, first, progress=bars,
                                 engine=EmbeddedEngine(block_size=4096))
    assert applied.levels == first.levels
    assert "reading new.csv: 100%" in out.getvalue()
    assert "releasing new.csv: 100%" in out.getvalue()
