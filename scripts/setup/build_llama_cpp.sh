#!/usr/bin/env bash
# Build llama-cpp-python once, portably, and install it into the venv.
#
# llama.cpp compiles for the build machine's CPU by default (GGML_NATIVE=ON): a wheel built on
# an AMD machine may run AMX or AVX-512 instructions another machine lacks ("Illegal
# instruction"). This script fixes a baseline every x86-64 machine we support has
# (x86-64-v3: AVX, AVX2, FMA, F16C; no AVX-512, no AMX), builds the wheel without pip's cache
# (a cached wheel may have been built natively elsewhere), and keeps it under
# .wheels/llama-cpp-<version>-<flags hash>/ so re-running `make setup` reuses it. On x86-64 it
# builds a second set of libraries with AVX-512 and AVX-512 VNNI added (~25% faster prompt
# evaluation), kept beside the venv's Python and loaded only where the CPU has every flag they
# use (aecg_bench/llm/cpu_build.py decides at run time, from /proc/cpuinfo).
#
# Usage: build_llama_cpp.sh <venv bin dir> <constraints file>
set -euo pipefail
BIN=${1:?venv bin dir}
CONSTRAINTS=${2:?constraints file}
VERSION=$(sed -n 's/^llama[-_]cpp[-_]python==\(.*\)$/\1/p' "$CONSTRAINTS")
[[ -n $VERSION ]] || { echo "build_llama_cpp: no llama_cpp_python pin in $CONSTRAINTS" >&2; exit 1; }
ARCH=$(uname -m)
source "$(dirname "$0")/llama_flags.sh"
TAG=$(printf '%s %s %s' "$VERSION" "$ARCH" "$FLAGS" | sha256sum | cut -c1-12)
TAG512=""
[[ -z $FLAGS_AVX512 ]] || TAG512=$(printf '%s %s %s' "$VERSION" "$ARCH" "$FLAGS_AVX512" | sha256sum | cut -c1-12)
LIBS512="$(dirname "$BIN")/lib/llama-cpp-avx512"  # read by aecg_bench/llm/cpu_build.py
STAMP_WANT="$VERSION $TAG $TAG512"
STAMP="$(dirname "$BIN")/.llama-cpp-portable"
if [[ -f $STAMP && $(cat "$STAMP") == "$STAMP_WANT" ]] && [[ -z $TAG512 || -f $LIBS512/libllama.so ]]; then
  echo "llama-cpp-python $VERSION (portable build $TAG${TAG512:+, AVX-512 VNNI variant $TAG512}) already installed"
  exit 0
fi

# build_wheel <cmake flags> <dir> <what>: the wheel into <dir> unless a previous run left it there
build_wheel() {
  if ! ls "$2"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "building llama-cpp-python $VERSION: $3 (no native flags; a few minutes)"
    rm -rf "$2.tmp" && mkdir -p "$2.tmp"
    CMAKE_ARGS="$1" FORCE_CMAKE=1 "$BIN/pip" wheel --quiet --no-cache-dir --no-deps \
      --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -w "$2.tmp"
    rm -rf "$2" && mv "$2.tmp" "$2"
  fi
}

DIR=".wheels/llama-cpp-$VERSION-$TAG"
build_wheel "$FLAGS" "$DIR" "the x86-64-v3 baseline"
"$BIN/pip" install --quiet --no-cache-dir --force-reinstall --no-deps "$DIR"/llama_cpp_python-*.whl
if [[ -n $TAG512 ]]; then
  # Only its libraries are used (the Python bindings are the baseline's, the same version): loaded through
  # $LLAMA_CPP_LIB_PATH on CPUs with every flag they need, never elsewhere.
  DIR512=".wheels/llama-cpp-$VERSION-$TAG512"
  build_wheel "$FLAGS_AVX512" "$DIR512" "its AVX-512 VNNI variant, for CPUs that have it"
  rm -rf "$LIBS512.tmp" && mkdir -p "$LIBS512.tmp"
  "$BIN/python" - "$DIR512" "$LIBS512.tmp" <<'PY'
import glob, pathlib, sys, zipfile

wheel, out = glob.glob(sys.argv[1] + "/llama_cpp_python-*.whl")[0], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("llama_cpp/lib/") and not name.endswith("/"):
            (out / pathlib.PurePosixPath(name).name).write_bytes(z.read(name))
PY
  [[ -f $LIBS512.tmp/libllama.so ]] || { echo "build_llama_cpp: no libllama.so in $DIR512" >&2; exit 1; }
  rm -rf "$LIBS512" && mv "$LIBS512.tmp" "$LIBS512"
fi
echo "$STAMP_WANT" >"$STAMP"
echo "llama-cpp-python $VERSION installed from the portable build $DIR${TAG512:+ (AVX-512 VNNI libraries: $LIBS512)}"
