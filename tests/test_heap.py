"""tune_heap: arrays made and freed in turn reuse pages instead of faulting in new
ones; never over the user's own malloc settings. Each case runs in a process of its own (the
setting is the process's)."""

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc",
                                reason="the thresholds are glibc's")

CHURN = """
import resource, sys
import numpy as np
from blendin.heap import tune_heap

kept = tune_heap() if sys.argv[1] == "keep" else False

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

def churn():  # three arrays of 240 KB alive at once, then freed: a run's pattern
    a = np.ones(30_000); b = a + 1; c = b * 2
    return float(c[0])

for _ in range(3):
    churn()
start = faults()
for _ in range(100):
    churn()
print(kept, faults() - start)
"""


def run(mode: str, **env: str) -> tuple[bool, int]:
    environment = {k: v for k, v in os.environ.items()
                   if not (k.startswith("MALLOC_") or k == "GLIBC_TUNABLES")}
    out = subprocess.run([sys.executable, "-c", CHURN, mode], capture_output=True, text=True,
                         check=True, env={**environment, **env}).stdout.split()
    return out[0] == "True", int(out[1])


def test_freed_arrays_are_reused_without_new_faults():
    kept, faults = run("keep")
    _, control = run("leave")
    if control < 1000:  # this system's malloc keeps the pages by itself: nothing to show
        pytest.skip(f"freed arrays cost only {control} faults here without the setting")
    assert kept
    assert faults < 100, f"{faults} faults over 100 rounds, {control} without the setting"


@pytest.mark.parametrize("env", [{"MALLOC_TOP_PAD_": "0"},
                                 {"GLIBC_TUNABLES": "glibc.malloc.check=0"}])
def test_the_users_own_malloc_settings_stand(env):
    kept, _ = run("keep", **env)
    assert not kept


HELD = """
import sys
import numpy as np
from blendin.heap import tune_heap

tuned = tune_heap(small_process=True) if sys.argv[1] == "small" else False

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

big = np.ones(4 << 17)  # a 4 MiB array freed: glibc's own threshold rises to it
del big
arrays = [np.ones(1 << 17) for _ in range(40)]  # 40 arrays of 1 MiB
top = np.ones(1 << 17)  # one made last, still held
before = rss_mib()
del arrays  # freed below the one still held
print(tuned, before - rss_mib())
"""


def test_a_small_process_hands_freed_arrays_back():
    """With ``small_process`` the thresholds stay where glibc starts: each array above 128
    KiB is mapped apart, and freeing it hands its pages back, wherever it lies."""
    environment = {k: v for k, v in os.environ.items()
                   if not (k.startswith("MALLOC_") or k == "GLIBC_TUNABLES")}

    def freed(mode: str) -> tuple[bool, float]:
        out = subprocess.run([sys.executable, "-c", HELD, mode], capture_output=True,
                             text=True, check=True, env=environment).stdout.split()
        return out[0] == "True", float(out[1])

    tuned, small = freed("small")
    _, control = freed("leave")
    assert tuned
    assert small > 35, f"{small:.0f} MiB of 40 handed back"
    if control > 35:  # this system's malloc hands them back by itself: nothing to compare
        pytest.skip(f"{control:.0f} MiB handed back here without the setting")
