#!/bin/bash
# Shards and merge, end to end: three shard processes of one campaign (the
# shard from --shard, Slurm's and a Kubernetes Indexed Job's variables) run
# disjoint iterations that cover the campaign, and `sdpacheck merge` of them
# gives run.json (without timing) and corpus files byte-identical to the
# campaign run whole, whatever the grouping and with a shard merged twice;
# runs of other settings, overlapping merges and unfinished runs are refused.
# Usage: shard_merge_test.sh SDPACHECK
set -u
BIN=$(realpath "$1")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL $1"; failures=$((failures + 1)); }
ok() { echo "ok   $1"; }

# A mutant campaign with findings; each run in its own folder, with relative
# paths, so that recorded file paths compare equal.
CASES=240
CAMPAIGN=(--target aten --option mutant=drop-scale --cases $CASES --seed 7 --max-size 40 --no-timing)
run_in() {  # run_in DIR CMD... (output to DIR.log)
  local dir=$1
  shift
  mkdir -p "$TMP/$dir"
  (cd "$TMP/$dir" && "$@") >"$TMP/$dir.log" 2>&1
}
fuzz_in() {  # fuzz_in DIR [ENV=V...] -- ARGS...
  local dir=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  run_in "$dir" env "${envs[@]}" "$BIN" fuzz "${CAMPAIGN[@]}" --run-dir run --corpus run/corpus \
    --junit run/junit.xml "$@"
}

fuzz_in whole -- || fail "whole campaign ran"
fuzz_in s0 -- --shard 0/3 || fail "shard 0 ran"
fuzz_in s1 SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3 -- || fail "shard 1 (Slurm) ran"
fuzz_in s2 JOB_COMPLETION_INDEX=2 -- --shards 3 || fail "shard 2 (Kubernetes) ran"

# Disjoint and complete: shard I ran exactly the iterations i < CASES with
# i % 3 == I, each from where it came; the whole campaign has findings.
python3 - "$TMP" $CASES <<'PY' && ok "shards disjoint and complete" || fail "shards disjoint and complete"
import json, sys
tmp, cases = sys.argv[1], int(sys.argv[2])
whole = json.load(open(f"{tmp}/whole/run/run.json"))
assert len(whole["targets"]["aten"]["findings"]) >= 1, "the campaign has no finding"
assert "shard_source" not in whole, whole.get("shard_source")
total = digest = 0
for i, source in enumerate(["--shard", "SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"]):
    r = json.load(open(f"{tmp}/s{i}/run/run.json"))
    assert r["shard"] == f"{i}/3" and r["shard_source"] == source, (r["shard"], r["shard_source"])
    n = r["targets"]["aten"]["cases"]
    assert n == len(range(i, cases, 3)), (i, n)
    total += n
    digest += int(r["targets"]["aten"]["iteration_digest"], 16)
assert total == whole["targets"]["aten"]["cases"] == cases
# The digests (sums of a 64-bit hash of each iteration run) add up to the
# whole run's: no iteration missing or run twice.
assert digest % 2**64 == int(whole["targets"]["aten"]["iteration_digest"], 16), "iteration digests"
PY

# merge_in DIR RUN_DIRS... : merge from DIR, the shards' corpora given.
merge_in() {
  local dir=$1
  shift
  local corpora=()
  for s in s0 s1 s2 whole; do corpora+=(--corpus "$TMP/$s/run/corpus"); done
  run_in "$dir" "$BIN" merge "$@" "${corpora[@]}" --out run
}
same_as_whole() {  # same_as_whole NAME DIR
  if cmp -s "$TMP/whole/run/run.json" "$TMP/$2/run/run.json" &&
     diff -r "$TMP/whole/run/corpus" "$TMP/$2/run/corpus" >/dev/null; then
    ok "$1"
  else
    fail "$1"; diff "$TMP/whole/run/run.json" "$TMP/$2/run/run.json" | head -20; cat "$TMP/$2.log" | head
  fi
}

merge_in m "$TMP/s0/run" "$TMP/s1/run" "$TMP/s2/run" || fail "merge ran"
same_as_whole "merge equals the campaign run whole" m
# The JUnit file of the whole campaign, times aside.
if diff <(sed -E 's/ time="[^"]*"//g' "$TMP/whole/run/junit.xml") <(sed -E 's/ time="[^"]*"//g' "$TMP/m/run/junit.xml") >/dev/null &&
   grep -q 'data-render-status\|renderStatus' "$TMP/m/run/report/index.html"; then
  ok "merged junit and html report"
