#!/usr/bin/env bash
# Installs whatever uopc needs that is missing, from Debian's packages only. Idempotent: when every
# package is present it does nothing (no apt-get update, no network).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build clang python3 python3-jsonschema python3-venv
  llvm-19-dev llvm-19-tools
  nlohmann-json3-dev libcli11-dev catch2
  chromium  # the viz test loads uopc --viz pages in headless Chromium (skipped, visibly, without it)
)
# extra packages a make target needs (make fuzz: clang-19 and its libFuzzer runtime)
PACKAGES+=("$@")

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
