"""Which ONNX value carries each IR layer output, kept in the model's metadata so a layer-by-layer check can read
it back from an ONNX file.

Keys are `PATH:PORT`: PATH is the layer id, prefixed with the ids of the enclosing TensorIterator/Loop layers
(`7/3`; an If branch is `ID.BRANCH`), PORT the output index. Body Parameters are recorded too (what the body
reads for them). The map is refreshed after the ONNX passes: entries whose value is gone are dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import may_hold_graphs, subgraphs

METADATA_KEY = "ir2onnx.layer_outputs"
_META = "ir2onnx.layer_values"


def key(path: str, port: int) -> str:
    return f"{path}:{port}"


def split_key(k: str) -> tuple[str, int]:
    path, _, port = k.rpartition(":")
    return path, int(port)


def attach(model: oir.Model, values: dict[str, oir.Value]) -> None:
    """Keep the recorded values on the model and write the map into its metadata."""
    model.meta[_META] = values
    refresh(model)


def refresh(model: oir.Model) -> None:
    """Rewrite the metadata from the recorded values that still exist in the model (after passes)."""
    values = model.meta.get(_META)
    if not isinstance(values, dict):
        return
    live = {id(v) for v in _values(model.graph)}
    entries = {k: v.name for k, v in values.items() if id(v) in live and v.name}
    model.metadata_props[METADATA_KEY] = json.dumps(entries, separators=(",", ":"))


def substitute(model: oir.Model, replaced: dict[oir.Value, oir.Value]) -> None:
    """A pass replaced values by others computing the same: the map follows them."""
    values = model.meta.get(_META)
    if not isinstance(values, dict) or not replaced:
        return
    for k, v in values.items():
        seen = {v}
        while v in replaced and replaced[v] not in seen:  # a value replaced, its replacement replaced in turn
            v = replaced[v]
            seen.add(v)
        values[k] = v
    refresh(model)


def read(metadata: dict[str, str]) -> dict[str, str]:
    """`PATH:PORT` -> ONNX value name, from a model's metadata_props (empty when absent or unreadable)."""
    raw = metadata.get(METADATA_KEY)
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _values(graph: oir.Graph) -> Iterator[oir.Value]:
    yield from graph.inputs
    yield from graph.initializers.values()
    for node in graph:
        yield from node.outputs
        if may_hold_graphs(node):
            for sub in subgraphs(node):
                yield from _values(sub)
