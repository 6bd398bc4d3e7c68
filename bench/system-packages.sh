#!/usr/bin/env bash
# The system packages only the bench's peers need, installed from Debian's packages when missing (`npm run
# bench:setup`; the suite needs none of them): MapServer's CGI program (its OGC API Features, the features figure's
# second peer) and lighttpd, which runs it as FastCGI processes on loopback. Without them the bench leaves that peer out
# and says so.
set -euo pipefail
need=()
[ -x /usr/lib/cgi-bin/mapserv ] || need+=(cgi-mapserver)
[ -x /usr/sbin/lighttpd ] || need+=(lighttpd)
# shellcheck source=test/debian-packages.sh
. "$(dirname "$0")/../test/debian-packages.sh"
install_debian_packages bench:setup "the bench's peers need" "${need[@]}"
# lighttpd's package starts its own server on port 80 on a machine with systemd; the bench starts its own. Only the
# one this run installed is stopped.
if [[ " ${need[*]} " == *" lighttpd "* ]] && command -v systemctl >/dev/null 2>&1 &&
  systemctl is-active --quiet lighttpd 2>/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then systemctl disable --now lighttpd >/dev/null 2>&1 || true
  else sudo systemctl disable --now lighttpd >/dev/null 2>&1 || true; fi
fi
