"""Write ir2onnx/passes/ort_cpu_kernels.json: the CPU kernels of the installed (CPU) onnxruntime.

    python scripts/gen_ort_kernels.py

The conversion asks onnxruntime for its CPU kernels (to compute each node in an element type onnxruntime can run).
Builds with other providers (onnxruntime-gpu) cannot be asked safely and have the same CPU kernels as the CPU build
of their version: they use this table. Regenerate it with the newest CPU onnxruntime installed.
"""

from __future__ import annotations

import json

import onnxruntime

from ir2onnx.passes.ort_types import KERNEL_TABLE, listed_cpu_kernels


def main() -> None:
    rows = [json.dumps(list(k), separators=(",", ":")) for k in listed_cpu_kernels()]
    KERNEL_TABLE.write_text(f'{{"onnxruntime": "{onnxruntime.__version__}", "kernels": [\n' + ",\n".join(rows) + "\n]}\n")
    print(f"{KERNEL_TABLE}: {len(rows)} CPU kernels of onnxruntime {onnxruntime.__version__}")


if __name__ == "__main__":
    main()
