#!/bin/sh
# Builds tools/reference/clusterlod_bench (see clusterlod_bench.cpp) against a meshoptimizer
# checkout: MESHOPT is its root (src/meshoptimizer.h and src/*.cpp, demo/clusterlod.h; a version
# with clusterlod.h's clodBuild and meshopt_partitionClusters, 0.24 or later). CLUSTERLOD, if
# given, is another clusterlod.h to use. Optimized as meshoptimizer's release builds are (-O3).
#
#     sh tools/reference/build.sh ~/src/meshoptimizer
#     python tools/bench_preprocess.py --reference tools/reference/clusterlod_bench
set -e
MESHOPT=${1:?usage: build.sh MESHOPTIMIZER_CHECKOUT [CLUSTERLOD_H]}
CLUSTERLOD=${2:-$MESHOPT/demo/clusterlod.h}
for f in "$MESHOPT/src/meshoptimizer.h" "$CLUSTERLOD"; do
    [ -f "$f" ] || { echo "build.sh: $f not found (a meshoptimizer checkout with demo/clusterlod.h?)" >&2; exit 2; }
done
HERE=$(cd "$(dirname "$0")" && pwd)
INC=$(mktemp -d)
trap 'rm -rf "$INC"' EXIT
cp "$CLUSTERLOD" "$INC/clusterlod.h"
${CXX:-g++} -O3 -DNDEBUG -std=c++17 -I"$MESHOPT/src" -I"$INC" "$HERE/clusterlod_bench.cpp" \
    "$MESHOPT"/src/*.cpp -o "$HERE/clusterlod_bench"
echo "built $HERE/clusterlod_bench"
