#!/usr/bin/env bash
# Build BSC's Paraver kernel (paramedir) and Dimemas (prv2dim, Dimemas, cfgs/ideal.cfg) into PREFIX.
#
#   scripts/build_bsc_tools.sh [PREFIX [PARAVER_KERNEL_SRC [DIMEMAS_SRC]]]
#
# PREFIX defaults to /opt/bsc. The sources are checkouts (or bare/ordinary git repositories) of
#   https://github.com/bsc-performance-tools/paraver-kernel   (PARAVER_KERNEL_SRC)
#   https://github.com/bsc-performance-tools/dimemas          (DIMEMAS_SRC)
# given as arguments or in the environment, e.g.
#   git clone https://github.com/bsc-performance-tools/paraver-kernel
#   git clone https://github.com/bsc-performance-tools/dimemas
#   PARAVER_KERNEL_SRC=$PWD/paraver-kernel DIMEMAS_SRC=$PWD/dimemas scripts/build_bsc_tools.sh
# Each source is copied (git clone when it is a repository) into a scratch directory and built
# there, so the checkouts stay clean.
#
# Installs the Debian build dependencies with apt-get when run as root (Debian bookworm; set
# BSC_SKIP_APT=1 to skip). Builds with `nice -n 10 make -j${BSC_JOBS:-2}`.
#
# Results:
#   PREFIX/bin/{paramedir,prv2dim,Dimemas}, PREFIX/share/cfgs/ideal.cfg (Dimemas's
#   make install puts its cfgs there), PREFIX/VERSIONS (each tool's version and source commit)
#   and, once paramedir, prv2dim and Dimemas all run, PREFIX/READY.
# The tests find the tools with shutil.which on PATH: put PREFIX/bin on PATH. As root, the script
# also links the three tools into ${BSC_LINK_DIR:-/usr/local/bin} (BSC_LINK_DIR= to skip), so
# every shell finds them.
set -euo pipefail

PREFIX=${1:-${BSC_PREFIX:-/opt/bsc}}
PARAVER_KERNEL_SRC=${2:-${PARAVER_KERNEL_SRC:-}}
DIMEMAS_SRC=${3:-${DIMEMAS_SRC:-}}
JOBS=${BSC_JOBS:-2}

die() {
    echo "build_bsc_tools.sh: ERROR: $*" >&2
    exit 1
}
[ -n "$PARAVER_KERNEL_SRC" ] || die "no paraver-kernel source: give PARAVER_KERNEL_SRC (a checkout of github.com/bsc-performance-tools/paraver-kernel)"
[ -n "$DIMEMAS_SRC" ] || die "no dimemas source: give DIMEMAS_SRC (a checkout of github.com/bsc-performance-tools/dimemas)"
[ -d "$PARAVER_KERNEL_SRC" ] || die "$PARAVER_KERNEL_SRC: not a directory"
[ -d "$DIMEMAS_SRC" ] || die "$DIMEMAS_SRC: not a directory"

