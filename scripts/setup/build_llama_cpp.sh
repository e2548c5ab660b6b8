#!/usr/bin/env bash
# Build llama-cpp-python once, portably, and install it into the venv.
#
# llama.cpp compiles for the build machine's CPU by default (GGML_NATIVE=ON): a wheel built on
# an AMD machine may run AMX or AVX-512 instructions another machine lacks ("Illegal
# instruction"). This script fixes a baseline every x86-64 machine we support has
# (x86-64-v3: AVX, AVX2, FMA, F16C; no AVX-512, no AMX), builds the wheel without pip's cache
# (a cached wheel may have been built natively elsewhere), and keeps it under
# .wheels/llama-cpp-<version>-<flags hash>/ so re-running `make setup` reuses it.
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
STAMP_WANT="$VERSION $TAG"
STAMP="$(dirname "$BIN")/.llama-cpp-portable"
if [[ -f $STAMP && $(cat "$STAMP") == "$STAMP_WANT" ]]; then
  echo "llama-cpp-python $VERSION (portable build $TAG) already installed"
  exit 0
fi
DIR=".wheels/llama-cpp-$VERSION-$TAG"
if ! ls "$DIR"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $VERSION for the x86-64-v3 baseline (no native flags; a few minutes)"
  rm -rf "$DIR.tmp" && mkdir -p "$DIR.tmp"
  CMAKE_ARGS="$FLAGS" FORCE_CMAKE=1 "$BIN/pip" wheel --quiet --no-cache-dir --no-deps \
    --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -w "$DIR.tmp"
  rm -rf "$DIR" && mv "$DIR.tmp" "$DIR"
fi
"$BIN/pip" install --quiet --no-cache-dir --force-reinstall --no-deps "$DIR"/llama_cpp_python-*.whl
echo "$STAMP_WANT" >"$STAMP"
echo "llama-cpp-python $VERSION installed from the portable build $DIR"
