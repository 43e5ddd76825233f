"""Write IR XML by hand in the style of older producers (Model Optimizer, IR v10): `precision` on every port,
Const/Parameter outputs numbered from 1, `<dim>` lists everywhere, port_map before the ports, back edges with ports.

Each layer is added with its input and output port shapes; output port ids continue after the inputs unless the
layer says where they start. A body is a nested `Net` placed inside its TensorIterator/Loop layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

PRECISION = {"f32": "FP32", "f16": "FP16", "i64": "I64", "i32": "I32", "boolean": "BOOL", "u8": "U8"}
Dims = list[int] | None  # None: a port written without <dim> children (shape left to the reader)


@dataclass
class Bin:
    """The weights file being built: constants are appended and located by offset and size."""

    blob: bytearray = field(default_factory=bytearray)

    def add(self, array: np.ndarray) -> tuple[int, int]:
        data = np.ascontiguousarray(array).tobytes()
        offset = len(self.blob)
        self.blob.extend(data)
        return offset, len(data)


def _port(pid: int, dims: Dims, precision: str | None = None, extra: str = "") -> str:
    p = f' precision="{precision}"' if precision else ""
    body = "".join(f"<dim>{d}</dim>" for d in dims or [])
    return f'<port id="{pid}"{p}{extra}>{body}</port>'


@dataclass
class Layer:
    id: int
    xml: str
    out_port0: int
    in_ports: int


@dataclass
class Net:
    weights: Bin
    layers: list[Layer] = field(default_factory=list)
    edges: list[tuple[int, int, int, int]] = field(default_factory=list)

    def add(self, type_: str, name: str, ins: list[Dims], outs: list[tuple[str, Dims]], *,
            data: dict[str, Any] | None = None, version: str = "opset1", out_port0: int | None = None,
            sources: list[tuple[int, int]] | None = None, inner: str = "", in_precision: bool = True,
            input_types: list[str] | None = None) -> int:
        """Add a layer fed by `sources` (layer id, output index); returns its id."""
        lid = len(self.layers)
        first_out = len(ins) if out_port0 is None else out_port0
        attrs = "".join(f' {k}="{v}"' for k, v in (data or {}).items())
        d = f"<data{attrs}/>" if data is not None else ""
        types = input_types or [None] * len(ins)  # type: ignore[list-item]
        in_xml = "".join(_port(i, dims, PRECISION.get(t or "f32") if in_precision else None)
                         for i, (dims, t) in enumerate(zip(ins, types)))
        out_xml = "".join(_port(first_out + k, dims, PRECISION[et]) for k, (et, dims) in enumerate(outs))
        xml = (f'<layer id="{lid}" name="{name}" type="{type_}" version="{version}">{d}{inner}'
               + (f"<input>{in_xml}</input>" if ins else "") + (f"<output>{out_xml}</output>" if outs else "")
               + "</layer>")
        self.layers.append(Layer(lid, xml, first_out, len(ins)))
        for k, (src, out) in enumerate(sources or []):
            self.edges.append((src, self.layers[src].out_port0 + out, lid, k))
        return lid

    def param(self, name: str, shape: list[int], et: str = "f32", port: int = 0) -> int:
        return self.add("Parameter", name, [], [(et, shape)], data={"shape": ",".join(map(str, shape)),
                                                                    "element_type": et}, out_port0=port)

    def const(self, name: str, value: np.ndarray, et: str = "f32", port: int = 1, shape_sep: str = ",") -> int:
        value = np.asarray(value)
        offset, size = self.weights.add(value)
        shape = shape_sep.join(map(str, value.shape))
        return self.add("Const", name, [], [(et, list(value.shape))],
                        data={"element_type": et, "offset": offset, "size": size, "shape": shape}, out_port0=port)

    def result(self, name: str, src: tuple[int, int], dims: Dims) -> int:
        return self.add("Result", name, [dims], [], sources=[src])

    def xml(self) -> str:
        layers = "\n".join(layer.xml for layer in self.layers)
        edges = "\n".join(f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>'
                          for a, b, c, d in self.edges)
        return f"<layers>\n{layers}\n</layers>\n<edges>\n{edges}\n</edges>"


def port_map(inputs: list[dict[str, Any]], outputs: list[dict[str, Any]], back_edges: list[tuple[int, int]]) -> str:
    """port_map and back_edges as Model Optimizer wrote them (back edges carry ports the readers ignore)."""
    def entry(tag: str, attrs: dict[str, Any]) -> str:
        return f"<{tag}" + "".join(f' {k}="{v}"' for k, v in attrs.items()) + "/>"
    pm = "".join(entry("input", a) for a in inputs) + "".join(entry("output", a) for a in outputs)
    be = "".join(f'<edge from-layer="{a}" from-port="0" to-layer="{b}" to-port="0"/>' for a, b in back_edges)
    return f"<port_map>{pm}</port_map><back_edges>{be}</back_edges>"


def write(path: Path, net: Net, name: str = "net", version: int = 10) -> Path:
    path.write_text(f'<?xml version="1.0"?>\n<net name="{name}" version="{version}">\n{net.xml()}\n</net>\n')
    path.with_suffix(".bin").write_bytes(bytes(net.weights.blob))
    return path
