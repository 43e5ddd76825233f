"""Op converters, one module per family; importing this package registers them all."""

from ir2onnx.convert.ops import (  # noqa: F401
    activations,
    attention,
    bitwise,
    conv,
    elementwise,
    gather,
    layout,
    math,
    movement,
    nms,
    nn,
    normalization,
    not_convertible,
    pooling,
    reduce,
    resize,
    rnn,
    sampling,
    scatter,
    sequence,
    shape,
    strided_slice,
)
from ir2onnx.convert.ops.control_flow import if_, loop, tensor_iterator  # noqa: F401
