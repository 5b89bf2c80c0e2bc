#!/usr/bin/env bash
# Install the Nsight Systems versions the tests and fixture scripts use, and Open MPI:
#   - Debian bookworm's nsight-systems 2022.4.x (contrib/non-free) as `nsys` on PATH (MPI as NVTX ranges),
#     used by scripts/profile_app.sh and scripts/make_real_fixtures.sh;
#   - Nsight Systems 2023.4.4 (Debian trixie's nsight-systems 2023.4.4.54~12.4.1-2, non-free), unpacked
#     with `dpkg-deb -x` into NSYS23_DIR (default /opt/nsys-2023.4), not installed as a package: it writes
#     MPI into its own MPI_* tables; used by scripts/make_mpi23_fixtures.sh and the tests that profile.
#     Run it as NSYS23_DIR/usr/bin/nsys with LD_LIBRARY_PATH=NSYS23_DIR/extralib (its libssh.so link);
#     its QdstrmImporter is NSYS23_DIR/usr/lib/nsight-systems/host-linux-x64/QdstrmImporter (nsys does not
#     find it itself: the wrapper nsys2prv/data/nsys-rank.sh imports the .qdstrm with it);
#   - Open MPI (openmpi-bin, libopenmpi-dev) and libssh-4.
#
# Idempotent: each part is skipped when already there. Non-interactive; must run as root (or with
# passwordless sudo). Debian bookworm.
set -euo pipefail

NSYS23_DIR=${NSYS23_DIR:-/opt/nsys-2023.4}
NSYS23_DEB_VERSION=2023.4.4.54~12.4.1-2

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

# 1. Debian's nsight-systems 2022.4, Open MPI, libssh
if command -v nsys >/dev/null 2>&1 && command -v mpicc >/dev/null 2>&1 && [ -e /usr/lib/x86_64-linux-gnu/libssh.so.4 ]; then
    echo "install_nsys.sh: nsys, mpicc and libssh already present"
else
    SRC=/etc/apt/sources.list.d/nonfree.sources
    WANT='Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: contrib non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
    # Writing the same content again is harmless, so always (re)write it.
    printf "$WANT" | $SUDO tee "$SRC" >/dev/null
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
        nsight-systems openmpi-bin libopenmpi-dev libssh-4
fi

# 2. Nsight Systems 2023.4.4, unpacked beside it (apt with private lists: the system's sources stay as they are)
if [ -x "$NSYS23_DIR/usr/bin/nsys" ] && [ -e "$NSYS23_DIR/extralib/libssh.so" ]; then
    echo "install_nsys.sh: nsys 2023.4 already in $NSYS23_DIR"
else
    A=$(mktemp -d)
    trap 'rm -rf "$A"' EXIT
    mkdir -p "$A/lists/partial" "$A/cache/archives/partial"
    printf 'deb http://deb.debian.org/debian trixie non-free contrib main\n' > "$A/sources.list"
    o=(-o "Dir::Etc::SourceList=$A/sources.list" -o Dir::Etc::SourceParts=/dev/null
       -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache")
    apt-get "${o[@]}" update -qq
    (cd "$A" && apt-get "${o[@]}" download "nsight-systems-target=$NSYS23_DEB_VERSION" "nsight-systems=$NSYS23_DEB_VERSION")
    $SUDO mkdir -p "$NSYS23_DIR"
    for d in "$A"/nsight-systems*_2023.4.4.54*.deb; do $SUDO dpkg-deb -x "$d" "$NSYS23_DIR"; done
    $SUDO mkdir -p "$NSYS23_DIR/extralib"
    $SUDO ln -sf /usr/lib/x86_64-linux-gnu/libssh.so.4 "$NSYS23_DIR/extralib/libssh.so"
fi

for tool in nsys mpicc mpirun "$NSYS23_DIR/usr/bin/nsys"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "install_nsys.sh: ERROR: $tool not found after install" >&2; exit 1; }
done
echo "install_nsys.sh: $(nsys --version)"
echo "install_nsys.sh: $(LD_LIBRARY_PATH=$NSYS23_DIR/extralib "$NSYS23_DIR/usr/bin/nsys" --version) in $NSYS23_DIR"
