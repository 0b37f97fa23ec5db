#!/bin/bash
# End to end: a mutant campaign on aten writes a JUnit file that validates
# against reports/junit.xsd with consistent counts, and an HTML page that
# renders in headless Chromium (renderStatus ok) with every section; a cuda
# campaign with the Triton kernels does the same with its own findings.
# Usage: reports_test.sh SDPACHECK SOURCE_DIR
# Exits 77 (skipped) without xmllint or Chromium (scripts/install-deps.sh installs both).
set -u
BIN=$1
SRC=$2
for tool in xmllint "${CHROMIUM:-/usr/bin/chromium}"; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

if ! "$BIN" fuzz --target aten --cases 300 --option mutant=drop-scale --corpus "$TMP/corpus" \
     --run-dir "$TMP/run" --junit "$TMP/out/junit.xml" --html "$TMP/out/html" >"$TMP/fuzz.log" 2>&1; then
  cat "$TMP/fuzz.log"; echo "FAIL fuzz"; exit 1
fi
JUNIT=$TMP/out/junit.xml
PAGE=$TMP/out/html/index.html

if xmllint --noout --schema "$SRC/reports/junit.xsd" "$JUNIT" 2>"$TMP/xmllint.log"; then ok junit-valid
else cat "$TMP/xmllint.log"; fail junit-valid; fi

xpath() { xmllint --xpath "$1" "$JUNIT" 2>/dev/null; }
[ "$(xpath 'count(//testsuite)')" = 1 ] && [ "$(xpath 'count(//testcase)')" = 7 ] &&
  [ "$(xpath 'string(/testsuites/@tests)')" = 7 ] && [ "$(xpath 'string(//testsuite/@tests)')" = 7 ] &&
  ok junit-one-testcase-per-check || fail junit-one-testcase-per-check
failed_cases=$(xpath 'count(//testcase[failure])')
[ "$failed_cases" -ge 1 ] && [ "$(xpath 'string(/testsuites/@failures)')" = "$failed_cases" ] &&
  [ "$(xpath 'string(//testsuite/@failures)')" = "$failed_cases" ] &&
  ok junit-failure-counts || fail "junit-failure-counts ($failed_cases testcases with a failure)"
[ "$(xpath 'string(//testcase[@name="soundness"]/failure/@type)')" = unsound-rewrite ] &&
  ok junit-drop-scale-is-unsound || fail junit-drop-scale-is-unsound
replay=$(xpath 'string(//testcase[@name="soundness"]/failure)' | sed -n 's/^replay: sdpacheck replay //p' | head -1)
[ -n "$replay" ] && [ -f "$replay" ] && ok junit-replay-file-exists || fail "junit-replay-file-exists ('$replay')"

if "$SRC/scripts/render_report.sh" --check-dom "$PAGE" "$TMP/dom.html" >"$TMP/render.log" 2>&1; then
  ok html-renders
else cat "$TMP/render.log"; fail html-renders; fi
for id in summary verdicts error-ratios guard-decisions coverage findings; do
  grep -q "<section id=\"$id\">" "$TMP/dom.html" 2>/dev/null && ok "html-section-$id" || fail "html-section-$id"
done
grep -q "<svg" "$TMP/dom.html" && grep -q 'unsound-rewrite' "$TMP/dom.html" &&
  grep -q "sdpacheck replay $TMP/corpus/aten/" "$TMP/dom.html" && ok html-finding-shown || fail html-finding-shown

# The cuda target with the Triton kernels on: its refusals are invalid-rewrite
# failures naming the Triton op, in a valid JUnit file and a page that renders.
if ! "$BIN" fuzz --target cuda --cases 200 --option triton=on --corpus "$TMP/cuda-corpus" \
     --run-dir "$TMP/cuda-run" --junit "$TMP/cuda/junit.xml" --html "$TMP/cuda/html" >"$TMP/cuda.log" 2>&1; then
  cat "$TMP/cuda.log"; echo "FAIL cuda fuzz"; exit 1
fi
if xmllint --noout --schema "$SRC/reports/junit.xsd" "$TMP/cuda/junit.xml" 2>"$TMP/xmllint.log"; then ok cuda-junit-valid
else cat "$TMP/xmllint.log"; fail cuda-junit-valid; fi
JUNIT=$TMP/cuda/junit.xml
[ "$(xpath 'string(//testsuite/@name)')" = cuda ] &&
  xpath 'string(//testcase[@name="soundness"]/failure)' | grep -q '^detail: %sdpa (triton\.sdpa\.default): ' &&
  ok cuda-junit-triton-refusal || fail cuda-junit-triton-refusal
if "$SRC/scripts/render_report.sh" --check-dom "$TMP/cuda/html/index.html" "$TMP/cuda-dom.html" >"$TMP/render.log" 2>&1; then
  ok cuda-html-renders
else cat "$TMP/render.log"; fail cuda-html-renders; fi
grep -q 'invalid-rewrite' "$TMP/cuda-dom.html" && grep -q "sdpacheck replay $TMP/cuda-corpus/cuda/" "$TMP/cuda-dom.html" &&
  grep -q 'outputs-used' "$TMP/cuda-dom.html" && ok cuda-html-finding-shown || fail cuda-html-finding-shown
grep -q '<section id="variants">' "$TMP/cuda-dom.html" && grep -q '<td>lse-reader</td>' "$TMP/cuda-dom.html" &&
  ok cuda-html-variants || fail cuda-html-variants

# A script error on the page must be reported, not hidden behind "ok".
sed 's|</body>|<script>undefined_function();</script></body>|' "$PAGE" >"$TMP/broken.html"
out=$("$SRC/scripts/render_report.sh" --check-dom "$TMP/broken.html" 2>&1) && fail html-broken-page-detected ||
  { grep -q "script-error" <<<"$out" && ok html-broken-page-detected || fail "html-broken-page-detected: $out"; }

[ "$failures" = 0 ] && echo "all passed" || { echo "$failures failed"; exit 1; }
