"""IRs written by older tools: other element orders, Const output ports numbered from 1, IR v10 without names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from tests.convert.control_flow.builders import loop_model, ti_accumulate
from tests.utils import assert_equivalent, rng_inputs, save_ir


def _renumber_outputs_from_one(graph: etree._Element) -> None:
    """Output port ids continue after the inputs; MO-era IRs started Const/Parameter outputs at 1."""
    layers = graph.find("layers")
    edges = graph.find("edges")
    for layer in layers:
        if layer.get("type") in ("Const", "Parameter"):
            out = layer.find("output")
            for port in out:
                old = port.get("id")
                port.set("id", str(int(old) + 1))
                for e in edges:
                    if e.get("from-layer") == layer.get("id") and e.get("from-port") == old:
                        e.set("from-port", port.get("id"))
        body = layer.find("body")
        if body is not None:
            _renumber_outputs_from_one(body)


def _legacy_rewrite(xml: Path, v10: bool) -> None:
    tree = etree.parse(str(xml))
    root = tree.getroot()
    _renumber_outputs_from_one(root)
    for layer in root.iter("layer"):
        pm, be = layer.find("port_map"), layer.find("back_edges")
        if pm is not None:
            # port map first, its entries in reverse order; back edges with (ignored) ports
            layer.remove(pm)
            entries = list(pm)
            for c in entries:
                pm.remove(c)
            for c in reversed(entries):
                pm.append(c)
            layer.insert(0, pm)
        if be is not None:
            layer.remove(be)
            for e in be:
                e.set("from-port", "0")
                e.set("to-port", "0")
            layer.insert(1, be)
    if v10:
        root.set("version", "10")
        for port in root.iter("port"):
            port.attrib.pop("names", None)
        for layer in root.iter("layer"):
            layer.attrib.pop("output_names", None)
            layer.find("rt_info") is not None and layer.remove(layer.find("rt_info"))
        rt = root.find("rt_info")
        if rt is not None:
            root.remove(rt)
    tree.write(str(xml))


@pytest.mark.parametrize("v10", [False, True], ids=["v11-reordered", "v10-no-names"])
def test_tensor_iterator_legacy_layout(tmp_path: Path, v10: bool) -> None:
    xml = save_ir(ti_accumulate([2, 5, 3], 1, -1, 0, -1, 1), tmp_path)
    _legacy_rewrite(xml, v10)
    assert_equivalent(xml, rng_inputs([((2, 5, 3), np.float32), ((2, 3), np.float32)]))


@pytest.mark.parametrize("v10", [False, True], ids=["v11-reordered", "v10-no-names"])
def test_loop_legacy_layout(tmp_path: Path, v10: bool) -> None:
    xml = save_ir(loop_model(-1, True, body_cond="data", limit=8.0), tmp_path)
    _legacy_rewrite(xml, v10)
    assert_equivalent(xml, [np.arange(6, dtype=np.float32).reshape(2, 3) / 10])
