"""How long ``blendin app`` takes from the command to a served page, next to importing blendin.

Each run starts ``blendin app --no-browser --port 0`` as a new process, reads the address it
prints (its key included) and fetches the page until it is served; ``import blendin`` alone
is timed the same way (a new process each time), for comparison.

Run: python benchmarks/bench_app_startup.py --runs 5
"""

from __future__ import annotations

import argparse
import http.cookiejar
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request


def served(blendin: str) -> float:
    start = time.perf_counter()
    process = subprocess.Popen([blendin, "app", "--no-browser", "--port", "0"],
                               stdout=subprocess.PIPE, text=True)
    try:
        # the whole address, key included: the app answers 403 to a request without it, and
        # redirects the one with it to the page, keeping the key as a cookie
        url = re.search(r"http://\S+", process.stdout.readline()).group(0)
        browser = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        while True:
            try:
                browser.open(url).read()
                return time.perf_counter() - start
            except urllib.error.HTTPError:
                raise  # served, but not the page: measuring on would never end
            except OSError:
                time.sleep(0.01)
    finally:
        process.terminate()
        process.wait()


def imported() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import blendin"], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    blendin = os.path.join(os.path.dirname(sys.executable), "blendin")
    for name, measure in (("import blendin", imported),
                          ("blendin app -> page", lambda: served(blendin))):
        times = [measure() for _ in range(args.runs)]
        print(f"{name:<22} median {statistics.median(times):.2f} s  "
              f"(runs: {', '.join(f'{t:.2f}' for t in times)})")


if __name__ == "__main__":
    main()
