"""Marks that ir2onnx leaves on the ONNX models it writes, for its own check to read.

EQUIVALENT_BRANCHES (a node metadata key, value "batch"): an If whose two branches compute the same outputs, its
condition only choosing the faster form for the run-time batch (passes/gru_scan.py: a GRU as a Scan at large
batches, the GRU node below). The check runs such a model both ways, so that a small default input does not leave
one form unverified.
"""

EQUIVALENT_BRANCHES = "ir2onnx.equivalent_branches"
