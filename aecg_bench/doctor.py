"""`python -m aecg_bench.doctor`: check that a fresh install can run offline.

Loads the embedded model and asks it one constrained question, loads the
packaged embedder, and checks for Java (ScienceWorld). Prints one line per
check; exits non-zero if a required one fails.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time


def _check_local_model() -> str:
    from aecg_bench.llm import LLMClient, ModelSpec

    spec = ModelSpec(
        label="local", model="aecg-local/smollm2-135m-instruct", native_tools=False, grammar=True, max_tokens=8
    )
    client = LLMClient({"local": spec}, {"default": "local"})
    start = time.perf_counter()
    out = client.complete(
        [{"role": "user", "content": "Is the sky blue? Answer yes or no."}], grammar='root ::= "yes" | "no"'
    )
    return f"answered {out.text!r} in {time.perf_counter() - start:.2f}s"


def _check_embedder() -> str:
    from aecg_bench.llm.embeddings import Embedder

    vecs = Embedder("minilm").embed(["pick up the ball", "grasp the ball"])
    return f"dim {vecs.shape[1]}, similarity {float(vecs[0] @ vecs[1]):.2f}"


def _check_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("java not found (ScienceWorld needs Java 17)")
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    return (out.stderr or out.stdout).splitlines()[0]


CHECKS = {
    "embedded model": (_check_local_model, True),
    "embedder": (_check_embedder, True),
    "java": (_check_java, False),
}


def main() -> int:
    failed = 0
    for name, (check, required) in CHECKS.items():
        try:
            print(f"ok    {name}: {check()}")
        except Exception as exc:
            failed += int(required)
            print(f"{'FAIL' if required else 'warn'}  {name}: {exc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
