"""Recurrent passes: cell recognition, loop views, fusion into ONNX LSTM/GRU/RNN, masks, and the lowerings of those
nodes to Scans for onnxruntime's CPU kernels."""
