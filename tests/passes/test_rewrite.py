"""The passes' walks over a model: every node and graph at any depth, and the model's names collected when used."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as oir
import pytest
from onnx import TensorProto, helper

from ir2onnx.passes import rewrite
from ir2onnx.passes.analysis.graph import all_graphs, all_nodes
from ir2onnx.passes.rewrite import all_names, fresh_name


def _vi(name: str) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [2])


def nested() -> oir.Model:
    """A Loop whose body holds an If whose branches hold a Scan and nothing; a node of another domain holding a
    graph; an empty subgraph."""
    scan_body = helper.make_graph([helper.make_node("Add", ["s", "x"], ["s2"], name="scan_add"),
                                   helper.make_node("Identity", ["s2"], ["y"], name="scan_id")],
                                  "scan_body", [_vi("s"), _vi("x")], [_vi("s2"), _vi("y")])
    then_g = helper.make_graph([helper.make_node("Scan", ["a", "xs"], ["t_s", "t_y"], name="inner_scan", body=scan_body,
                                                 num_scan_inputs=1)], "then", [], [_vi("t_s")])
    else_g = helper.make_graph([], "else", [], [_vi("a")])
    loop_body = helper.make_graph(
        [helper.make_node("If", ["cond"], ["a_out"], name="branch", then_branch=then_g, else_branch=else_g),
         helper.make_node("Identity", ["cond"], ["cond_out"], name="keep_going")],
        "loop_body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                      helper.make_tensor_value_info("cond", TensorProto.BOOL, []), _vi("a")],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), _vi("a_out")])
    custom_g = helper.make_graph([helper.make_node("Neg", ["c_in"], ["c_out"], name="custom_neg")], "custom_body",
                                [_vi("c_in")], [_vi("c_out")])
    empty_g = helper.make_graph([], "empty", [_vi("e")], [_vi("e")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "c", "a0"], ["a_final"], name="loop", body=loop_body),
         helper.make_node("Holder", ["a_final"], ["held"], name="holder", domain="custom.domain", body=custom_g),
         helper.make_node("If", ["c"], ["e_out"], name="empty_if", then_branch=empty_g, else_branch=empty_g),
         helper.make_node("Relu", ["held"], ["out"], name="relu")],
        "main", [helper.make_tensor_value_info("n", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c", TensorProto.BOOL, []), _vi("a0"), _vi("xs")],
        [_vi("out")], [onnx.numpy_helper.from_array(np.float32([1, 2]), "unused_weight")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("custom.domain", 1)])
    return oir.serde.deserialize_model(model)


def test_all_nodes_is_onnx_irs_recursive_order() -> None:
    model = nested()
    expected = [n.name for n in oir.traversal.RecursiveGraphIterator(model.graph)]
    assert [n.name for n in all_nodes(model.graph)] == expected
    assert {"scan_add", "custom_neg", "keep_going"} <= set(expected)


def test_all_graphs_is_the_graph_and_its_subgraphs() -> None:
    model = nested()
    found = list(all_graphs(model.graph))
    assert found[0] is model.graph
    assert found[1:] == list(model.graph.subgraphs())  # the empty branches included
    assert {g.name for g in found} == {"main", "loop_body", "then", "else", "scan_body", "custom_body", "empty"}


def test_names_are_every_name_of_the_model() -> None:
    model = nested()
    expected = fuse_rnn_util_names(model.graph)
    names = all_names(model.graph)
    assert set(names) == expected and len(names) == len(expected)
    assert {"s2", "custom_neg", "c_out", "unused_weight", "xs", "inner_scan"} <= expected


def fuse_rnn_util_names(graph: oir.Graph) -> set[str]:
    """The names, collected as the passes did before they were collected when first needed."""
    names: set[str] = set()
    for g in (graph, *graph.subgraphs()):
        names.update(v.name for v in (*g.inputs, *g.initializers.values()) if v.name)
        for n in g:
            if n.name:
                names.add(n.name)
            names.update(v.name for v in n.outputs if v.name)
    return names


def test_names_are_collected_when_first_used(monkeypatch: pytest.MonkeyPatch) -> None:
    model = nested()
    walks = []
    real = rewrite.all_graphs

    def counted(graph: oir.Graph):  # type: ignore[no-untyped-def]
        walks.append(graph)
        return real(graph)

    monkeypatch.setattr(rewrite, "all_graphs", counted)
    names = all_names(model.graph)
    assert walks == []  # a pass that rewrites nothing never walks the model for names
    assert fresh_name(names, "s2") == "s2_1"  # the first question collects them, once
    assert fresh_name(names, "s2") == "s2_2"  # and records what it handed out
    assert "relu" in names and "s2_1" in names and "nothing" not in names
    names.discard("s2_1")
    assert "s2_1" not in names
    assert len(walks) == 1
