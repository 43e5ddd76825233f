"""Write ir2onnx/passes/ort_cpu_kernels.json: the CPU kernels of the installed (CPU) onnxruntime.

    python scripts/gen/gen_ort_kernels.py

The conversion asks onnxruntime for its CPU kernels (to compute each node in an element type onnxruntime can run).
Builds with other providers (onnxruntime-gpu) cannot be asked safely and have the same CPU kernels as the CPU build
of their version: they use this table, and so does the CPU build of the version and platform it was written
from (the conversion then need not import onnxruntime). Regenerate it with the newest CPU onnxruntime installed.
The table holds one row a line: a conversion reads it a line at a time and decodes only the rows of its model's ops
(ort_types._shipped_kernels).
"""

from __future__ import annotations

import json

import onnxruntime

from ir2onnx.passes.ort_types import KERNEL_TABLE, kernel_platform, listed_cpu_kernels


def main() -> None:
    rows = [json.dumps(list(k), separators=(",", ":")) for k in listed_cpu_kernels()]
    head = f'{{"onnxruntime": "{onnxruntime.__version__}", "platform": "{kernel_platform()}", "kernels": [\n'
    KERNEL_TABLE.write_text(head + ",\n".join(rows) + "\n]}\n")
    print(f"{KERNEL_TABLE}: {len(rows)} CPU kernels of onnxruntime {onnxruntime.__version__}")


if __name__ == "__main__":
    main()
