"""Reads IR v10/v11 XML into the typed model. Safe: no DTD, no entities, no network, bounded size."""

from __future__ import annotations

import os
import re
from dataclasses import replace

from lxml import etree

from ir2onnx.errors import IRReadError
from ir2onnx.ir.element_types import ElementType, parse_element_type
from ir2onnx.ir.model import (
    BackEdge,
    Body,
    ConstData,
    Edge,
    Graph,
    IRModel,
    Layer,
    Mean,
    Port,
    PortMapEntry,
    PreProcess,
    Shape,
)

MAX_XML_BYTES = 1 << 30  # 1 GiB of XML is far beyond any real network description
MAX_DIM = (1 << 63) - 1  # dims are int64 in OpenVINO (which refuses larger ones) and in ONNX
SUPPORTED_IR_VERSIONS = (10, 11)

_DTD = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
        huge_tree=False, remove_comments=True, remove_pis=True,
    )


def read_xml(xml_path: str, bin_path: str | None = None) -> IRModel:
    """Parse `xml_path` (the .bin is only located here, not read)."""
    try:
        size = os.path.getsize(xml_path)
    except OSError as e:
        raise IRReadError(f"cannot read {xml_path}: {e.strerror}") from None
    if size > MAX_XML_BYTES:
        raise IRReadError(f"{xml_path}: {size} bytes of XML is more than the {MAX_XML_BYTES} allowed")
    with open(xml_path, "rb") as f:
        text = f.read().lstrip(b" \t\r\n")  # (OpenVINO's reader accepts blank lines before the declaration)
    if _DTD.search(text):
        raise IRReadError(f"{xml_path}: DTDs and entity declarations are not allowed in IR XML")
    root = _parse(text, xml_path)
    if root.tag != "net":
        raise IRReadError(f"{xml_path}: root element is <{root.tag}>, expected <net> (line {root.sourceline})")
    version = _int(root, "version", "the <net> element")
    if version not in SUPPORTED_IR_VERSIONS:
        raise IRReadError(f"{xml_path}: IR version {version} is not supported (only 10 and 11)")
    graph = _graph(root, scope="", what="the <net> element")
    if bin_path is None:
        bin_path = os.path.splitext(xml_path)[0] + ".bin"
    return IRModel(root.get("name", ""), version, graph, xml_path, bin_path, _pre_process(root))


def _parse(text: bytes, xml_path: str) -> etree._Element:
    """The document's root element. What follows its end tag is ignored, as OpenVINO's reader ignores it (OpenVINO's
    own tests have IRs ending in a stray `//`)."""
    try:
        return etree.fromstring(text, _parser())
    except etree.XMLSyntaxError as e:
        first = e
    if first.msg.startswith("Extra content at the end of the document") and first.position[0] >= 1:
        line, column = first.position
        lines = text.split(b"\n")
        end = sum(len(s) + 1 for s in lines[:line - 1]) + max(column - 1, 0)
        try:
            return etree.fromstring(text[:end], _parser())
        except etree.XMLSyntaxError:
            pass
    raise IRReadError(f"{xml_path}: malformed XML: {first}") from None


def _pre_process(root: etree._Element) -> PreProcess | None:
    """The `<pre-process>` block, read as OpenVINO's reader reads it: a `<channel>` without an `id` takes its
    position; a `<mean>` has a `value` or an `offset` and `size` in the weights file."""
    el = _child(root, "pre-process")
    if el is None:
        return None
    means: list[Mean] = []
    for position, chan in enumerate(c for c in el if c.tag == "channel"):
        channel = _int(chan, "id", f"a pre-process <channel> (line {chan.sourceline})", default=position)
        mean = _child(chan, "mean")
        if mean is None:
            continue
        what = f"the pre-process mean of channel {channel} (line {mean.sourceline})"
        if mean.get("value") is None and mean.get("size") is None:
            raise IRReadError(f"{what} has neither a 'value' nor a 'size' attribute")
        value = None
        if mean.get("value") is not None:
            try:
                value = float(mean.get("value", ""))
            except ValueError:
                raise IRReadError(f"{what}: value=\"{mean.get('value')}\" is not a number") from None
        blob = None
        if mean.get("size") is not None and mean.get("offset") is not None:
            blob = (_int(mean, "offset", what), _int(mean, "size", what))
            if min(blob) < 0:
                raise IRReadError(f"{what}: offset and size must not be negative")
        means.append(Mean(channel, value, blob, mean.sourceline or 0))
    return PreProcess(el.get("reference-layer-name", "").strip(), tuple(means), el.sourceline or 0)


def _child(el: etree._Element, *names: str) -> etree._Element | None:
    for c in el:
        if c.tag in names:
            return c
    return None


