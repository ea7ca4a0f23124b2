#!/usr/bin/env bash
# The CPU test suite (ctest label cpu) under AddressSanitizer and
# UndefinedBehaviorSanitizer: every C source of the library, the test
# support code and the tests are built with -fsanitize=address,undefined
# -fno-sanitize-recover=all (CMake option FLASHSPEC_SANITIZE), CPU only, in
# their own build directory.  Any report fails the test that triggers it and
# so this script.  Works from a clean clone on Debian as root: installs what
# the build needs when missing.
#
# Environment:
#   SANITIZE_BUILD_DIR  (default build-asan)
#   SANITIZERS          (default address,undefined)
#   SANITIZE_CC         compiler (default clang; gcc works too)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${SANITIZE_BUILD_DIR:-build-asan}"
SANITIZERS="${SANITIZERS:-address,undefined}"
CCOMP="${SANITIZE_CC:-clang}"

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
need=()
for pkg in cmake make pkg-config libcmocka-dev libgsl-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
command -v "$CCOMP" >/dev/null || need+=("$CCOMP")
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need[@]}"
fi

echo "sanitize.sh: $CCOMP -fsanitize=$SANITIZERS, CPU tests in $BUILD"
CC="$CCOMP" cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHSPEC_CUDA=OFF \
  -DFLASHSPEC_BENCH=OFF "-DFLASHSPEC_SANITIZE=$SANITIZERS" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
cd "$BUILD"
ctest -L cpu --output-on-failure -j"$(nproc)"
echo "sanitize.sh: the CPU suite is clean under $SANITIZERS"
