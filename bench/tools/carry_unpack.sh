#!/usr/bin/env bash
# On the device: unpack carry-bin/all.txz (bench/tools/carry_pack.sh) where
# it was built, carry-bin/extra.txz (extra binaries, if carried) into
# /tmp/fsb, and the test dependencies' .deb files in .deps/ into
# /tmp/fs_deps.  Python's lzma, not xz, which the GPU machine may lack.
# Then, to run the carried benchmarks or tests by hand:
#   export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open('carry-bin/all.txz'), sys.stdout.buffer)" |
  tar xPf -
echo "unpacked carry-bin/all.txz"
if [ -f carry-bin/extra.txz ]; then
    mkdir -p /tmp/fsb
    python3 -c "import lzma, tarfile; tarfile.open(fileobj=lzma.open('carry-bin/extra.txz')).extractall('/tmp/fsb')"
    echo "unpacked carry-bin/extra.txz into /tmp/fsb"
fi
if compgen -G ".deps/*.deb" >/dev/null; then
    mkdir -p /tmp/fs_deps
    for f in .deps/*.deb; do dpkg -x "$f" /tmp/fs_deps; done
    echo "unpacked .deps into /tmp/fs_deps"
fi
