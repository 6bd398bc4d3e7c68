#!/usr/bin/env bash
# The system packages only the bench's peers need, installed from Debian's packages when missing (`npm run
# bench:setup`; the suite needs none of them): MapServer's CGI program (its OGC API Features, the features figure's
# second peer) and lighttpd, which runs it as FastCGI processes on loopback. Without them the bench leaves that peer out
# and says so.
set -euo pipefail
need=()
[ -x /usr/lib/cgi-bin/mapserv ] || need+=(cgi-mapserver)
command -v lighttpd >/dev/null 2>&1 || [ -x /usr/sbin/lighttpd ] || need+=(lighttpd)
if [ ${#need[@]} -eq 0 ]; then
  echo "bench:setup: every system package the bench's peers need is installed"
  exit 0
fi
echo "bench:setup: installing ${need[*]}"
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "bench:setup: not root and no sudo: install these Debian packages first: ${need[*]}" >&2
  exit 1
fi
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# lighttpd's package starts its own server on port 80 on a machine with systemd; the bench starts its own.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet lighttpd 2>/dev/null; then
  "${sudo[@]}" systemctl disable --now lighttpd >/dev/null 2>&1 || true
fi
