"""The doctor reads which CPU features the embedded runtime uses and names the ones a host lacks."""

from __future__ import annotations

from aecg_bench.doctor import missing_host_features, runtime_cpu_features

PORTABLE = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | AVX512 = 0 | LLAMAFILE = 1 | OPENMP = 1 |"
)
NATIVE_SPR = PORTABLE.replace("AVX512 = 0", "AVX512 = 1 | AVX512_BF16 = 1 | AMX_INT8 = 1")


def test_runtime_features_are_the_enabled_instruction_sets_only() -> None:
    assert runtime_cpu_features(PORTABLE) == ["AVX", "AVX2", "F16C", "FMA", "SSE3", "SSSE3"]


def test_a_native_sapphire_rapids_build_is_flagged_on_an_amd_host() -> None:
    zen3 = {"pni", "ssse3", "avx", "avx2", "f16c", "fma", "bmi2"}
    assert missing_host_features(runtime_cpu_features(PORTABLE), zen3) == []
    assert missing_host_features(runtime_cpu_features(NATIVE_SPR), zen3) == ["AMX_INT8", "AVX512", "AVX512_BF16"]


def test_installed_runtime_has_no_avx512_or_amx_instructions() -> None:
    """`make setup` must build llama.cpp for the portable baseline, never for the build machine."""
    import platform
    import shutil
    import subprocess
    from pathlib import Path

    import pytest

    llama_cpp = pytest.importorskip("llama_cpp")
    if platform.machine() != "x86_64" or shutil.which("objdump") is None:
        pytest.skip("needs x86-64 and objdump")
    libs = sorted(Path(llama_cpp.__file__).parent.glob("lib/libggml-cpu*.so"))
    assert libs, "llama_cpp ships no libggml-cpu library"
    for lib in libs:
        asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(lib)], capture_output=True, text=True).stdout
        assert "%ymm" in asm, f"{lib.name}: no AVX2 code at all; was the baseline lowered?"
        bad = [ln for ln in asm.splitlines() if "%zmm" in ln or "tileload" in ln or "tdpb" in ln]
        assert not bad, f"{lib.name} holds AVX-512/AMX instructions, e.g. {bad[0].strip()}"


def test_a_build_that_does_not_load_is_one_line_naming_the_build_and_what_to_do(monkeypatch) -> None:
    import pytest

    from aecg_bench import doctor

    monkeypatch.setenv("LLAMA_CPP_LIB_PATH", "/no/such/build")
    with pytest.raises(RuntimeError, match=r"\(/no/such/build build\) does not load .*unset it"):
        doctor._check_cpu_features()
    assert "AECG_LLAMA_BASELINE=1" in doctor._advice("avx512-vnni")
    assert "make setup" in doctor._advice("x86-64-v3") and "make setup" in doctor._advice("")
