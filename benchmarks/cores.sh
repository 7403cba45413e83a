#!/bin/bash
# Every core, side by side: this tree's blendin and an earlier commit's on the same
# adult-like tables, each measurement pinned to 1, 2 and every core (bench_scale --cores),
# CSV and Parquet; one JSON line per measurement in OUT (default ./cores-out).
#
#   bash benchmarks/cores.sh 10000000 5acf0cd        # rows, the earlier commit
#
# The machine needs git, taskset and this project's dependencies; BLENDIN_DATA may name the
# folder holding adult/ (default ../shared/data).
set -u
cd "$(dirname "$0")/.." || exit 1
ROWS=${1:-10000000}; BEFORE=${2:-HEAD~1}; OUT=${OUT:-$PWD/cores-out}; PY=${PY:-python3}
mkdir -p "$OUT"
OLD=$(mktemp -d)
trap 'rm -rf "$OLD"' EXIT
git archive "$BEFORE" src | tar -x -C "$OLD" || exit 1
# both trees compiled: where PYTHONDONTWRITEBYTECODE is set, a tree without bytecode caches
# compiles blendin's modules in every run
$PY -m compileall -q "$PWD/src" "$OLD/src" > /dev/null
bench() {  # label, source folder, then bench_scale's arguments
    local label=$1 src=$2; shift 2
    echo "== $label $*"
    PYTHONPATH=$src $PY benchmarks/bench_scale.py --no-spark --json "$OUT/$label.jsonl" "$@"
}
for format in csv parquet; do
    bench now "$PWD/src" --rows "$ROWS" --format "$format" --cores all,1,2
    bench before "$OLD/src" --rows "$ROWS" --format "$format" --cores all,1,2
done
