#!/bin/sh
# Installs the Debian packages sdpacheck builds against, only those missing.
# Runs apt-get directly as root, through sudo otherwise.
set -eu
PACKAGES="cmake ninja-build g++ make libtorch-dev librapidcheck-dev libgtest-dev libgmock-dev \
libeigen3-dev nlohmann-json3-dev libcli11-dev \
chromium libxml2-utils python3-torch python3-yaml python3-hypothesis libxnnpack-dev libpthreadpool-dev libgoogle-perftools-dev valgrind linux-perf"
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
echo "installing:$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
