#!/bin/bash
# Renders an sdpacheck HTML report in headless Chromium.
#   render_report.sh HTML_FILE PNG_OUT          screenshot, 1280 x 2400
#   render_report.sh --check-dom HTML_FILE [DOM_OUT]
#                                               dumps the DOM after the page's
#                                               scripts ran; exits 1 unless the
#                                               page set renderStatus to "ok"
# CHROMIUM overrides the browser (default /usr/bin/chromium).
set -u
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

usage() {
  echo "usage: $0 HTML_FILE PNG_OUT | $0 --check-dom HTML_FILE [DOM_OUT]" >&2
  exit 2
}

mode=screenshot
if [ "${1:-}" = "--check-dom" ]; then mode=dom; shift; fi
[ $# -ge 1 ] || usage
html=$1
[ -f "$html" ] || { echo "$0: no such file: $html" >&2; exit 2; }
url="file://$(realpath "$html")"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT

# A fresh profile and nothing in the background: the page is self-contained,
# so no request should leave the machine.
chromium() {
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" "$@" 2>"$profile/stderr.log"
}

if [ "$mode" = screenshot ]; then
  [ $# -eq 2 ] || usage
  png=$(realpath -m "$2")
  rm -f "$png"
  chromium --screenshot="$png" --window-size=1280,2400 --hide-scrollbars "$url" >/dev/null
  rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$png" ]; then
    echo "$0: chromium exited $rc without a screenshot; its log:" >&2
    tail -20 "$profile/stderr.log" >&2
    exit 1
  fi
  echo "screenshot: $png"
  exit 0
fi

[ $# -le 2 ] || usage
dom="$profile/dom.html"
chromium --dump-dom "$url" >"$dom"
rc=$?
[ $# -eq 2 ] && cp "$dom" "$2"
if [ $rc -ne 0 ]; then
  echo "$0: chromium exited $rc; its log:" >&2
  tail -20 "$profile/stderr.log" >&2
  exit 1
fi
status=$(grep -o '<body[^>]*data-render-status="[^"]*"' "$dom" | sed 's/.*data-render-status="\([^"]*\)"/\1/')
if [ "$status" != ok ]; then
  echo "$0: renderStatus is '${status:-unset}', expected 'ok'" >&2
  exit 1
fi
echo "renderStatus: ok"
