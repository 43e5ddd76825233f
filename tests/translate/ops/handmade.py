"""One-layer IRs written by hand, for op versions OpenVINO's Python API cannot build (e.g. Reverse-1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_ET = {np.dtype(np.float32): ("f32", "FP32"), np.dtype(np.float16): ("f16", "FP16"),
       np.dtype(np.int64): ("i64", "I64"), np.dtype(np.int32): ("i32", "I32"), np.dtype(np.uint8): ("u8", "U8"),
       np.dtype(np.bool_): ("boolean", "BOOL")}


@dataclass(frozen=True)
class Input:
    """A Parameter (`value` None) or a Const input of the layer."""

    shape: tuple[int, ...]
    dtype: type
    value: np.ndarray | None = None


def _dims(shape: Sequence[int]) -> str:
    return "".join(f"<dim>{d}</dim>" for d in shape)


def write_layer_ir(directory: Path, op_type: str, version: str, attrs: Mapping[str, str], inputs: Sequence[Input],
                   outputs: Sequence[tuple[tuple[int, ...], type]]) -> Path:
    """Parameters/Consts -> one `op_type` layer -> Results. Parameters are named in0, in1, ... in input order."""
    layers, edges, blob = [], [], b""
    for i, inp in enumerate(inputs):
        et, prec = _ET[np.dtype(inp.dtype)]
        shape = ",".join(map(str, inp.shape))
        if inp.value is None:
            layers.append(f'<layer id="{i}" name="in{i}" type="Parameter" version="opset1">'
                          f'<data shape="{shape}" element_type="{et}"/><output><port id="0" precision="{prec}" '
                          f'names="in{i}">{_dims(inp.shape)}</port></output></layer>')
        else:
            raw = np.ascontiguousarray(inp.value, dtype=inp.dtype).tobytes()
            layers.append(f'<layer id="{i}" name="c{i}" type="Const" version="opset1"><data element_type="{et}" '
                          f'shape="{shape}" offset="{len(blob)}" size="{len(raw)}"/><output><port id="0" '
                          f'precision="{prec}">{_dims(inp.shape)}</port></output></layer>')
            blob += raw
        edges.append(f'<edge from-layer="{i}" from-port="0" to-layer="{len(inputs)}" to-port="{i}"/>')
    op = len(inputs)
    data = " ".join(f'{k}="{v}"' for k, v in attrs.items())
    ins = "".join(f'<port id="{i}">{_dims(inp.shape)}</port>' for i, inp in enumerate(inputs))
    outs = "".join(f'<port id="{op + k}" precision="{_ET[np.dtype(dt)][1]}" names="out{k}">{_dims(shape)}</port>'
                   for k, (shape, dt) in enumerate(outputs))
    layers.append(f'<layer id="{op}" name="op" type="{op_type}" version="{version}"><data {data}/>'
                  f'<input>{ins}</input><output>{outs}</output></layer>')
    for k, (shape, _) in enumerate(outputs):
        rid = op + 1 + k
        layers.append(f'<layer id="{rid}" name="r{k}" type="Result" version="opset1"><input><port id="0">'
                      f'{_dims(shape)}</port></input></layer>')
        edges.append(f'<edge from-layer="{op}" from-port="{op + k}" to-layer="{rid}" to-port="0"/>')
    xml = directory / "model.xml"
    xml.write_text('<?xml version="1.0"?>\n<net name="t" version="11">\n<layers>\n' + "\n".join(layers) +
                   "\n</layers>\n<edges>\n" + "\n".join(edges) + "\n</edges>\n</net>\n")
    (directory / "model.bin").write_bytes(blob)
    return xml
