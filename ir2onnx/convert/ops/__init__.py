"""Op converters, one module per family; importing this package registers them all."""

from ir2onnx.convert.ops import (  # noqa: F401
    activations,
    attention,
    bitwise,
    ctc,
    detection,
    elementwise,
    embedding,
    gather,
    math,
    movement,
    nms,
    nn,
    normalization,
    not_convertible,
    priors,
    reduce,
    rnn,
    roi,
    scatter,
    search,
    sequence,
    shape,
    strided_slice,
    yolo,
)
from ir2onnx.convert.ops.control_flow import if_, loop, tensor_iterator  # noqa: F401
