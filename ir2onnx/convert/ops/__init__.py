"""Op converters, one module per family; importing this package registers them all."""

from ir2onnx.convert.ops import (  # noqa: F401
    activations,
    elementwise,
    embedding,
    gather,
    movement,
    nms,
    nn,
    priors,
    normalization,
    reduce,
    rnn,
    roi,
    scatter,
    search,
    shape,
    yolo,
)
from ir2onnx.convert.ops.control_flow import if_, loop, tensor_iterator  # noqa: F401
