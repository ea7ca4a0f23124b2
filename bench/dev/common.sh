# Sourced by the session-3 device scripts in this folder: repository root,
# CUDA on PATH, output folder ($OUT on the device machine).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
