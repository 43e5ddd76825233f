"""An IR's `<pre-process>` block: OpenVINO's reader subtracts per-channel means from one input before the graph
reads it (Model Optimizer's `--mean_values` / mean images in IR v10), so the ONNX model does the same, with a Sub
between the graph input and its readers.

The means are per-channel values (a [C, 1, ...] constant) or per-channel images in the weights file (a [C, H, W]
constant, one [1, H, W] image per channel), in the input's element type; the channel axis is 1 (rank 2, 4, 5) or 0
(rank 3, CHW). The input is the Parameter named by `reference-layer-name`, else the first 4-D input, else the first.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.errors import ConversionError
from ir2onnx.ir.element_types import ElementType
from ir2onnx.ir.model import ConstData, IRModel, Layer, PreProcess
from ir2onnx.ir.weights import Weights, needed_bytes
from ir2onnx.ir.xml_reader import parameter_shape, parameter_type
from ir2onnx.translate.builder import GraphBuilder


def subtract_means(model: IRModel, weights: Weights | None, b: GraphBuilder, bindings: dict[str, oir.Value]) -> None:
    """Rebind the pre-processed Parameter (its id in `bindings`) to itself minus its means."""
    pp = model.pre_process
    if pp is None or not pp.means:
        return
    where = f"the <pre-process> block (line {pp.line})"
    param = _input(model, pp, where)
    shape = parameter_shape(param)
    if shape is None or None in shape:
        raise ConversionError(f"{where}: input '{param.name}' has a dynamic shape; OpenVINO cannot apply its means "
                              "either")
    dims = [int(d) for d in shape if d is not None]
    if not 2 <= len(dims) <= 5:
        raise ConversionError(f"{where}: input '{param.name}' has rank {len(dims)}; means apply to ranks 2 to 5")
    channel_axis = 0 if len(dims) == 3 else 1
    channels = dims[channel_axis]
    image = [1, *dims[channel_axis + 1:]] if len(dims) > 2 else [1]  # one channel's mean image
    et = parameter_type(param)
    if et is None or et.packed or et.name == "bf16":
        raise ConversionError(f"{where}: input '{param.name}' of type {et.name if et else 'unknown'} takes no means")
    values = {(m.channel, m.value) for m in pp.means if m.value is not None}
    blobs = {(m.channel, m.blob) for m in pp.means if m.blob is not None}
    if values and blobs:
        raise ConversionError(f"{where}: mean values and mean images are mixed")
    entries = sorted(values or blobs, key=lambda e: e[0])
    found = [c for c, _ in entries]
    if sorted(set(found)) != list(range(channels)) or len(found) != channels:
        raise ConversionError(f"{where}: {len(found)} means for channels {found}; input '{param.name}' "
                              f"({dims}) has {channels} channels, each needs one")
    if values:
        mean = np.array([v for _, v in entries], np.float32).astype(et.numpy)  # read as f32, as OpenVINO reads them
        mean = mean.reshape([channels] + [1] * (len(dims) - channel_axis - 1)) if len(dims) > 2 else mean
    else:
        mean = np.concatenate([_image(weights, blob, image, et, where, c) for c, blob in entries], 0)  # type: ignore[arg-type]
    bindings[param.id] = b.op("Sub", [bindings[param.id], b.const(mean)])


def _input(model: IRModel, pp: PreProcess, where: str) -> Layer:
    params = model.graph.parameters
    if pp.input_name:
        for p in params:
            if p.name == pp.input_name:
                return p
        raise ConversionError(f"{where}: reference-layer-name '{pp.input_name}' names no input")
    if not params:
        raise ConversionError(f"{where}: the model has no input")
    four_d = [p for p in params if (s := parameter_shape(p)) is not None and len(s) == 4]
    return (four_d or list(params))[0]


def _image(weights: Weights | None, blob: tuple[int, int], image: list[int], et: ElementType, where: str,
           channel: int) -> np.ndarray:
    offset, size = blob
    const = ConstData(et, tuple(image), offset, size)
    if size != needed_bytes(et, const.shape):
        raise ConversionError(f"{where}: the mean image of channel {channel} has {size} bytes; {image} x {et.name} "
                              f"needs {needed_bytes(et, const.shape)}")
    if weights is None or offset + size > weights.size:
        raise ConversionError(f"{where}: the mean image of channel {channel} (offset {offset}, size {size}) lies "
                              f"outside the weights file ({0 if weights is None else weights.size} bytes)")
    return weights.array(const)
