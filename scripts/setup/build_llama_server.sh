#!/usr/bin/env bash
# Build llama.cpp's `llama-server` once, portably, and install it as <venv>/bin/llama-server.
#
# It serves the embedded model to a whole sweep (aecg_bench/llm/embedded_server.py, model=embedded_server):
# one model instance, parallel slots, continuous batching, per-slot prompt caches. The source is the
# llama.cpp vendored in the pinned llama-cpp-python sdist (PyPI), so server and in-process model are the
# same llama.cpp version; the CPU flags are build_llama_cpp.sh's (x86-64-v3 baseline, never native, no
# AVX-512/AMX; checked with objdump when present). No web UI (it would be fetched from Hugging Face), no
# OpenSSL, a static binary. Kept under .wheels/llama-server-<version>-<flags hash>/ so re-running
# `make setup` reuses it; the venv's stamp skips even the copy.
#
# Usage: build_llama_server.sh <venv bin dir> <constraints file>
set -euo pipefail
BIN=${1:?venv bin dir}
CONSTRAINTS=${2:?constraints file}
VERSION=$(sed -n 's/^llama[-_]cpp[-_]python==\(.*\)$/\1/p' "$CONSTRAINTS")
[[ -n $VERSION ]] || { echo "build_llama_server: no llama_cpp_python pin in $CONSTRAINTS" >&2; exit 1; }
ARCH=$(uname -m)
source "$(dirname "$0")/llama_flags.sh"
SERVER_FLAGS="-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF"
TAG=$(printf '%s %s %s %s' "$VERSION" "$ARCH" "$FLAGS" "$SERVER_FLAGS" | sha256sum | cut -c1-12)
STAMP_WANT="$VERSION $TAG"
STAMP="$(dirname "$BIN")/.llama-server-portable"
if [[ -f $STAMP && $(cat "$STAMP") == "$STAMP_WANT" && -x $BIN/llama-server ]]; then
  echo "llama-server $VERSION (portable build $TAG) already installed"
  exit 0
fi
DIR=".wheels/llama-server-$VERSION-$TAG"
if [[ ! -x $DIR/llama-server ]]; then
  echo "building llama-server from llama-cpp-python $VERSION's llama.cpp for the x86-64-v3 baseline (several minutes)"
  TMP="$DIR.tmp"
  rm -rf "$TMP" && mkdir -p "$TMP"
  "$BIN/pip" download --quiet --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$TMP"
  tar xzf "$TMP"/llama_cpp_python-"$VERSION".tar.gz -C "$TMP"
  SRC="$TMP/llama_cpp_python-$VERSION/vendor/llama.cpp"
  if ! command -v cmake >/dev/null; then  # the wheel build gets cmake from PyPI too
    "$BIN/pip" install --quiet --target "$TMP/tools" cmake ninja
    export PATH="$TMP/tools/bin:$PATH" PYTHONPATH="$TMP/tools${PYTHONPATH:+:$PYTHONPATH}"
  fi
  GENERATOR=()
  command -v ninja >/dev/null && GENERATOR=(-G Ninja)
  # shellcheck disable=SC2086
  cmake -S "$SRC" -B "$TMP/build" "${GENERATOR[@]}" $SERVER_FLAGS $FLAGS >"$TMP/cmake.log"
  cmake --build "$TMP/build" --target llama-server -j "$(nproc)" >>"$TMP/cmake.log"
  cp "$TMP/build/bin/llama-server" "$TMP/llama-server"
  if [[ $ARCH == x86_64 ]] && command -v objdump >/dev/null; then
    # grep reads all of objdump's output (no -q: an early exit would fail the pipe under pipefail)
    if objdump -d --no-show-raw-insn "$TMP/llama-server" | grep -E '%zmm|tileload|tdpb' >/dev/null; then
      echo "build_llama_server: the binary holds AVX-512/AMX instructions; refusing it" >&2
      exit 1
    fi
  fi
  mkdir -p "$DIR.new" && mv "$TMP/llama-server" "$DIR.new/" && rm -rf "$TMP" "$DIR" && mv "$DIR.new" "$DIR"
fi
install -m 755 "$DIR/llama-server" "$BIN/llama-server"
echo "$STAMP_WANT" >"$STAMP"
echo "llama-server $VERSION installed from the portable build $DIR"
