"""Deterministic structural mutations of an IR (XML + .bin): what a corrupted or hand-edited IR looks like.

Each mutation changes one thing (an element type, a body Parameter shape, a port-map attribute, a back edge, a Const's
bytes or metadata, an op type or version, an attribute, an edge, a layer id, the .bin length, the XML text) and says
what it changed. `mutants(xml, bin, seed, n)` yields `n` of them, the same ones for the same seed.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lxml import etree

ELEMENT_TYPES = ["f32", "f16", "f64", "bf16", "i64", "i32", "i16", "i8", "u8", "u16", "u32", "u64", "boolean",
                 "u1", "u4", "i4", "nf4", "f8e4m3", "dynamic", "undefined", "q7"]
PRECISIONS = ["FP32", "FP16", "FP64", "BF16", "I64", "I32", "I8", "U8", "U64", "BOOL", "U1", "I4", "UNSPECIFIED"]
OP_TYPES = ["Add", "Multiply", "Subtract", "Tanh", "Sigmoid", "Relu", "Convert", "Reshape", "Transpose", "Concat",
            "Gather", "Squeeze", "Unsqueeze", "ReduceSum", "MatMul", "Split", "LSTMCell", "Less", "LogicalNot",
            "ShapeOf", "Parameter", "Result", "Const", "Loop", "TensorIterator", "FancyOp"]
VERSIONS = ["opset1", "opset3", "opset4", "opset5", "opset8", "opset13", "opset99", "", "extension"]
# ops whose constant inputs are axes, orders, shapes or counts: corrupting those bytes changes the structure
STRUCTURAL_CONSUMERS = {"transpose", "reshape", "gather", "split", "variadicsplit", "squeeze", "unsqueeze", "concat",
                        "reducesum", "reducemean", "reducemax", "broadcast", "tile", "stridedslice", "slice",
                        "lstmcell", "grucell", "rnncell", "loop", "tensoriterator", "convert", "matmul"}


@dataclass(frozen=True)
class Mutant:
    name: str
    xml: bytes
    bin: bytes


class _Doc:
    """A parsed IR with helpers to pick elements at random."""

    def __init__(self, xml: bytes, bin_: bytes, rng: random.Random) -> None:
        self.root = etree.fromstring(xml, etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False))
        self.bin = bytearray(bin_)
        self.rng = rng

    def layers(self, pred: Callable[[etree._Element], bool] = lambda _: True) -> list[etree._Element]:
        return [el for el in self.root.iter("layer") if pred(el)]

    def pick(self, items: list[etree._Element]) -> etree._Element | None:
        return self.rng.choice(items) if items else None

    @staticmethod
    def graph_of(layer: etree._Element) -> etree._Element:
        return layer.getparent().getparent()  # <layers>'s parent: <net>, <body>, <then_body>, <else_body>

    @staticmethod
    def edges_of(graph: etree._Element) -> list[etree._Element]:
        edges = graph.find("edges")
        return list(edges) if edges is not None else []

    @staticmethod
    def ports(layer: etree._Element, kind: str) -> list[etree._Element]:
        el = layer.find(kind)
        return [p for p in el if p.tag == "port"] if el is not None else []

    def consumers(self, layer: etree._Element) -> list[etree._Element]:
        graph = self.graph_of(layer)
        ids = {c.get("id"): c for c in graph.find("layers")}
        return [ids[e.get("to-layer")] for e in self.edges_of(graph)
                if e.get("from-layer") == layer.get("id") and e.get("to-layer") in ids]

    def text(self) -> bytes:
        return etree.tostring(self.root, xml_declaration=True, encoding="utf-8")


def _label(layer: etree._Element) -> str:
    return f"{layer.get('type')} {layer.get('id')} '{layer.get('name')}'"


def _is(layer: etree._Element, *types: str) -> bool:
    return (layer.get("type") or "").lower() in types


# ---- mutations: each returns a description, or None when it does not apply to this IR

def element_type(d: _Doc) -> str | None:
    layer = d.pick(d.layers(lambda el: el.find("data") is not None and (
        el.find("data").get("element_type") is not None or el.find("data").get("destination_type") is not None)))
    if layer is None:
        return None
    data = layer.find("data")
    key = "element_type" if data.get("element_type") is not None else "destination_type"
    new = d.rng.choice([t for t in ELEMENT_TYPES if t != data.get(key)])
    old = data.get(key)
    data.set(key, new)
    if d.rng.random() < 0.5:  # keep the output port precision in step (a consistent re-typing)
        for p in d.ports(layer, "output"):
            if p.get("precision") is not None:
                p.set("precision", new.upper().replace("F", "FP") if new[0] == "f" else new.upper())
    return f"{_label(layer)}: {key} {old} -> {new}"


def precision(d: _Doc) -> str | None:
    ports = [(layer, p) for layer in d.layers() for kind in ("input", "output") for p in d.ports(layer, kind)
             if p.get("precision") is not None]
    if not ports:
        return None
    layer, p = d.rng.choice(ports)
    old, new = p.get("precision"), d.rng.choice(PRECISIONS)
    p.set("precision", new)
    return f"{_label(layer)} port {p.get('id')}: precision {old} -> {new}"


def _new_dims(d: _Doc, dims: list[str]) -> list[str]:
    r = d.rng.random()
    if not dims or r < 0.2:
        return dims + [str(d.rng.choice([1, 2, 3]))]
    i = d.rng.randrange(len(dims))
    if r < 0.4:
        return dims[:i] + dims[i + 1:]
    if r < 0.55:
        return dims[:i] + ["?" if d.rng.random() < 0.5 else "-1"] + dims[i + 1:]
    v = int(dims[i]) if dims[i].lstrip("-").isdigit() else 1
    return dims[:i] + [str(max(0, v + d.rng.choice([-1, 1, 2, 5])))] + dims[i + 1:]


def param_shape(d: _Doc) -> str | None:
    params = d.layers(lambda el: _is(el, "parameter") and el.find("data") is not None)
    body = [p for p in params if d.graph_of(p).tag != "net"]
    layer = d.pick(body if body and d.rng.random() < 0.8 else params)
    if layer is None:
        return None
    data = layer.find("data")
    old = data.get("shape", "")
    dims = [s.strip() for s in old.split(",") if s.strip()]
    new = ",".join(_new_dims(d, dims))
    data.set("shape", new)
    if d.rng.random() < 0.5:  # port dims in step
        for p in d.ports(layer, "output"):
            for dim in list(p.findall("dim")):
                p.remove(dim)
            for v in new.split(","):
                if v:
                    etree.SubElement(p, "dim").text = "-1" if v == "?" else v
    return f"{_label(layer)}: shape [{old}] -> [{new}]"


def port_dims(d: _Doc) -> str | None:
    ports = [(layer, kind, p) for layer in d.layers() for kind in ("input", "output") for p in d.ports(layer, kind)]
    if not ports:
        return None
    layer, kind, p = d.rng.choice(ports)
    dims = [x.text or "" for x in p.findall("dim")]
    new = _new_dims(d, dims)
    for dim in list(p.findall("dim")):
        p.remove(dim)
    for v in new:
        etree.SubElement(p, "dim").text = "-1" if v == "?" else v
    return f"{_label(layer)} {kind} port {p.get('id')}: dims {dims} -> {new}"


def port_map(d: _Doc) -> str | None:
    entries = [(layer, e) for layer in d.layers(lambda el: el.find("port_map") is not None)
               for e in layer.find("port_map")]
    if not entries:
        return None
    layer, e = d.rng.choice(entries)
    attr = d.rng.choice(["axis", "start", "end", "stride", "part_size", "external_port_id", "internal_layer_id",
                         "purpose"])
    old = e.get(attr)
    if attr == "axis" and old is not None and d.rng.random() < 0.3:
        del e.attrib["axis"]
        return f"{_label(layer)} port_map {e.tag} line {e.sourceline}: axis removed"
    if attr == "purpose":
        new = d.rng.choice(["current_iteration", "execution_condition", "other"])
    elif attr == "internal_layer_id":
        body = layer.find("body")
        ids = [c.get("id") for c in body.find("layers")] if body is not None else ["0"]
        new = d.rng.choice(ids + ["999"])
    else:
        base = int(old) if old is not None and old.lstrip("-").isdigit() else 0
        new = str(d.rng.choice([base - 2, base - 1, base + 1, base + 2, 0, -1]))
    e.set(attr, new)
    return f"{_label(layer)} port_map {e.tag} line {e.sourceline}: {attr} {old} -> {new}"


def back_edge(d: _Doc) -> str | None:
    edges = [(layer, e) for layer in d.layers(lambda el: el.find("back_edges") is not None)
             for e in layer.find("back_edges")]
    loops = d.layers(lambda el: el.find("body") is not None)
    r = d.rng.random()
    if r < 0.2 and loops:  # a new back edge between random body layers
        layer = d.rng.choice(loops)
        ids = [c.get("id") for c in layer.find("body").find("layers")]
        be = layer.find("back_edges")
        if be is None:
            be = etree.SubElement(layer, "back_edges")
        f, t = d.rng.choice(ids), d.rng.choice(ids)
        etree.SubElement(be, "edge", {"from-layer": f, "to-layer": t})
        return f"{_label(layer)}: back edge {f} -> {t} added"
    if not edges:
        return None
    layer, e = d.rng.choice(edges)
    if r < 0.45:
        e.getparent().remove(e)
        return f"{_label(layer)}: back edge {e.get('from-layer')} -> {e.get('to-layer')} removed"
    ids = [c.get("id") for c in layer.find("body").find("layers")]
    attr = d.rng.choice(["from-layer", "to-layer"])
    old, new = e.get(attr), d.rng.choice(ids)
    e.set(attr, new)
    return f"{_label(layer)}: back edge {attr} {old} -> {new}"


def const_meta(d: _Doc) -> str | None:
    layer = d.pick(d.layers(lambda el: _is(el, "const") and el.find("data") is not None))
    if layer is None:
        return None
    data = layer.find("data")
    attr = d.rng.choice(["offset", "size", "shape", "offset"])
    old = data.get(attr, "")
    if attr == "shape":
        dims = [s for s in old.split(",") if s.strip()]
        new = ",".join(_new_dims(d, dims)).replace("?", "2").replace("-1", "2")
    else:
        v = int(old or 0)
        new = str(d.rng.choice([v + 1, v - 1, v + 4, v + 7, len(d.bin), len(d.bin) + 8, v * 2, 0, -4]))
    data.set(attr, new)
    return f"{_label(layer)}: {attr} {old} -> {new}"


def const_bytes(d: _Doc) -> str | None:
    """Corrupt a Const's values; prefer Consts whose values are axes, orders, shapes or counts."""
    consts = d.layers(lambda el: _is(el, "const") and el.find("data") is not None)
    structural = [c for c in consts if any((x.get("type") or "").lower() in STRUCTURAL_CONSUMERS
                                           for x in d.consumers(c))]
    layer = d.pick(structural if structural and d.rng.random() < 0.85 else consts)
    if layer is None:
        return None
    data = layer.find("data")
    try:
        off, size = int(data.get("offset", "0")), int(data.get("size", "0"))
    except ValueError:
        return None
    if size <= 0 or off + size > len(d.bin):
        return None
    et = data.get("element_type", "")
    if et in ("i64", "i32") and d.rng.random() < 0.7:  # a plausible but wrong integer
        width = 8 if et == "i64" else 4
        n = size // width
        i = d.rng.randrange(n)
        v = d.rng.choice([-3, -2, -1, 0, 1, 2, 3, 4, 7, 1 << 40])
        packed = struct.pack("<q" if width == 8 else "<i", v if width == 8 or abs(v) < 2**31 else 2**31 - 1)
        d.bin[off + i * width: off + (i + 1) * width] = packed
        return f"{_label(layer)}: element {i} of {n} set to {v}"
    pos = off + d.rng.randrange(size)
    bit = d.rng.randrange(8)
    d.bin[pos] ^= 1 << bit
    return f"{_label(layer)}: bit {bit} of byte {pos} flipped"


