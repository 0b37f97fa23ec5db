"""Runs sdpacheck repro scripts in one Python process and checks each one's last line.

Usage: python3 check_repro_scripts.py SCRIPT.py...   (exit 0 when every script passes)

A script of a finding outside a rewrite (REWRITE is None) must end with the original
call's verdict (REPRODUCED / NOT REPRODUCED). One of a finding in the target's pipeline,
with no upstream code installed, must end with REPRODUCED IN MODEL; NOT REPRODUCED IN
MODEL only for a broken invariant, a finding not in the output values. The scripts run
with runpy, so torch is imported once.
"""
import contextlib
import io
import os
import runpy
import sys

ORIGINAL = ("REPRODUCED: ", "NOT REPRODUCED: ")
MODEL = ("REPRODUCED IN MODEL: ", "NOT REPRODUCED IN MODEL: ")


def check(path):
    out = io.StringIO()
    sys.argv = [path]
    try:
        with contextlib.redirect_stdout(out):
            script = runpy.run_path(path, run_name="__main__")
    except BaseException as e:
        return False, f"the script raised {type(e).__name__}: {e}", None
    lines = out.getvalue().splitlines()
    last = lines[-1] if lines else ""
    prefix = next((p for p in MODEL + ORIGINAL if last.startswith(p)), None)
    rewrite = script.get("REWRITE")
    if rewrite is None:
        ok = prefix in ORIGINAL
    elif rewrite["finding"].startswith("broken-invariant"):
        ok = prefix in MODEL
    else:  # a difference in the target's pipeline is never "not reproduced" in the model
        ok = prefix == MODEL[0]
    return ok, last, prefix


def main():
    bad, tally = 0, {}
    for path in sys.argv[1:]:
        ok, last, prefix = check(path)
        tally[str(prefix)] = tally.get(str(prefix), 0) + 1
        print(("ok   " if ok else "FAIL ") + f"{os.path.basename(path)}: {last[:160]}")
        bad += not ok
    print("; ".join(f"{n} {p.strip()}" for p, n in sorted(tally.items())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
