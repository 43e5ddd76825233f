"""TensorIterator-1 and Loop-5: port-map analysis shared by both, one module per op."""
