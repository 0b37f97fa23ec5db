#!/bin/bash
# Kill-safety of campaigns: KILLS times, a campaign (started, then resumed
# with --resume) is killed with SIGKILL at a random moment; after each kill
# every file of its run folder and corpus is whole (valid JSON; temporary
# files aside), and once it is resumed to the end its run.json and corpus
# equal those of a campaign never interrupted. Also: SIGTERM and SIGINT stop
# a campaign cleanly, with run.json written and the campaign resumable.
# Usage: durability_test.sh SDPACHECK [KILLS]
set -u
BIN=$1
KILLS=${2:-50}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
ARGS=(--target aten --option mutant=drop-scale --cases 150 --seed 11 --no-timing)
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# Every file but write_file_atomically's temporaries parses as JSON.
all_whole() {
  "$PY" - "$@" <<'PYEOF'
import json, os, re, sys
bad = []
for root in sys.argv[1:]:
    for d, _, files in os.walk(root):
        for f in files:
            if re.search(r"\.tmp\.[A-Za-z0-9]{6}$", f):
                continue
            p = os.path.join(d, f)
            try:
                json.load(open(p))
            except Exception as e:
                bad.append(f"{p}: {e}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PYEOF
}

t0=$(date +%s.%N)
"$BIN" fuzz "${ARGS[@]}" --corpus "$TMP/c0" --run-dir "$TMP/r0" >/dev/null || fail "uninterrupted run"
T=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')  # the run's wall time, start-up included
grep -q '"findings": \[$' "$TMP/r0/run.json" || fail "the reference run has no findings"

kills=0
completed=0
start=$SECONDS
while [ $kills -lt "$KILLS" ]; do
  if [ -f "$TMP/r1/checkpoint.json" ]; then
    "$BIN" fuzz --resume "$TMP/r1" >/dev/null 2>&1 &
  else
    "$BIN" fuzz "${ARGS[@]}" --corpus "$TMP/c1" --run-dir "$TMP/r1" >/dev/null 2>&1 &
  fi
  pid=$!
  sleep "$(awk -v t="$T" -v r=$RANDOM 'BEGIN { print t * r / 32767 }')"  # any moment of a run
  if kill -0 $pid 2>/dev/null; then
    kill -KILL $pid
    kills=$((kills + 1))
  fi
  wait $pid 2>/dev/null
  out=$(all_whole "$TMP/r1" "$TMP/c1") || fail "after kill $kills: a partial or corrupt file: $out"
  if grep -q '"state": "complete"' "$TMP/r1/run.json" 2>/dev/null; then
    completed=$((completed + 1))  # resumed to its end between kills: start another
    rm -rf "$TMP/r1" "$TMP/c1"
  fi
done
echo "killed $kills times in $((SECONDS - start)) s; $completed campaigns ended between kills and were started again"
if [ -f "$TMP/r1/checkpoint.json" ]; then
  "$BIN" fuzz --resume "$TMP/r1" >/dev/null || fail "the last resume"
else  # every kill came before the first checkpoint
  "$BIN" fuzz "${ARGS[@]}" --corpus "$TMP/c1" --run-dir "$TMP/r1" >/dev/null || fail "the last run"
fi
cmp "$TMP/r0/run.json" <(sed "s#$TMP/c1#$TMP/c0#g" "$TMP/r1/run.json") || fail "resumed run.json differs from the uninterrupted one"
diff <(cd "$TMP/c0" && find . -name '*.json' | sort) <(cd "$TMP/c1" && find . -name '*.json' | sort) ||
  fail "resumed corpus differs from the uninterrupted one"

# SIGTERM and SIGINT once the campaign runs (run.json says so): it stops
# after its case, says how to resume, and the resumed run is the whole one.
SIG_ARGS=(--target aten --option mutant=drop-scale --cases 600 --seed 12 --no-timing)
"$BIN" fuzz "${SIG_ARGS[@]}" --corpus "$TMP/c-ref" --run-dir "$TMP/r-ref" >/dev/null || fail "uninterrupted run of 600 cases"
for sig in TERM INT; do
  "$BIN" fuzz "${SIG_ARGS[@]}" --corpus "$TMP/c-$sig" --run-dir "$TMP/r-$sig" >"$TMP/out-$sig" 2>&1 &
  pid=$!
  for _ in $(seq 600); do grep -qs '"state": "running"' "$TMP/r-$sig/run.json" && break; sleep 0.05; done
  kill -$sig $pid
  wait $pid
  rc=$?
  [ $rc = $((128 + $(kill -l $sig))) ] || fail "SIG$sig: exit $rc"
  grep -q '"state": "interrupted"' "$TMP/r-$sig/run.json" || fail "SIG$sig: run.json does not say interrupted"
  grep -q "fuzz --resume" "$TMP/out-$sig" || fail "SIG$sig: no resume hint"
  "$BIN" fuzz --resume "$TMP/r-$sig" >/dev/null || fail "SIG$sig: resume"
  cmp "$TMP/r-ref/run.json" <(sed "s#$TMP/c-$sig#$TMP/c-ref#g" "$TMP/r-$sig/run.json") || fail "SIG$sig: resumed run.json differs"
done

[ $failures -eq 0 ] && echo "all durability checks passed" || echo "$failures failures"
exit $((failures > 0))