def op_type(d: _Doc) -> str | None:
    layer = d.pick(d.layers(lambda el: not _is(el, "parameter", "result", "const")))
    if layer is None:
        return None
    old, new = layer.get("type"), d.rng.choice(OP_TYPES)
    layer.set("type", new)
    return f"layer {layer.get('id')} '{layer.get('name')}': type {old} -> {new}"


def op_version(d: _Doc) -> str | None:
    layer = d.pick(d.layers())
    if layer is None:
        return None
    old, new = layer.get("version"), d.rng.choice(VERSIONS)
    layer.set("version", new)
    return f"{_label(layer)}: version {old} -> {new}"


def attribute(d: _Doc) -> str | None:
    layer = d.pick(d.layers(lambda el: not _is(el, "parameter", "const") and el.find("data") is not None
                            and len(el.find("data").attrib) > 0))
    if layer is None:
        return None
    data = layer.find("data")
    key = d.rng.choice(sorted(data.attrib))
    old = data.get(key)
    r = d.rng.random()
    if r < 0.3:
        del data.attrib[key]
        return f"{_label(layer)}: attribute {key} removed"
    if r < 0.5:
        new = d.rng.choice(["x", "", "1.5", "-1", "true", "0,0"])
    else:
        parts = old.split(",")
        i = d.rng.randrange(len(parts))
        p = parts[i].strip()
        if p.lstrip("-").isdigit():
            parts[i] = str(int(p) + d.rng.choice([-2, -1, 1, 3]))
        elif p in ("true", "false"):
            parts[i] = "false" if p == "true" else "true"
        else:
            parts[i] = d.rng.choice(["sigmoid", "relu", "none", "numpy", "7"])
        new = ",".join(parts)
    data.set(key, new)
    return f"{_label(layer)}: attribute {key}={old!r} -> {new!r}"


