#!/bin/bash
# Runs the corpus reader's libFuzzer target (harness/io/fuzz) for SECONDS
# (default 60): clang with -fsanitize=fuzzer,address,undefined, in its own
# build folder build-fuzz/ (only the harness is compiled there). Seeds: the
# repository's corpus/ and cli/testdata/ (valid and deliberately invalid
# files) and the inputs earlier runs kept in harness/io/fuzz/corpus/.
# A crash, sanitizer report, unhandled exception or hang stops it with the
# input written to build-fuzz/crash-* and exit status non-zero.
# Usage: scripts/fuzz_corpus_reader.sh [SECONDS]
set -eu
TIME=${1:-60}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-fuzz
command -v clang++ >/dev/null || { echo "clang++ is needed (apt-get install clang)" >&2; exit 2; }
FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -g -O1"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS="$FLAGS" -DSDPA_FUZZ_TARGETS=ON >/dev/null
cmake --build "$BUILD" -j "${JOBS:-2}" --target corpus_reader_fuzz
KEPT=$ROOT/harness/io/fuzz/corpus
mkdir -p "$KEPT"
cd "$BUILD"
# New inputs that reach new code are kept in the first folder.
exec ./harness/io/fuzz/corpus_reader_fuzz -max_total_time="$TIME" -timeout=10 -rss_limit_mb=2048 \
  -max_len=16384 -print_final_stats=1 "$KEPT" "$ROOT/corpus" "$ROOT/cli/testdata"