def _int(el: etree._Element, attr: str, what: str, default: int | None = None) -> int:
    raw = el.get(attr)
    if raw is None:
        if default is not None:
            return default
        raise IRReadError(f"{what} (line {el.sourceline}) has no '{attr}' attribute")
    try:
        return int(raw.strip())
    except ValueError:
        raise IRReadError(f"{what} (line {el.sourceline}): '{attr}'=\"{raw}\" is not an integer") from None


def split_names(raw: str) -> tuple[str, ...]:
    """Comma-separated tensor names; a literal comma is written `\\,`. Spaces are part of a name, as OpenVINO reads
    them (`a, b` names `a` and ` b`)."""
    if "\\" not in raw:  # no escaped comma: a plain split (this runs for every port)
        return tuple(p for p in raw.split(",") if p.strip())
    parts = re.split(r"(?<!\\),", raw)
    return tuple(p.replace("\\,", ",") for p in parts if p.strip())


def parse_shape(text: str) -> Shape:
    """A Parameter `shape` attribute: `?`/`-1` dynamic, `a..b` bounded (bounds dropped), `...` dynamic rank.
    ValueError, saying which part, for anything else (OpenVINO refuses it too)."""
    text = text.strip()
    if text == "":
        return ()
    if "..." in text:
        return None
    dims: list[int | None] = []
    for part in text.strip("[]{}").split(","):
        p = part.strip()
        lo, sep, hi = p.partition("..")
        try:
            if p in ("?", "-1") or sep:
                bounds = [int(b) for b in (lo, hi) if b not in ("", "?", "-1")]
                if not (sep and len(bounds) == 2 and bounds[0] == bounds[1]):
                    dims.append(None)
                    continue
                dim = bounds[0]  # a dimension bounded to one value is that value
            else:
                dim = int(p)
        except ValueError:
            raise ValueError(f"shape '{text}': '{p}' is not a dimension") from None
        if dim < 0:
            raise ValueError(f"shape '{text}': negative dimension {dim}")
        if dim > MAX_DIM:
            raise ValueError(f"shape '{text}': dimension {dim} is larger than an int64 holds")
        dims.append(dim)
    return tuple(dims)


def _port(el: etree._Element, what: str) -> Port:
    pid = _int(el, "id", what)
    dims: list[int | None] = []
    for d in el:
        if d.tag != "dim":
            continue
        try:
            v = int(d.text)  # (int() ignores surrounding whitespace)
        except (TypeError, ValueError):
            raise IRReadError(f"{what} (line {d.sourceline}): <dim>{d.text}</dim> is not an integer") from None
        if v < -1:
            raise IRReadError(f"{what} (line {d.sourceline}): <dim>{v}</dim> is negative")
        if v > MAX_DIM:
            raise IRReadError(f"{what} (line {d.sourceline}): <dim>{v}</dim> is larger than an int64 holds")
        dims.append(None if v == -1 else v)
    attrib = el.attrib
    prec = attrib.get("precision")
    return Port(pid, tuple(dims), parse_element_type(prec) if prec else None, split_names(attrib.get("names", "")),
                el.sourceline or 0)


def _port_map_entry(el: etree._Element, what: str) -> PortMapEntry:
    internal = el.get("internal_layer_id", el.get("internal_operation_id"))
    if internal is None:
        raise IRReadError(f"{what}: port_map <{el.tag}> (line {el.sourceline}) has no internal_layer_id")
    axis = el.get("axis")
    return PortMapEntry(
        external_port_id=_int(el, "external_port_id", f"{what}: port_map <{el.tag}>"),
        internal_layer_id=internal.strip(),
        axis=_int(el, "axis", what) if axis is not None else None,
        start=_int(el, "start", what, 0),
        end=_int(el, "end", what, -1),
        stride=_int(el, "stride", what, 1),
        part_size=_int(el, "part_size", what, 1),
        purpose=el.get("purpose"),
        line=el.sourceline or 0,
    )


