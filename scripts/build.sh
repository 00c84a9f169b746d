#!/usr/bin/env bash
# scripts/build.sh: configures and builds roofline (Release) into build/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DROOFLINE_WERROR=ON >/dev/null
cmake --build "$root/build" -j "$(nproc)"
