#!/bin/bash
# End-to-end tests of `sdpacheck repro`: the PyTorch script of the LibTorch 1.13
# fully-masked-row entry reproduces the NaN row against golden 0, a pass entry's
# script does not reproduce, a bottom-right causal call is named and passed as a
# mask, --gtest embeds the entry in a TEST, usage errors exit 2.
# (reports/CMakeLists.txt compiles and runs a --gtest draft as its own test.)
# Usage: repro_test.sh SDPACHECK SOURCE_DIR
# Exit 77 (skipped) when /usr/bin/python3 has no torch.
set -u
BIN=$1
SRC=$2
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
$PY -c 'import torch' 2>/dev/null || { echo "skip: $PY has no torch"; exit 77; }

fail() { echo "FAIL $1"; echo "$2" | tail -20; failures=$((failures + 1)); }

check() {  # check NAME WANT_RC WANT_REGEX CMD...
  local name=$1 want_rc=$2 want=$3
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" != "$want_rc" ]; then fail "$name: exit $rc, expected $want_rc" "$out"; return; fi
  if ! grep -qE -- "$want" <<<"$out"; then fail "$name: output lacks /$want/" "$out"; return; fi
  echo "ok   $name"
}

FM=$SRC/corpus/aten/aten-known-divergence-libtorch-fully-masked.json
PASS=$SRC/corpus/aten/aten-pass-gqa-head-mapping.json

check fully-masked-script 0 "" "$BIN" repro "$FM" --pytorch -o "$TMP/fm.py"
check fully-masked-nan-row 0 "row \([0-9, ]+\): PyTorch nan, sdpacheck golden 0\.0 \(fully masked row\)" $PY "$TMP/fm.py"
check fully-masked-reproduced 0 "^REPRODUCED: " bash -c "$PY '$TMP/fm.py' | tail -1"
check pass-not-reproduced 0 "^NOT REPRODUCED: PyTorch agrees with sdpacheck's golden$" \
  bash -c "'$BIN' repro '$PASS' --pytorch | $PY - | tail -1"
# The fallbacks: dropout (sdpacheck's keep mask) and f16 (no f16 bmm on 1.13's CPU).
for f in aten-pass-dropout aten-pass-bshd-f16-window; do
  check "$f-runs" 0 "^NOT REPRODUCED: " bash -c "'$BIN' repro '$SRC/corpus/aten/$f.json' --pytorch | $PY - | tail -1"
done

# A direct flash call's causal rule is bottom-right: the script names it and passes it
# as a mask, so PyTorch agrees with the golden (top-left would differ by 0.41 here).
BR=$SRC/corpus/cuda/cuda-unsupported-flash-bottom-right-causal.json
"$BIN" repro "$BR" --pytorch -o "$TMP/br.py"
check bottom-right-named 0 "^# aten\._scaled_dot_product_flash_attention align it \(query i keeps key j iff$" cat "$TMP/br.py"
check bottom-right-not-reproduced 0 "^NOT REPRODUCED: " bash -c "$PY '$TMP/br.py' | tail -1"
sed 's/^CAUSAL_ALIGNMENT = .*/CAUSAL_ALIGNMENT = "top-left"/' "$TMP/br.py" >"$TMP/tl.py"
check top-left-would-differ 0 "^REPRODUCED: " bash -c "$PY '$TMP/tl.py' | tail -1"

check gtest-stdout 0 "TEST\(CorpusRegression, AtenPassGqaHeadMapping\)" "$BIN" repro "$PASS" --gtest
"$BIN" repro "$PASS" --gtest -o "$TMP/gqa_test.cpp"
check gtest-embeds-entry 0 "same entry" $PY -c "
import json, re, sys
text = open('$TMP/gqa_test.cpp').read()
embedded = re.search(r'R\"sdpacheck_entry\((.*)\)sdpacheck_entry\"', text, re.S).group(1)
sys.exit('embedded entry differs') if json.loads(embedded) != json.load(open('$PASS')) else print('same entry')"

check both-flags 2 "expected exactly one of --pytorch or --gtest" "$BIN" repro "$PASS" --pytorch --gtest
check no-flag 2 "expected exactly one of --pytorch or --gtest" "$BIN" repro "$PASS"
check invalid-file 2 "unknown_field.json.*case.kv_head: unknown field" \
  "$BIN" repro "$SRC/cli/testdata/invalid/unknown_field.json" --pytorch

[ "$failures" = 0 ] && echo "all repro checks passed" || echo "$failures repro checks failed"
[ "$failures" = 0 ]
