#!/usr/bin/env bash
# Install Nsight Systems (Debian's nsight-systems 2022.4.x, from contrib/non-free)
# and Open MPI, as used by scripts/profile_app.sh and scripts/make_real_fixtures.sh.
#
# Idempotent: does nothing when `nsys` and `mpicc` are already on PATH.
# Non-interactive; must run as root (or with passwordless sudo). Debian bookworm.
set -euo pipefail

if command -v nsys >/dev/null 2>&1 && command -v mpicc >/dev/null 2>&1; then
    echo "install_nsys.sh: nsys and mpicc already present, nothing to do"
    echo "  $(nsys --version 2>/dev/null || echo 'nsys --version failed')"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "install_nsys.sh: ERROR: must run as root (or with passwordless sudo)" >&2
        exit 1
    fi
fi

if [ -r /etc/os-release ]; then
    . /etc/os-release
    if [ "${VERSION_CODENAME:-}" != "bookworm" ]; then
        echo "install_nsys.sh: WARNING: written for Debian bookworm, this is ${PRETTY_NAME:-unknown}" >&2
    fi
fi

export DEBIAN_FRONTEND=noninteractive
SRC=/etc/apt/sources.list.d/nonfree.sources
WANT='Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: contrib non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
# Writing the same content again is harmless, so always (re)write it.
printf "$WANT" | $SUDO tee "$SRC" >/dev/null

$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    nsight-systems openmpi-bin libopenmpi-dev

for tool in nsys mpicc mpirun; do
    command -v "$tool" >/dev/null 2>&1 || { echo "install_nsys.sh: ERROR: $tool not found after install" >&2; exit 1; }
done
echo "install_nsys.sh: installed $(nsys --version)"
