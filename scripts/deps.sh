#!/usr/bin/env bash
# Installs what tensoropt needs on Debian 12 (run as root; uses sudo otherwise).
set -euo pipefail
pkgs=(g++ cmake ninja-build libboost-dev doctest-dev nlohmann-json3-dev
      libopenblas-dev libopenmpi-dev openmpi-bin)
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