else
  fail "merged junit and html report"
fi

merge_in twice "$TMP/s2/run" "$TMP/s0/run" "$TMP/s1/run" "$TMP/s0/run" "$TMP/s2/run" || fail "merge twice ran"
same_as_whole "a shard merged twice counts once, in any order" twice
merge_in m01 "$TMP/s0/run" "$TMP/s1/run" || fail "merge 0+1 ran"
merge_in m12 "$TMP/s1/run" "$TMP/s2/run" || fail "merge 1+2 ran"
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['shards'] == ['0/3', '1/3']" "$TMP/m01/run/run.json" &&
  ok "a partial merge names its shards" || fail "a partial merge names its shards"
merge_in left "$TMP/m01/run" "$TMP/s2/run" || fail "merge (0+1)+2 ran"
merge_in right "$TMP/s0/run" "$TMP/m12/run" || fail "merge 0+(1+2) ran"
same_as_whole "(0+1)+2 equals the whole" left
same_as_whole "0+(1+2) equals the whole" right
merge_in again "$TMP/m/run" "$TMP/s1/run" "$TMP/m01/run" || fail "merge of the merge with its parts ran"
same_as_whole "merging the merge with its own shards changes nothing" again
merge_in withwhole "$TMP/whole/run" "$TMP/s2/run" || fail "merge of the whole run and a shard ran"
same_as_whole "the whole run holds every shard" withwhole

refused() {  # refused NAME WANT_TEXT DIR RUN_DIRS...
  local name=$1 want=$2 dir=$3
  shift 3
  if merge_in "$dir" "$@"; then fail "$name: merge succeeded"; return; fi
  if grep -qF -- "$want" "$TMP/$dir.log"; then ok "$name"; else fail "$name"; head -5 "$TMP/$dir.log"; fi
}
refused "overlapping merges" "both hold iterations of shard 1/3" bad1 "$TMP/m01/run" "$TMP/m12/run"
CAMPAIGN=(--target aten --option mutant=drop-scale --cases $CASES --seed 8 --max-size 40 --no-timing)
fuzz_in seed8 -- --shard 1/3
refused "another seed" "seed is 7 in $TMP/s0/run and 8 in $TMP/seed8/run" bad2 "$TMP/s0/run" "$TMP/seed8/run"
CAMPAIGN=(--target aten --option mutant=drop-scale --cases $CASES --seed 7 --max-size 40 --no-timing)
fuzz_in n2 -- --shard 1/2
refused "another shard count" "the shard count is 3 in" bad3 "$TMP/s0/run" "$TMP/n2/run"
CAMPAIGN=(--target aten --option mutant=gqa-modulo --cases $CASES --seed 7 --max-size 40 --no-timing)
fuzz_in opt -- --shard 1/3
refused "other options" "options is" bad4 "$TMP/s0/run" "$TMP/opt/run"
CAMPAIGN=(--target aten --option mutant=drop-scale --cases $CASES --seed 7 --max-size 40 --no-timing)
cp -r "$TMP/s1" "$TMP/s1i"
python3 - "$TMP/s1i/run/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["state"] = "interrupted"; json.dump(r, open(sys.argv[1], "w"), indent=2)
PY
refused "an unfinished run" "state is 'interrupted', not complete" bad5 "$TMP/s0/run" "$TMP/s1i/run"
if run_in taken "$BIN" merge "$TMP/s0/run" "$TMP/s1i/run" --corpus "$TMP/s0/run/corpus" --corpus "$TMP/s1i/run/corpus" \
     --out run --allow-incomplete && grep -q '"state": "interrupted"' "$TMP/taken/run/run.json"; then
  ok "--allow-incomplete takes it and says so"
else
  fail "--allow-incomplete takes it and says so"
fi
refused "a folder that is not a run" "run.json: cannot open file" bad6 "$TMP/s0"
if run_in outinput "$BIN" merge "$TMP/s0/run" "$TMP/s1/run" --out "$TMP/s1/run" && true; then
  fail "--out naming an input folder: merge succeeded"
elif grep -qF "which the merge reads" "$TMP/outinput.log" && [ -f "$TMP/s1/run/run.json" ]; then
  ok "--out naming an input folder is refused, the folder untouched"
else
  fail "--out naming an input folder is refused, the folder untouched"; head -5 "$TMP/outinput.log"
