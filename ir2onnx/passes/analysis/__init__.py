"""Analyses the passes share: graph traversal, values (constants, shapes), static shapes, affine index
arithmetic."""
