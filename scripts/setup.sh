#!/usr/bin/env bash
# Installs the Debian packages longhaul builds with, only those that are missing.
set -euo pipefail
packages=(build-essential cmake ninja-build libsqlite3-dev sqlite3 nlohmann-json3-dev libcli11-dev
          libfmt-dev libtomlplusplus-dev libgtest-dev libgmock-dev libcurl4-openssl-dev
          libcpp-httplib-dev git)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