fi
cp -r "$TMP/s1" "$TMP/s1deep"
python3 - "$TMP/s1deep/run/checkpoint.json" <<'PY'
import sys
p = sys.argv[1]; t = open(p).read()
open(p, "w").write(t.replace('"done"', '"deep": ' + "[" * 100000 + "]" * 100000 + ', "done"', 1))
PY
refused "a checkpoint nested past the JSON bounds" "nested deeper than 64" bad7 "$TMP/s0/run" "$TMP/s1deep/run"

# A damaged run folder is refused, naming the file, the field and what was
# expected; none is merged as if it held nothing, or held garbage.
damaged() {  # damaged NAME PYTHON: a copy of shard 1 whose run.json (r) and checkpoint (c) PYTHON edits
  rm -rf "$TMP/$1" && cp -r "$TMP/s1" "$TMP/$1"
  python3 - "$TMP/$1/run" "$2" <<'PY'
import json, sys
d, edit = sys.argv[1], sys.argv[2]
r = json.load(open(d + "/run.json")); c = json.load(open(d + "/checkpoint.json"))
exec(edit)
json.dump(r, open(d + "/run.json", "w")); json.dump(c, open(d + "/checkpoint.json", "w"))
PY
}
refused_damaged() {  # refused_damaged NAME WANT_TEXT PYTHON
  damaged "$1" "$3"
  refused "$1" "$TMP/$1/run/$2" "$1.m" "$TMP/s0/run" "$TMP/$1/run"
  if grep -q "json.exception\|stoi" "$TMP/$1.m.log"; then fail "$1: the JSON library's message"; fi
}
refused_damaged "done empty" "checkpoint.json: done: no run of target aten, though run.json says the run is complete" 'c["done"] = []'
refused_damaged "done an object" "checkpoint.json: done: expected a list of target runs, got an object" 'c["done"] = {}'
refused_damaged "negative cases" "checkpoint.json: done[0].cases: expected a count >= 0, got -5" 'c["done"][0]["cases"] = -5'
refused_damaged "more cases than the shard holds" "checkpoint.json: done[0].cases: expected at most 80, the iterations its shards hold, got 1000000" 'c["done"][0]["cases"] = 10**6'
refused_damaged "a target not of the run" "checkpoint.json: done[0].target: \"nope\" is not a target of the run (args.targets)" 'c["done"][0]["target"] = "nope"'
refused_damaged "a verdict name" "checkpoint.json: done[0].verdicts.bogus: \"bogus\" is not a verdict name" 'c["done"][0]["verdicts"]["bogus"] = 5'
refused_damaged "a negative verdict count" "checkpoint.json: done[0].verdicts.pass: expected a count >= 0, got -3" 'c["done"][0]["verdicts"]["pass"] = -3'
refused_damaged "held -1" "checkpoint.json: held.-1: expected the index of a shard run.json names, got \"-1\"" 'c["held"] = {"-1": {"aten": 1}}'
refused_damaged "held abc" "checkpoint.json: held.abc: expected the index of a shard run.json names, got \"abc\"" 'c["held"] = {"abc": {"aten": 1}}'
refused_damaged "a shard named twice" "run.json: shards: shard 1/3 is named twice" 'r.pop("shard"); r["shards"] = ["1/3", "1/3"]'
refused_damaged "a shard with trailing text" "run.json: shard: expected \"I/N\" with 0 <= I < N, one N for all, got \"1/3xyz\"" 'r["shard"] = "1/3xyz"'
refused_damaged "an unknown run format" "run.json: format: expected \"sdpacheck.run.v1\", got \"bogus.v9\"" 'r["format"] = "bogus.v9"'
refused_damaged "no args" "checkpoint.json: args: missing required field" 'c.pop("args")'
damaged nothing 'r["state"] = "interrupted"; c["done"] = []; c["current"] = None'
if run_in nothing.m "$BIN" merge "$TMP/s0/run" "$TMP/nothing/run" --allow-incomplete --out run; then
  fail "a folder that adds nothing: merge succeeded"
elif grep -qF "$TMP/nothing/run/checkpoint.json: done: no target run (and no current one): the folder adds nothing to a merge" "$TMP/nothing.m.log"; then
  ok "a folder that adds nothing"
else
  fail "a folder that adds nothing"; head -5 "$TMP/nothing.m.log"
fi

if [ "$failures" != 0 ]; then echo "$failures failures"; exit 1; fi
echo "all shard and merge checks pass"
