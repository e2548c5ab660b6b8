"""The process loads the AVX-512 VNNI build of llama.cpp only on a CPU with every flag it uses, else the portable one."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aecg_bench.llm import cpu_build
from aecg_bench.llm.cpu_build import (
    BASELINE,
    VARIANT,
    VARIANT_NEEDS,
    baseline_env,
    cpu_flags,
    loaded_build,
    select_llama_build,
    variant_libs,
)

ZEN4 = set(VARIANT_NEEDS) | {"pni", "ssse3", "bmi2", "avx512_bf16"}
ZEN3 = {"pni", "ssse3", "avx", "avx2", "fma", "f16c", "bmi2"}


@pytest.fixture
def variant_dir(tmp_path: Path) -> Path:
    (tmp_path / "libllama.so").write_bytes(b"")
    return tmp_path


def test_cpu_flags_are_read_from_the_first_flags_line() -> None:
    text = "vmx flags\t: ept\nprocessor\t: 0\nflags\t\t: fpu avx2 avx512f\nbugs\t\t: x\nflags\t\t: other\n"
    assert cpu_flags(text) == {"fpu", "avx2", "avx512f"}
    assert cpu_flags("no flags here") == set()


def test_host_flags_come_from_proc_cpuinfo_and_none_when_unreadable(tmp_path: Path) -> None:
    assert cpu_build.host_cpu_flags(tmp_path / "missing") == set()
    (tmp_path / "cpuinfo").write_text("flags\t: fpu sse2\n")
    assert cpu_build.host_cpu_flags(tmp_path / "cpuinfo") == {"fpu", "sse2"}
    if platform.system() == "Linux" and platform.machine() == "x86_64":
        assert {"fpu", "sse2"} <= cpu_build.host_cpu_flags()  # the real /proc/cpuinfo by default


def test_the_variant_is_chosen_only_with_every_flag_it_uses(variant_dir: Path) -> None:
    assert variant_libs(ZEN4, variant_dir, {}) == variant_dir
    assert variant_libs(set(VARIANT_NEEDS), variant_dir, {}) == variant_dir  # exactly the flags it uses
    assert variant_libs(ZEN3, variant_dir, {}) is None
    for flag in sorted(VARIANT_NEEDS):  # e.g. Skylake-X: AVX-512 without VNNI
        assert variant_libs(ZEN4 - {flag}, variant_dir, {}) is None, flag


def test_no_variant_libraries_or_a_users_choice_means_no_variant(variant_dir: Path, tmp_path: Path) -> None:
    assert variant_libs(ZEN4, tmp_path / "absent", {}) is None
    assert variant_libs(ZEN4, variant_dir, {"AECG_LLAMA_BASELINE": "1"}) is None
    assert variant_libs(ZEN4, variant_dir, {"AECG_LLAMA_BASELINE": "0"}) == variant_dir
    assert variant_libs(ZEN4, variant_dir, {"AECG_LLAMA_BASELINE": ""}) == variant_dir
    assert variant_libs(ZEN4, variant_dir, {"LLAMA_CPP_LIB_PATH": "/my/build"}) is None


def test_selection_points_both_library_overrides_at_the_variant(variant_dir: Path, monkeypatch) -> None:
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)
    env: dict[str, str] = {}
    select_llama_build(env, flags=ZEN4, variant_dir=variant_dir)
    assert env == {"LLAMA_CPP_LIB_PATH": str(variant_dir), "MTMD_CPP_LIB": str(variant_dir)}
    assert loaded_build(env, variant_dir) == VARIANT
    env = {}
    select_llama_build(env, flags=ZEN3, variant_dir=variant_dir)
    assert env == {} and loaded_build(env, variant_dir) == BASELINE
    assert loaded_build({"LLAMA_CPP_LIB_PATH": "/my/build"}, variant_dir) == "/my/build"


def test_selection_reads_this_cpus_flags_by_default(variant_dir: Path, monkeypatch) -> None:
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)
    monkeypatch.setattr(cpu_build, "host_cpu_flags", lambda: ZEN4)
    env: dict[str, str] = {}
    select_llama_build(env, variant_dir=variant_dir)
    assert env["LLAMA_CPP_LIB_PATH"] == str(variant_dir)


def test_selection_is_a_no_op_once_llama_cpp_is_loaded(variant_dir: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", object())
    env: dict[str, str] = {}
    select_llama_build(env, flags=ZEN4, variant_dir=variant_dir)
    assert env == {}


def test_baseline_env_drops_only_the_library_overrides() -> None:
    env = {"LLAMA_CPP_LIB_PATH": "/v", "MTMD_CPP_LIB": "/v", "PATH": "/bin", "AECG_JOBS": "2"}
    assert baseline_env(env) == {"PATH": "/bin", "AECG_JOBS": "2"}


@pytest.mark.skipif(not (cpu_build.VARIANT_DIR / "libllama.so").is_file(), reason="no AVX-512 VNNI build installed")
def test_installed_variant_has_avx512_vnni_code_and_no_amx() -> None:
    """`make setup`'s second build uses exactly the flags cpu_build.VARIANT_NEEDS checks for, never AMX."""
    if platform.machine() != "x86_64" or shutil.which("objdump") is None:
        pytest.skip("needs x86-64 and objdump")
    lib = cpu_build.VARIANT_DIR / "libggml-cpu.so"
    asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(lib)], capture_output=True, text=True).stdout
    assert "%zmm" in asm and "vpdpbusd" in asm
    assert not [ln for ln in asm.splitlines() if "tileload" in ln or "tdpb" in ln]


@pytest.mark.slow
@pytest.mark.skipif(not (cpu_build.VARIANT_DIR / "libllama.so").is_file(), reason="no AVX-512 VNNI build installed")
def test_a_fresh_process_loads_the_build_its_cpu_runs_and_the_model_answers() -> None:
    want = VARIANT if cpu_build.host_cpu_flags() >= VARIANT_NEEDS else BASELINE
    probe = (
        "from aecg_bench.llm import LLMClient, ModelSpec; from aecg_bench.llm.cpu_build import loaded_build; "
        "spec = ModelSpec(label='l', model='aecg-local/smollm2-135m-instruct-q8_0', native_tools=False, "
        "grammar=True, max_tokens=4); "
        "out = LLMClient({'l': spec}, {'default': 'l'}).complete("
        "[{'role': 'user', 'content': 'Yes or no?'}], grammar='root ::= \"yes\" | \"no\"'); "
        "print(loaded_build(), out.text)"
    )
    env = baseline_env()
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    build, answer = out.stdout.split()[-2:]
    assert build == want and answer in {"yes", "no"}


def test_the_cpu_model_is_read_from_cpuinfo_and_named_unknown_when_unreadable(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B14\nflags\t: sse\n")
    assert cpu_build.cpu_model(info) == "AMD EPYC 9B14"
    info.write_text("model name\t: Virtual CPU: rev 2 @ 2.0GHz\n")  # a colon in the name is kept
    assert cpu_build.cpu_model(info) == "Virtual CPU: rev 2 @ 2.0GHz"
    info.write_text("processor\t: 0\nflags\t: sse\n")
    assert cpu_build.cpu_model(info) == "unknown CPU"
    assert cpu_build.cpu_model(tmp_path / "missing") == "unknown CPU"
