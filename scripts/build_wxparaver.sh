#!/usr/bin/env bash
# Build BSC's Paraver GUI (wxparaver 4.x) against paraver-kernel, both from source, into PREFIX.
#
#   scripts/build_wxparaver.sh [PREFIX [WXPARAVER_SRC [PARAVER_KERNEL_SRC]]]
#
# PREFIX defaults to /opt/bsc. The sources are checkouts (or bare/ordinary git repositories) of
#   https://github.com/bsc-performance-tools/wxparaver       (WXPARAVER_SRC)
#   https://github.com/bsc-performance-tools/paraver-kernel  (PARAVER_KERNEL_SRC)
# given as arguments or in the environment, e.g.
#   git clone https://github.com/bsc-performance-tools/wxparaver
#   git clone https://github.com/bsc-performance-tools/paraver-kernel
#   WXPARAVER_SRC=$PWD/wxparaver PARAVER_KERNEL_SRC=$PWD/paraver-kernel scripts/build_wxparaver.sh
# WXPARAVER_REF / PARAVER_KERNEL_REF pick the commit or tag to build (default: the repository's
# HEAD). When PREFIX already holds a paraver-kernel (scripts/build_bsc_tools.sh puts one there,
# PREFIX/lib/paraver-kernel/libparaver-kernel.so) it is reused and PARAVER_KERNEL_SRC may be
# omitted; otherwise the kernel is built first. Each source is cloned into a scratch directory
# and built there, so the checkouts stay clean.
#
# Installs the Debian build dependencies with apt-get when run as root (Debian bookworm:
# libwxgtk3.2-dev, boost, libssl-dev) and the X tools the renderer needs (xvfb, xdotool,
# x11-utils, imagemagick); set BSC_SKIP_APT=1 to skip. Builds with `nice -n 10 make -j${BSC_JOBS:-2}`.
#
# Results: PREFIX/bin/wxparaver (the launcher: it finds the kernel under
# $PARAVER_HOME/lib/paraver-kernel, PARAVER_HOME being PREFIX) and PREFIX/bin/wxparaver.bin,
# a line "wxparaver VERSION commit ..." in PREFIX/VERSIONS and, once the binary links and its
# libraries all resolve, PREFIX/WXPARAVER_READY. As root, links PREFIX/bin/wxparaver into
# ${BSC_LINK_DIR:-/usr/local/bin} (BSC_LINK_DIR= to skip).
set -euo pipefail

PREFIX=${1:-${BSC_PREFIX:-/opt/bsc}}
WXPARAVER_SRC=${2:-${WXPARAVER_SRC:-}}
PARAVER_KERNEL_SRC=${3:-${PARAVER_KERNEL_SRC:-}}
JOBS=${BSC_JOBS:-2}

die() {
    echo "build_wxparaver.sh: ERROR: $*" >&2
    exit 1
}
[ -n "$WXPARAVER_SRC" ] || die "no wxparaver source: give WXPARAVER_SRC (a checkout of github.com/bsc-performance-tools/wxparaver)"
[ -d "$WXPARAVER_SRC" ] || die "$WXPARAVER_SRC: not a directory"

