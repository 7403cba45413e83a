#!/usr/bin/env bash
# Compile the ARX utility harness (ArxUtility.java) against an already built ARX core library.
#   BLENDIN_ARX_CP  file holding ARX's classpath (one line, ':'-separated); default /tmp/arx-build/cp.txt,
#                   as written by ../shared/peers/arx/build.sh
#   WORK            build folder; default /tmp/arx-build. Classes go to $WORK/utility.
# Prints the classpath to run with (ARX classpath + $WORK/utility) and writes it to $WORK/utility-cp.txt:
#   java -cp "$(cat /tmp/arx-build/utility-cp.txt)" ArxUtility /work/shared/data adult salary-class 5 0.05 /tmp/adult_arx.csv age
set -euo pipefail
CP_FILE=${BLENDIN_ARX_CP:-/tmp/arx-build/cp.txt}
WORK=${WORK:-/tmp/arx-build}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -r "$CP_FILE" ] || { echo "ARX classpath file not found: $CP_FILE (build ARX first, see shared/peers/arx/build.sh)" >&2; exit 1; }
CP=$(tr -d '\n' < "$CP_FILE")
OUT="$WORK/utility"
rm -rf "$OUT"; mkdir -p "$OUT"
javac -nowarn -encoding UTF-8 -d "$OUT" -cp "$CP" "$HERE/ArxUtility.java"
echo "$CP:$OUT" > "$WORK/utility-cp.txt"
echo "$CP:$OUT"