def edge(d: _Doc) -> str | None:
    graphs = [g for g in [d.root, *d.root.iter("body", "then_body", "else_body")] if g.find("edges") is not None]
    g = d.pick(graphs)
    edges = d.edges_of(g) if g is not None else []
    if not edges:
        return None
    e = d.rng.choice(edges)
    r = d.rng.random()
    if r < 0.25:
        e.getparent().remove(e)
        return f"edge line {e.sourceline} removed"
    if r < 0.35:
        e.getparent().append(etree.fromstring(etree.tostring(e)))
        return f"edge line {e.sourceline} duplicated"
    attr = d.rng.choice(["from-layer", "to-layer", "from-port", "to-port"])
    old = e.get(attr)
    ids = [c.get("id") for c in g.find("layers")]
    new = d.rng.choice(ids) if "layer" in attr and d.rng.random() < 0.8 else str(int(old) + d.rng.choice([1, 2, 50]))
    e.set(attr, new)
    return f"edge line {e.sourceline}: {attr} {old} -> {new}"


def duplicate_id(d: _Doc) -> str | None:
    layer = d.pick(d.layers())
    if layer is None:
        return None
    siblings = [c for c in layer.getparent() if c is not layer]
    if not siblings:
        return None
    other = d.rng.choice(siblings)
    old = layer.get("id")
    layer.set("id", other.get("id"))
    return f"{_label(layer)}: id {old} -> {other.get('id')} (taken)"


