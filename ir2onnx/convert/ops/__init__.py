"""Op converters, one module per family; importing this package registers them all."""

from ir2onnx.convert.ops import (  # noqa: F401
    activations,
    conv,
    elementwise,
    gather,
    layout,
    nn,
    normalization,
    pooling,
    reduce,
    resize,
    rnn,
    sampling,
    shape,
)
from ir2onnx.convert.ops.control_flow import if_, loop, tensor_iterator  # noqa: F401
