# The llama.cpp CMake flags of every llama.cpp build in `make setup` (sourced; needs ARCH): a fixed
# x86-64-v3 baseline (AVX, AVX2, FMA, F16C; no AVX-512, no AMX), never the build machine's native flags.
if [[ $ARCH == x86_64 ]]; then
  FLAGS="-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_OPENMP=ON"
  # The second build of `make setup` (scripts/setup/build_llama_cpp.sh): the baseline plus AVX-512 (F, CD, VL,
  # DQ, BW) and AVX-512 VNNI, loaded only on CPUs that have them (aecg_bench/llm/cpu_build.py).
  FLAGS_AVX512="${FLAGS/-DGGML_AVX512=OFF/-DGGML_AVX512=ON}"
  FLAGS_AVX512="${FLAGS_AVX512/-DGGML_AVX512_VNNI=OFF/-DGGML_AVX512_VNNI=ON}"
else
  FLAGS="-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF"
  FLAGS_AVX512=""
fi
