# Sourced by test/system-packages.sh and bench/system-packages.sh: installs the Debian packages a command needs when
# some are missing, as root or through sudo.
#   install_debian_packages LABEL WHAT PACKAGE...   (LABEL starts each line; WHAT says who needs them)
install_debian_packages() {
  local label=$1 what=$2
  shift 2
  if [ $# -eq 0 ]; then
    echo "$label: every system package $what is installed"
    return 0
  fi
  echo "$label: installing $*"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "$label: not root and no sudo: install these Debian packages first: $*" >&2
      return 1
    fi
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" >/dev/null
}
