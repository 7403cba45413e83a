"""The shared pool: every item done once, the caller's inline items too, errors raised."""

import threading

import pytest

from blendin import parallel


@pytest.mark.parametrize("use_pool", [True, False])
def test_each_does_every_item_once(use_pool):
    seen, lock, threads = [], threading.Lock(), set()

    def work(item):
        with lock:
            seen.append(item)
            threads.add(threading.current_thread().name)

    parallel.each(work, range(6), use_pool, inline=[6, 7])
    assert sorted(seen) == list(range(8))
    assert any(name.startswith("blendin-work") for name in threads) == (
        use_pool and parallel.workers() > 1)


def test_each_raises_the_error_of_an_item_once_the_others_have_run():
    done = []

    def work(item):
        done.append(item)
        if item == 1:
            raise ValueError("item 1")

    with pytest.raises(ValueError, match="item 1"):
        parallel.each(work, range(4), inline=[4])
    if parallel.workers() > 1:  # in turn, the items after the failing one are not done
        assert sorted(done) == [0, 1, 2, 3, 4]


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork on this system")
def test_a_forked_child_makes_its_own_pool():
    """A child forked after the parent used the pool has none of its threads: it must not
    hand work to that pool (it would wait for ever)."""
    import multiprocessing

    parallel.each(lambda _: None, range(4))  # the parent's pool exists
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        done = pool.apply_async(_coded_in_a_child).get(timeout=60)
    assert done == list(range(6))


def _coded_in_a_child():
    seen, lock = [], threading.Lock()

    def work(item):
        with lock:
            seen.append(item)

    parallel.each(work, range(6))
    return sorted(seen)


def test_work_on_the_pool_does_its_own_items_in_turn():
    """Each on the pool's threads, from every one of them at once: nothing waits for a
    thread that is itself waiting."""
    seen, lock = [], threading.Lock()

    def inner(item):
        with lock:
            seen.append(item)

    def outer(item):
        parallel.each(inner, range(10 * item, 10 * item + 10))

    runner = threading.Thread(target=parallel.each, args=(outer, range(parallel.workers() + 2)),
                              daemon=True)
    runner.start()
    runner.join(timeout=60)
    assert not runner.is_alive(), "the pool waits on itself"
    assert sorted(seen) == list(range(10 * (parallel.workers() + 2)))


def test_threads_are_limited_here_and_in_arrow_and_the_answers_stay_the_same(monkeypatch):
    import pyarrow as pa
    from engine_cases import spec_for, table

    import blendin as bl

    df = table()
    everything = bl.anonymize(df, spec_for(df), shuffle_seed=1)
    try:
        bl.set_threads(1)
        assert parallel.workers() == 1 and pa.cpu_count() == 1
        one = bl.anonymize(df, spec_for(df), shuffle_seed=1)
    finally:
        bl.set_threads(None)
    assert parallel.workers() == parallel.cores() == pa.cpu_count()
    assert one.levels == everything.levels and one.data.equals(everything.data)
    monkeypatch.setenv(parallel.THREADS_VARIABLE, "two")
    with pytest.raises(bl.BlendinError, match="BLENDIN_THREADS = 'two'"):
        parallel.workers()


def test_the_cli_takes_threads_and_names_a_bad_variable(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from blendin.cli import main

    data = tmp_path / "t.csv"
    data.write_text("age,sex\n30,f\n31,m\n30,f\n")
    try:
        ok = CliRunner().invoke(main, ["--threads", "1", "risk", str(data), "--qi", "age"])
        assert ok.exit_code == 0 and "records" in ok.output and parallel.workers() == 1
    finally:
        parallel.set_threads(None)
    bad = CliRunner().invoke(main, ["--threads", "0", "risk", str(data), "--qi", "age"])
    assert bad.exit_code == 2 and "--threads" in bad.output
    monkeypatch.setenv(parallel.THREADS_VARIABLE, "0")
    run = CliRunner().invoke(main, ["risk", str(data), "--qi", "age"])
    assert run.exit_code == 2 and "BLENDIN_THREADS = '0'" in run.output
    assert "Traceback" not in run.output


@pytest.mark.parametrize("ahead", [None, 1, 3])
def test_ordered_hands_out_in_order_and_raises_an_items_error(ahead):
    import time

    def slow_first(item):
        time.sleep(0.02 if item == 0 else 0)  # the first done last: handed out first still
        if item == 7:
            raise ValueError("item 7")
        return item * 2

    got = []
    with pytest.raises(ValueError, match="item 7"):
        for value in parallel.ordered(slow_first, range(10), ahead=ahead):
            got.append(value)
    assert got == [0, 2, 4, 6, 8, 10, 12]


def test_leaving_ordered_early_starts_no_more_work():
    started = []

    def work(item):
        started.append(item)
        return item

    for value in parallel.ordered(work, iter(range(1000)), ahead=2):
        if value == 3:
            break
    assert len(started) <= 3 + 2 + 1  # those handed out, those ahead, one being taken
    assert list(parallel.ordered(work, [], ahead=2)) == []


def test_calls_in_turn_run_in_order_and_raise_the_first_error():
    from blendin.parallel import InTurn

    seen, names = [], set()

    def work(i):
        names.add(threading.current_thread().name)
        if i == 5:
            raise OSError("disk full")
        seen.append(i)

    calls = InTurn(held=2, name="blendin-test")
    with pytest.raises(OSError, match="disk full"):
        for i in range(8):
            calls(work, i)
        calls.finish()
    calls.finish(raise_error=False)
    assert seen[:5] == [0, 1, 2, 3, 4] and 5 not in seen
    assert names == {"blendin-test_0"}