if [ "$(id -u)" -eq 0 ] && [ -z "${BSC_SKIP_APT:-}" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends \
        build-essential autoconf automake libtool pkg-config git \
        libboost-dev libboost-serialization-dev libboost-date-time-dev libboost-program-options-dev \
        libxml2-dev zlib1g-dev libssl-dev bison flex
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bsc-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# copy_source SRC DEST: a clean tree of SRC at DEST; prints "COMMIT (git describe)" or "unknown"
copy_source() {
    local src=$1 dest=$2
    if git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || git --git-dir="$src" rev-parse >/dev/null 2>&1; then
        git clone -q "$src" "$dest"
        echo "$(git -C "$dest" rev-parse HEAD) ($(git -C "$dest" describe --tags --always))"
    else
        cp -a "$src" "$dest"
        echo unknown
    fi
}

# AX_BOOST_* look for the libraries beside the headers; Debian puts them in the multiarch directory.
BOOST_LIBDIR=${BOOST_LIBDIR:-/usr/lib/$(gcc -print-multiarch 2>/dev/null || true)}
BOOST_ARGS=()
if ls "$BOOST_LIBDIR"/libboost_serialization.* >/dev/null 2>&1; then
    BOOST_ARGS=(--with-boost-libdir="$BOOST_LIBDIR")
fi

mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
rm -f "$PREFIX/READY"

echo "== paraver-kernel from $PARAVER_KERNEL_SRC"
PK_COMMIT=$(copy_source "$PARAVER_KERNEL_SRC" "$WORK/paraver-kernel")
(
    cd "$WORK/paraver-kernel"
    ./bootstrap >bootstrap.log 2>&1 || { tail -30 bootstrap.log; exit 1; }
    ./configure --prefix="$PREFIX" --disable-static "${BOOST_ARGS[@]}" >configure.log 2>&1 || { tail -30 configure.log; exit 1; }
    nice -n 10 make -j"$JOBS" >make.log 2>&1 || { tail -40 make.log; exit 1; }
    make install >install.log 2>&1 || { tail -30 install.log; exit 1; }
)

echo "== dimemas from $DIMEMAS_SRC"
DIM_COMMIT=$(copy_source "$DIMEMAS_SRC" "$WORK/dimemas")
(
    cd "$WORK/dimemas"
    ./bootstrap >bootstrap.log 2>&1 || { tail -30 bootstrap.log; exit 1; }
    ./configure --prefix="$PREFIX" "${BOOST_ARGS[@]}" >configure.log 2>&1 || { tail -30 configure.log; exit 1; }
    nice -n 10 make -j"$JOBS" >make.log 2>&1 || { tail -40 make.log; exit 1; }
    make install >install.log 2>&1 || { tail -30 install.log; exit 1; }
)

IDEAL=$(find "$PREFIX/share" -name ideal.cfg -path '*cfgs*' 2>/dev/null | head -1)
if [ -z "$IDEAL" ]; then
    mkdir -p "$PREFIX/share/dimemas/cfgs"
    cp "$WORK/dimemas/cfgs/ideal.cfg" "$PREFIX/share/dimemas/cfgs/ideal.cfg"
    IDEAL=$PREFIX/share/dimemas/cfgs/ideal.cfg
fi

version_of() { # version_of DIR: the version DIR/configure reports (AC_INIT's)
    (cd "$1" && ./configure --version | head -1 | awk '{print $NF}')
}
{
    echo "paraver-kernel $(version_of "$WORK/paraver-kernel") commit $PK_COMMIT (github.com/bsc-performance-tools/paraver-kernel): paramedir"
    echo "dimemas $(version_of "$WORK/dimemas") commit $DIM_COMMIT (github.com/bsc-performance-tools/dimemas): prv2dim, Dimemas, $IDEAL"
} >"$PREFIX/VERSIONS"
cat "$PREFIX/VERSIONS"

# Smoke run: each tool starts and prints its usage (none of them exits 0 without arguments).
for tool in paramedir prv2dim Dimemas; do
    [ -x "$PREFIX/bin/$tool" ] || die "$PREFIX/bin/$tool was not installed"
    out=$("$PREFIX/bin/$tool" 2>&1 </dev/null || true)
    [ -n "$out" ] || die "$PREFIX/bin/$tool printed nothing"
    case "$out" in
    *"error while loading shared libraries"* | *"not found"*) die "$PREFIX/bin/$tool does not run: $out" ;;
    esac
done

if [ "$(id -u)" -eq 0 ] && [ -n "${BSC_LINK_DIR-/usr/local/bin}" ]; then
    for tool in paramedir prv2dim Dimemas; do
        ln -sfn "$PREFIX/bin/$tool" "${BSC_LINK_DIR-/usr/local/bin}/$tool"
    done
fi
touch "$PREFIX/READY"
echo "build_bsc_tools.sh: paramedir, prv2dim and Dimemas in $PREFIX/bin (ideal.cfg: $IDEAL); $PREFIX/READY written"
