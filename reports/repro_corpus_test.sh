#!/bin/bash
# Every corpus file's `sdpacheck repro --pytorch` script runs with Debian's
# python3-torch and ends with a verdict line: the original call's
# (REPRODUCED / NOT REPRODUCED) for a finding outside a rewrite, and for a
# finding in the rewrite the model's (ExecuTorch is not installed here):
# REPRODUCED IN MODEL, or NOT REPRODUCED IN MODEL only for a finding that is
# not in the output values (a broken invariant). The scripts run in one
# Python process (runpy), so torch is imported once.
# Usage: repro_corpus_test.sh SDPACHECK SOURCE_DIR
# Exit 77 (skipped) when /usr/bin/python3 has no torch.
set -u
BIN=$1
SRC=$2
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
$PY -c 'import torch' 2>/dev/null || { echo "skip: $PY has no torch"; exit 77; }

failures=0
for f in $(find "$SRC/corpus" -name '*.json' | sort); do
  name=$(basename "$(dirname "$f")")__$(basename "$f" .json)
  if ! out=$("$BIN" repro "$f" --pytorch -o "$TMP/$name.py" 2>&1); then
    echo "FAIL $f: sdpacheck repro: $out"
    failures=$((failures + 1))
  fi
done

$PY - "$TMP"/*.py <<'PY' || failures=$((failures + 1))
import contextlib, io, os, runpy, sys

ORIGINAL = ("REPRODUCED: ", "NOT REPRODUCED: ")
MODEL = ("REPRODUCED IN MODEL: ", "NOT REPRODUCED IN MODEL: ")
bad, tally = 0, {}
for path in sys.argv[1:]:
    name = os.path.basename(path)[:-3]
    out = io.StringIO()
    sys.argv = [path]
    try:
        with contextlib.redirect_stdout(out):
            script = runpy.run_path(path, run_name="__main__")
    except BaseException as e:
        print(f"FAIL {name}: the script raised {type(e).__name__}: {e}")
        bad += 1
        continue
    lines = out.getvalue().splitlines()
    last = lines[-1] if lines else ""
    rewrite = script.get("REWRITE")
    prefix = next((p for p in MODEL + ORIGINAL if last.startswith(p)), None)
    if rewrite is None:
        ok = prefix in ORIGINAL
    elif rewrite["finding"].startswith("broken-invariant"):
        ok = prefix in MODEL
    else:  # a difference in the rewrite is never "not reproduced" in the model
        ok = prefix == MODEL[0]
    tally[prefix] = tally.get(prefix, 0) + 1
    print(("ok   " if ok else "FAIL ") + f"{name}: {last[:160]}")
    bad += not ok
print(", ".join(f"{n} {p.strip()}" for p, n in sorted(tally.items(), key=lambda x: str(x[0]))))
sys.exit(1 if bad else 0)
PY

[ "$failures" = 0 ] && echo "every corpus file's repro script ran" || echo "repro corpus checks failed"
[ "$failures" = 0 ]