def _layer(el: etree._Element, scope: str) -> Layer:
    attrib = el.attrib
    lid, kind, name = attrib.get("id"), attrib.get("type"), attrib.get("name", "")
    line = el.sourceline or 0
    what = f"{scope}layer {lid} '{name}' ({kind if kind is not None else '?'}, line {el.sourceline})"
    if lid is None or kind is None:
        raise IRReadError(f"{what}: a <layer> needs 'id' and 'type' attributes")
    children: dict[object, etree._Element] = {}  # the first child of each tag
    for c in el:
        children.setdefault(c.tag, c)
    data_el = children.get("data")
    data = dict(data_el.attrib) if data_el is not None else {}
    if "output_names" in attrib:  # a Result's names for the model output: kept with its data
        data.setdefault("output_names", attrib["output_names"])
    inputs, outputs = children.get("input"), children.get("output")
    layer = Layer(
        id=lid.strip(),
        name=name,
        type=kind,
        version=attrib.get("version", ""),
        data=data,
        inputs=tuple(_port(p, what) for p in inputs if p.tag == "port") if inputs is not None else (),
        outputs=tuple(_port(p, what) for p in outputs if p.tag == "port") if outputs is not None else (),
        line=line,
        scope=scope,
    )
    if layer.type_key in ("const", "constant"):
        object.__setattr__(layer, "const", _const_data(layer, what))
    inner_scope = f"{scope}{layer.type} {layer.id} '{layer.name}' > "
    body_el = children.get("body")
    if body_el is not None:
        body = _body(el, body_el, "port_map", inner_scope, what)
        if layer.type_key == "tensoriterator":  # no special ports: OpenVINO ignores `purpose` in its port map
            body = replace(body, inputs=tuple(e._replace(purpose=None) for e in body.inputs),
                           outputs=tuple(e._replace(purpose=None) for e in body.outputs))
        object.__setattr__(layer, "body", body)
    then_el, else_el = children.get("then_body"), children.get("else_body")
    if then_el is not None and else_el is not None:
        branches = (_body(el, then_el, "then_port_map", f"{inner_scope}then > ", what),
                    _body(el, else_el, "else_port_map", f"{inner_scope}else > ", what))
        object.__setattr__(layer, "branches", branches)
    return layer


def _body(el: etree._Element, body_el: etree._Element, port_map: str, scope: str, what: str) -> Body:
    """A nested graph with its port map (`port_map`, or `then_port_map`/`else_port_map` for If) and back edges."""
    pm = _child(el, port_map)
    be = _child(el, "back_edges")
    entries = list(pm) if pm is not None else []
    return Body(
        graph=_graph(body_el, scope, what),
        inputs=tuple(_port_map_entry(c, what) for c in entries if c.tag == "input"),
        outputs=tuple(_port_map_entry(c, what) for c in entries if c.tag == "output"),
        back_edges=tuple(
            BackEdge(
                str(c.get("from-layer", c.get("from-operation", ""))).strip(),
                str(c.get("to-layer", c.get("to-operation", ""))).strip(),
                c.sourceline or 0,
            )
            for c in (be if be is not None else ())
            if c.tag == "edge"
        ),
    )


def _const_data(layer: Layer, what: str) -> ConstData:
    d = layer.data
    port = layer.outputs[0] if layer.outputs else None
    et = parse_element_type(d["element_type"]) if "element_type" in d else (port.element_type if port else None)
    if et is None:
        raise IRReadError(f"{what}: unknown or missing element type ({d.get('element_type', 'no precision')})")
    if "shape" in d:
        try:
            shape = parse_shape(d["shape"])
        except ValueError as e:
            raise IRReadError(f"{what}: {e}") from None
        if shape is None or any(s is None for s in shape):
            raise IRReadError(f"{what}: Const shape '{d['shape']}' is not static")
    elif port is not None:
        shape = port.dims
        if any(s is None for s in shape):
            raise IRReadError(f"{what}: Const output port has dynamic dims")
    else:
        raise IRReadError(f"{what}: Const has neither a shape nor an output port")
    try:
        offset, size = int(d.get("offset", "")), int(d.get("size", ""))
    except ValueError:
        raise IRReadError(f"{what}: Const needs integer 'offset' and 'size' attributes") from None
    if offset < 0 or size < 0:
        raise IRReadError(f"{what}: Const offset/size must not be negative")
    return ConstData(et, tuple(int(s) for s in shape if s is not None), offset, size)


def _graph(el: etree._Element, scope: str, what: str) -> Graph:
    layers_el = _child(el, "layers", "operations")
    if layers_el is None:
        raise IRReadError(f"{what}: no <layers> element")
    layers = tuple(_layer(c, scope) for c in layers_el if c.tag in ("layer", "operation"))
    edges_el = _child(el, "edges")
    edges: list[Edge] = []
    for c in edges_el if edges_el is not None else ():
        if c.tag != "edge":
            continue
        ew = f"{scope}edge (line {c.sourceline})"
        fl = c.get("from-layer", c.get("from-operation"))
        tl = c.get("to-layer", c.get("to-operation"))
        if fl is None or tl is None:
            raise IRReadError(f"{ew} needs from-layer and to-layer")
        edges.append(Edge(fl.strip(), _int(c, "from-port", ew), tl.strip(), _int(c, "to-port", ew), c.sourceline or 0))
    return Graph(layers, tuple(edges))


def parameter_shape(p: Layer) -> Shape:
    """A Parameter's shape: its `shape` attribute (authoritative), else its output port dims."""
    if "shape" in p.data:
        return parse_shape(p.data["shape"])
    return p.outputs[0].dims if p.outputs else None


def parameter_type(p: Layer) -> ElementType | None:
    """A Parameter's element type: `element_type`, else its output port precision."""
    raw = p.data.get("element_type")
    et = parse_element_type(raw) if raw else None
    return et or (p.outputs[0].element_type if p.outputs else None)
