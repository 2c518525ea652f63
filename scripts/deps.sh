#!/usr/bin/env bash
# Installs what tensoropt needs on Debian 12 (run as root; uses sudo otherwise).
# `--tests` adds what only the tests need: Debian's chromium, which renders the HTML
# report headless (about a minute to install, once).
set -euo pipefail
pkgs=(g++ cmake ninja-build libboost-dev doctest-dev nlohmann-json3-dev
      libopenblas-dev libopenmpi-dev openmpi-bin libtcmalloc-minimal4)
for a in "$@"; do
  case "$a" in
    --tests) pkgs+=(chromium) ;;
    *) echo "deps.sh: unknown option '$a' (valid: --tests)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "tensoropt: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
