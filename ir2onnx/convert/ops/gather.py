"""gather converters."""

from __future__ import annotations
