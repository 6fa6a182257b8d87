#!/usr/bin/env bash
# Debian packages the test suite and the demo need, installed before `npm test` and
# `npm run demo` run (npm's `pretest` / `predemo`: one list, one script).
# As root it installs what is missing with apt-get; otherwise it stops at once with one line
# naming the package to install. Each line of scripts/system-packages.txt is
# "<command> <debian-package>  # why"; a package is missing when its command is not on PATH.
# With arguments, only the lines of those commands count (`predemo` needs bwrap, not chromium).
set -euo pipefail
only=" $* "
cd "$(dirname "${BASH_SOURCE[0]}")"

missing=()
while read -r command package _; do
  [[ -z "${command}" || "${command}" == \#* ]] && continue
  [[ $# -gt 0 && "${only}" != *" ${command} "* ]] && continue
  command -v "${command}" >/dev/null 2>&1 || missing+=("${package}")
done < system-packages.txt

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "keel: installing Debian packages Keel needs: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi

echo "keel: the Debian package(s) ${missing[*]} are missing: run 'sudo apt-get install ${missing[*]}' and try again." >&2
exit 1
