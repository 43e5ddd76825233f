"""ONNX-level passes applied after translation: `pipeline.py` declares which run, in which order, and when.

Nothing is imported here, so that importing one pass (or the shared analyses in `analysis/`) does not load them all.
"""