def cycle(d: _Doc) -> str | None:
    """Re-point an edge so that a layer reads (directly or not) from its own output."""
    graphs = [d.root, *d.root.iter("body")]
    g = d.pick([x for x in graphs if x.find("edges") is not None])
    if g is None:
        return None
    edges = d.edges_of(g)
    succ: dict[str, set[str]] = {}
    for e in edges:
        succ.setdefault(e.get("from-layer"), set()).add(e.get("to-layer"))
    cand = [e for e in edges if e.get("to-layer") in succ]
    if not cand:
        return None
    e = d.rng.choice(cand)
    seen, stack = set(), [e.get("to-layer")]
    while stack:  # everything downstream of the edge's target
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(succ.get(n, ()))
    layers = {c.get("id"): c for c in g.find("layers")}
    downstream = [i for i in seen if i in layers and d.ports(layers[i], "output")]
    if not downstream:
        return None
    src = layers[d.rng.choice(sorted(downstream))]
    old = e.get("from-layer")
    e.set("from-layer", src.get("id"))
    e.set("from-port", d.ports(src, "output")[0].get("id"))
    return f"edge line {e.sourceline}: from-layer {old} -> {src.get('id')} (cycle)"


def remove_layer(d: _Doc) -> str | None:
    layer = d.pick(d.layers())
    if layer is None:
        return None
    layer.getparent().remove(layer)
    return f"{_label(layer)} removed"


def truncate_bin(d: _Doc) -> str | None:
    if not d.bin:
        return None
    n = d.rng.randrange(len(d.bin))
    del d.bin[n:]
    return f".bin truncated to {n} bytes"


MUTATIONS: dict[str, Callable[[_Doc], str | None]] = {
    f.__name__: f for f in (element_type, precision, param_shape, port_dims, port_map, back_edge, const_meta,
                            const_bytes, op_type, op_version, attribute, edge, duplicate_id, cycle, remove_layer,
                            truncate_bin)
}
# how often each kind is drawn (the IR's structure first: shapes, types, port maps, weights)
WEIGHTS = {"element_type": 3, "precision": 2, "param_shape": 3, "port_dims": 2, "port_map": 4, "back_edge": 2,
           "const_meta": 2, "const_bytes": 4, "op_type": 2, "op_version": 1, "attribute": 3, "edge": 2,
           "duplicate_id": 1, "cycle": 1, "remove_layer": 1, "truncate_bin": 1}


def mutants(xml: bytes, bin_: bytes, seed: int, n: int, prefix: str = "") -> Iterator[Mutant]:
    """`n` single mutations of one IR, drawn from `seed` (a few are truncated XML text)."""
    rng = random.Random(seed)
    kinds = list(WEIGHTS)
    made = 0
    attempts = 0
    while made < n and attempts < 20 * n:
        attempts += 1
        if rng.random() < 0.03:
            cut = rng.randrange(len(xml))
            made += 1
            yield Mutant(f"{prefix}xml_text: truncated at byte {cut}", xml[:cut], bin_)
            continue
        kind = rng.choices(kinds, [WEIGHTS[k] for k in kinds])[0]
        doc = _Doc(xml, bin_, rng)
        what = MUTATIONS[kind](doc)
        if what is None:
            continue
        made += 1
        yield Mutant(f"{prefix}{kind}: {what}", doc.text(), bytes(doc.bin))
