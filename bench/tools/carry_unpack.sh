#!/usr/bin/env bash
# On the device: unpack carry-bin/all.txz (bench/tools/carry_pack.sh) where
# it was built.  Python's lzma, not xz, which the GPU machine may lack.  The
# test dependencies in .deps/ are unpacked by run_gpu_tests.sh; to run the
# carried benchmarks or tests by hand, first unpack them too:
#   for f in .deps/*.deb; do dpkg -x "$f" /tmp/fs_deps; done
#   export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open('carry-bin/all.txz'), sys.stdout.buffer)" |
  tar xPf -
echo "unpacked carry-bin/all.txz"
