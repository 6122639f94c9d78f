"""``whatif --backend vllm`` on vLLM's CPU build: its refusal of synthetic acceptance is one clear line.

vLLM 0.32 accepts ``rejection_sample_method: "synthetic"`` in the speculative config and starts the engine,
then its CPU rejection kernels assert "Synthetic acceptance not supported with CPU sampling" on the first
verification and the engine dies with a generic ``EngineDeadError``. ``whatif`` names that refusal before any
engine starts (``engine.vllm_backend.synthetic_unsupported``); the second test checks that the refusal it
names is what vLLM really does, by starting such an engine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from vllm_helpers import DRAFT, ENGINE, SPECMETER, TARGET, env, legal_slice

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

REFUSAL = "Synthetic acceptance not supported with CPU sampling"


def test_whatif_through_vllm_on_the_cpu_is_one_clear_line(tmp_path: Path) -> None:
    out = tmp_path / "whatif.json"
    proc = subprocess.run(
        [str(SPECMETER), "whatif", "--backend", "vllm", "--target", str(TARGET), "--draft", str(DRAFT),
         "--prompts", str(legal_slice(tmp_path / "p.jsonl", 2)), "--alpha", "0.5", "--k", "3",
         "--max-tokens", "8", "--json", str(out), "--no-store", *ENGINE],
        capture_output=True, text=True, timeout=600, env=env(),
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert REFUSAL in errors[0] and "cpu_triton_utils.py" in errors[0] and "natively" in errors[0]
    assert not out.exists()  # refused before anything was measured or written


SCRIPT = """
import json, sys
from pathlib import Path
from specmeter.engine.vllm_backend import VllmEngine, VllmSettings

if __name__ == "__main__":
    spec = {"method": "draft_model", "model": sys.argv[2], "num_speculative_tokens": 3,
            "rejection_sample_method": "synthetic", "synthetic_acceptance_rates": [0.8, 0.6, 0.4]}
    settings = VllmSettings(dtype="float32", enforce_eager=True, gpu_memory_utilization=0.3)
    with VllmEngine.start(Path(sys.argv[1]), settings, spec, max_model_len=256) as engine:
        try:
            engine.generate([1, 200, 300, 400], max_tokens=8, temperature=0.0, top_p=1.0, eos_ids=[2])
        except Exception as e:
            print("FAILED", type(e).__name__)
        else:
            print("DECODED")
"""


def test_the_refusal_named_is_what_vllm_does(tmp_path: Path) -> None:
    script = tmp_path / "synthetic.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), str(TARGET), str(DRAFT)],
        capture_output=True, text=True, timeout=600, env=env(),
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert "FAILED" in proc.stdout, output[-3000:]
    assert REFUSAL in output, output[-3000:]
