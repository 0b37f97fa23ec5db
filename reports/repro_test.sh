#!/bin/bash
# End-to-end tests of `sdpacheck repro`: the PyTorch script of the LibTorch 1.13
# fully-masked-row entry reproduces the NaN row against golden 0, a pass entry's
# script does not reproduce, a bottom-right causal call is named and passed as a
# mask; the script of a finding in the rewrite (llm) says ExecuTorch is not
# installed and sets sdpacheck's model beside PyTorch's call, and with the
# ExecuTorch test double on PYTHONPATH runs its ExecuTorch branch (the stub
# pass's rewrite compared, a raising pass, an aborting program); --gtest embeds
# the entry in a TEST, usage errors exit 2.
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

# A finding in the rewrite (llm unsound-rewrite, defect (a): unmasked, Lq 1 < Lkv 2: custom_sdpa
# attends key 0 only). ExecuTorch is not a Debian package: the script says what it ran and what it
# could not, and sets the model's result beside PyTorch's.
UNSOUND=$SRC/corpus/llm/llm-unsound-rewrite-9c7b702d-88fbd83d.json
"$BIN" repro "$UNSOUND" --pytorch -o "$TMP/unsound.py"
$PY "$TMP/unsound.py" >"$TMP/unsound.out" 2>&1
check unsound-says-what-ran 0 "^ExecuTorch not installed: ran the original call only; the rewrite's result is sdpacheck's model of llama\.custom_sdpa$" cat "$TMP/unsound.out"
check unsound-names-the-pass 0 "^  - executorch\.extension\.llm\.export\.export_passes\.ReplaceSDPAWithCustomSDPAPass" cat "$TMP/unsound.out"
check unsound-probes 0 "^  executorch\.extension\.llm\.export\.export_passes: not importable \(ModuleNotFoundError" cat "$TMP/unsound.out"
check unsound-side-by-side 0 "^  output\[0, 0, 0, 0\]: model 1\.38096[0-9]*, PyTorch 0\.60467[0-9]*, golden 0\.60467[0-9]*$" cat "$TMP/unsound.out"
check unsound-verdict 0 "^REPRODUCED IN MODEL: sdpacheck's model of the rewrite \(llama\.custom_sdpa\) differs from PyTorch's original call at output\[0, 0, 0, 0\]: model 1\.38096[0-9]*, PyTorch 0\.60467[0-9]*$" tail -1 "$TMP/unsound.out"
# The verdict comes from the embedded numbers: a model that gives PyTorch's value does not reproduce.
sed -n '/^MODEL_RUNS = \[/,/^\]/p' "$TMP/unsound.py" | grep -q 1.3809669017791748 || fail "model value not embedded" ""
GOLD=$(sed -n '/"golden": \[/{n;p}' "$TMP/unsound.py" | tr -d ' ,')
sed "/^MODEL_RUNS = \[/,/^\]/s/^        1\.3809669017791748,/        $GOLD,/" "$TMP/unsound.py" >"$TMP/agrees.py"
check model-that-agrees 0 "^NOT REPRODUCED IN MODEL: sdpacheck's model of the rewrite \(llama\.custom_sdpa\) agrees with PyTorch's original call" bash -c "$PY '$TMP/agrees.py' | tail -1"
# Dropout ignored (defect (e)): the original call is the float64 composition with sdpacheck's keep mask.
check dropout-verdict 0 "^REPRODUCED IN MODEL: sdpacheck's model of the rewrite \(llama\.custom_sdpa\) differs from the original call's float64 composition at output\[0, 0, 0, 0\]: model -0\.93164" \
  bash -c "'$BIN' repro '$SRC/corpus/llm/llm-unsound-rewrite-d8bde5a2-4ec41f7a.json' --pytorch | $PY - | tail -1"
# custom_sdpa's fatal check (Lkv < start_pos + Lq), and the pass's own assertion at export.
check crash-verdict 0 "^REPRODUCED IN MODEL: sdpacheck's model of the rewrite \(llama\.custom_sdpa\) fails at run 0: .*num_keys_for_causal_attention must be <= kvSize.*, where PyTorch's original call returns a result$" \
  bash -c "'$BIN' repro '$SRC/corpus/llm/llm-crash-4a41dfd9-e5f8985f.json' --pytorch | $PY - | tail -1"
check pass-raised-verdict 0 "^REPRODUCED IN MODEL: sdpacheck's model of the rewrite \(llama\.custom_sdpa\) fails: pass replace-sdpa-with-custom-sdpa raised: AssertionError" \
  bash -c "'$BIN' repro '$SRC/corpus/llm/llm-unexpected-error-2400c5d7-edbd99af.json' --pytorch | $PY - | tail -1"

# The ExecuTorch branch, run against reports/testdata/executorch_test_double: a TEST DOUBLE of the
# two ExecuTorch modules the llm script imports, whose stub pass rewrites as SDPACHECK_TEST_REWRITE
# says (the real ExecuTorch branch does not run on this machine).
et() { PYTHONPATH=$SRC/reports/testdata/executorch_test_double SDPACHECK_TEST_REWRITE=$1 $PY "$TMP/unsound.py"; }
et_last() { et "$1" 2>/dev/null | tail -1; }
check et-ran 0 "^run 0: ExecuTorch 0\.0\.0\+sdpacheck-test-double: torch\.export\.export\(\.\.\., strict=True\)\.module\(\), ReplaceSDPAWithCustomSDPAPass\(assume_causal_mask=False\)" et first-keys
check et-first-keys 0 "^REPRODUCED: the rewritten program differs from PyTorch's original call at output\[0, 0, 0, 0\]: rewritten 1\.38096[0-9]*, PyTorch 0\.60467[0-9]*$" et_last first-keys
check et-side-by-side 0 "^  output\[0, 0, 0, 0\]: rewritten 1\.38096[0-9]*, PyTorch 0\.60467[0-9]*, golden 0\.60467[0-9]*, model 1\.38096[0-9]*$" et first-keys
check et-keep 0 "^NOT REPRODUCED: the rewritten program agrees with PyTorch's original call and sdpacheck's golden; sdpacheck's model of the rewrite \(llama\.custom_sdpa\) differs from the original call at output\[0, 0, 0, 0\]: model 1\.38096[0-9]*, PyTorch 0\.60467[0-9]*$" et_last keep
check et-raise 0 "^REPRODUCED: ReplaceSDPAWithCustomSDPAPass raised AssertionError: test double: the pass raises, where PyTorch's original call returns a result$" et_last raise
check et-abort 0 "^REPRODUCED: the rewritten program ended its process with SIGABRT, where PyTorch's original call returns a result$" et_last abort

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
