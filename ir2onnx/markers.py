"""Marks that ir2onnx leaves on the ONNX models it writes, for its own check to read.

EQUIVALENT_BRANCHES (a node metadata key, value "batch"): an If whose two branches compute the same outputs, its
condition only choosing the faster form for the run-time batch (passes/gru_scan.py: a GRU as a Scan at large
batches, the GRU node below). The check runs such a model both ways, so that a small default input does not leave
one form unverified.

STATES (a model metadata key, value JSON): the model's variables (translate/ops/state.py), each
{"variable": id, "input": state input name or null, "output": stored-value output name or null}; users pair the
inputs and outputs with it, and the check tells OpenVINO which variables to set and read.
"""

EQUIVALENT_BRANCHES = "ir2onnx.equivalent_branches"
STATES = "ir2onnx.states"
