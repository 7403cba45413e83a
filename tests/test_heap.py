"""keep_freed_memory: arrays made and freed in turn reuse pages instead of faulting in new
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
from blendin.heap import keep_freed_memory

kept = keep_freed_memory() if sys.argv[1] == "keep" else False

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