if [ "$(id -u)" -eq 0 ] && [ -z "${BSC_SKIP_APT:-}" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends \
        build-essential autoconf automake libtool pkg-config git \
        libboost-dev libboost-serialization-dev libboost-date-time-dev libboost-program-options-dev \
        libboost-filesystem-dev libboost-system-dev libxml2-dev zlib1g-dev libssl-dev bison flex \
        libwxgtk3.2-dev xvfb xdotool x11-utils imagemagick
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/wxparaver-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# copy_source SRC DEST [REF]: a clean tree of SRC (at REF) in DEST; prints "COMMIT (git describe)"
copy_source() {
    local src=$1 dest=$2 ref=${3:-}
    if git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || git --git-dir="$src" rev-parse >/dev/null 2>&1; then
        git clone -q "$src" "$dest"
        if [ -n "$ref" ]; then git -C "$dest" checkout -q "$ref"; fi
        echo "$(git -C "$dest" rev-parse HEAD) ($(git -C "$dest" describe --tags --always))"
    else
        cp -a "$src" "$dest"
        echo unknown
    fi
}

BOOST_LIBDIR=${BOOST_LIBDIR:-/usr/lib/$(gcc -print-multiarch 2>/dev/null || true)}
BOOST_ARGS=()
if ls "$BOOST_LIBDIR"/libboost_serialization.* >/dev/null 2>&1; then
    BOOST_ARGS=(--with-boost-libdir="$BOOST_LIBDIR")
fi

mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
rm -f "$PREFIX/WXPARAVER_READY"

# build SRC_DIR ARGS...: bootstrap, configure (ARGS), make, make install, logs in SRC_DIR
build() {
    local dir=$1
    shift
    (
        cd "$dir"
        ./bootstrap >bootstrap.log 2>&1 || { tail -30 bootstrap.log; exit 1; }
        ./configure --prefix="$PREFIX" "$@" >configure.log 2>&1 || { tail -30 configure.log; exit 1; }
        nice -n 10 make -j"$JOBS" >make.log 2>&1 || { tail -40 make.log; exit 1; }
        make install >install.log 2>&1 || { tail -30 install.log; exit 1; }
    )
}

if [ ! -e "$PREFIX/lib/paraver-kernel/libparaver-kernel.so" ]; then
    [ -n "$PARAVER_KERNEL_SRC" ] || die "no paraver-kernel in $PREFIX/lib/paraver-kernel and no source: give PARAVER_KERNEL_SRC (a checkout of github.com/bsc-performance-tools/paraver-kernel)"
    [ -d "$PARAVER_KERNEL_SRC" ] || die "$PARAVER_KERNEL_SRC: not a directory"
    echo "== paraver-kernel from $PARAVER_KERNEL_SRC"
    copy_source "$PARAVER_KERNEL_SRC" "$WORK/paraver-kernel" "${PARAVER_KERNEL_REF:-}" >/dev/null
    build "$WORK/paraver-kernel" --disable-static "${BOOST_ARGS[@]}"
else
    echo "== paraver-kernel already in $PREFIX/lib/paraver-kernel"
fi

echo "== wxparaver from $WXPARAVER_SRC"
WX_COMMIT=$(copy_source "$WXPARAVER_SRC" "$WORK/wxparaver" "${WXPARAVER_REF:-}")
WX_CONFIG=$(command -v wx-config) || die "wx-config not found (Debian: apt-get install libwxgtk3.2-dev)"
build "$WORK/wxparaver" --with-paraver="$PREFIX" --with-wxdir="$(dirname "$WX_CONFIG")" "${BOOST_ARGS[@]}"

[ -x "$PREFIX/bin/wxparaver.bin" ] || die "$PREFIX/bin/wxparaver.bin was not installed"
[ -x "$PREFIX/bin/wxparaver" ] || die "$PREFIX/bin/wxparaver (the launcher) was not installed"
missing=$(LD_LIBRARY_PATH="$PREFIX/lib/paraver-kernel:$PREFIX/lib/wxparaver:${LD_LIBRARY_PATH:-}" \
    ldd "$PREFIX/bin/wxparaver.bin" | grep 'not found' || true)
[ -z "$missing" ] || die "$PREFIX/bin/wxparaver.bin: unresolved libraries: $missing"

WX_VERSION=$(cd "$WORK/wxparaver" && ./configure --version | head -1 | awk '{print $NF}')
touch "$PREFIX/VERSIONS"
grep -v '^wxparaver ' "$PREFIX/VERSIONS" >"$WORK/VERSIONS" || true
echo "wxparaver $WX_VERSION commit $WX_COMMIT (github.com/bsc-performance-tools/wxparaver): wxparaver" >>"$WORK/VERSIONS"
cp "$WORK/VERSIONS" "$PREFIX/VERSIONS"
cat "$PREFIX/VERSIONS"

if [ "$(id -u)" -eq 0 ] && [ -n "${BSC_LINK_DIR-/usr/local/bin}" ]; then
    ln -sfn "$PREFIX/bin/wxparaver" "${BSC_LINK_DIR-/usr/local/bin}/wxparaver"
fi
touch "$PREFIX/WXPARAVER_READY"
echo "build_wxparaver.sh: wxparaver $WX_VERSION in $PREFIX/bin; $PREFIX/WXPARAVER_READY written"
