#!/usr/bin/env bash
# scripts/device_bundle.sh: packs longhaul for a machine that lacks its libraries (the lent H200,
# which has nvcc and the GPU but not SQLite, fmt, toml++ or libcurl) into .device/ (ignored by git):
#   .device/longhaul   relinked with libstdc++ static and an rpath of $ORIGIN/lib
#   .device/lib/       the shared libraries it needs, less glibc's and libgcc's
# Why an rpath and not LD_LIBRARY_PATH: the candidates' own build, check and bench inherit the
# environment, and must link and run against that machine's libraries, not ours.
# Usage: scripts/device_bundle.sh  (after scripts/build.sh); then carry .device and run
#   .device/longhaul run tasks/kda --out $OUT/kda-run --max-evals 8
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/longhaul ] || { echo "device_bundle: build/longhaul missing: run scripts/build.sh first" >&2; exit 2; }
rm -rf .device/lib && mkdir -p .device/lib
# The link line ninja used for build/longhaul, with the output moved and two flags added.
link=$(cd build && ninja -t commands longhaul | tail -n 1 | sed -e 's/^: && //' -e 's/ && :$//')
(cd build && eval "${link/ -o longhaul / -o ../.device/longhaul }" \
  "-static-libstdc++ -static-libgcc -Wl,-rpath,'\$ORIGIN/lib' -Wl,--disable-new-dtags")
strip .device/longhaul
for lib in $(ldd .device/longhaul | awk '/=>/ {print $3}'); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libresolv.so*|libpthread.so*|libdl.so*|ld-linux*|libstdc++*|libgcc_s*) ;;
    *) cp -L "$lib" .device/lib/ ;;
  esac
done
echo "device_bundle: .device/longhaul and $(ls .device/lib | wc -l) libraries, $(du -sh .device | cut -f1)"
