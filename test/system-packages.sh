#!/usr/bin/env bash
# The system packages the test suite drives, installed from Debian's packages when missing (`npm run setup`, part
# of the README's test command): curl and jq (the README's commands, whose walk a test runs), three SOAP clients (PHP's SoapClient, zeep, suds)
# and xmllint, Chromium with a font (the browser tests), PostgreSQL 15 with PostGIS 3 (database data stores,
# started by the tests on loopback) and GDAL (a client of feature layers). Nothing is installed when all are there.
set -euo pipefail
need=()
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v jq >/dev/null 2>&1 || need+=(jq)
command -v xmllint >/dev/null 2>&1 || need+=(libxml2-utils)
command -v php >/dev/null 2>&1 || need+=(php-cli)
php -m 2>/dev/null | grep -qx soap || need+=(php-soap)
/usr/bin/python3 -c "import zeep" 2>/dev/null || need+=(python3-zeep)
/usr/bin/python3 -c "import suds" 2>/dev/null || need+=(python3-suds)
[ -x /usr/bin/chromium ] || need+=(chromium fonts-dejavu-core)
[ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql)
# The library itself: its control file belongs to postgresql-15-postgis-3-scripts, which stays when PostGIS goes.
[ -f /usr/lib/postgresql/15/lib/postgis-3.so ] || need+=(postgresql-15-postgis-3)
command -v ogr2ogr >/dev/null 2>&1 || need+=(gdal-bin)
# shellcheck source=test/debian-packages.sh
. "$(dirname "$0")/debian-packages.sh"
install_debian_packages setup "the tests need" "${need[@]}"
