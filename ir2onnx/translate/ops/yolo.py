"""YOLO helpers: RegionYolo-1 and ReorgYolo-2."""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter


@converter("RegionYolo", "opset1")
def region_yolo(ctx: LayerContext) -> oir.Value:
    """Per anchor, a block of coords + 1 + classes channels: x and y and the objectness go through a sigmoid, the
    other box coordinates stay, the class scores get a softmax over the classes (do_softmax) or a sigmoid. With
    do_softmax every anchor (`num`) is decoded and the dims axis..end_axis are flattened; otherwise the anchors are
    those of `mask` and the shape stays."""
    b = ctx.b
    if ctx.input_rank(0) != 4:
        raise ctx.error("RegionYolo takes a 4-D input")
    coords, classes = ctx.attr_int("coords"), ctx.attr_int("classes")
    softmax = ctx.attr_bool("do_softmax", True)
    anchors = ctx.attr_int("num") if softmax else len(ctx.attr_ints("mask", []))
    block = coords + 1 + classes
    x = ctx.inputs[0]
    shape = b.shape_of(x)
    # [N, anchors, block, H*W]: the channels past anchors * block (if any) are left as they are
    used = b.slice(x, [0], [anchors * block], [1])
    rest = b.slice(x, [anchors * block], [2**62], [1])
    v = b.reshape(used, b.concat([b.shape_of(x, 0, 1), b.i64([anchors, block, -1])], 0))
    xy = b.op("Sigmoid", [b.slice(v, [0], [2], [2])])
    wh = b.slice(v, [2], [coords], [2])
    obj = b.op("Sigmoid", [b.slice(v, [coords], [coords + 1], [2])])
    cls = b.slice(v, [coords + 1], [block], [2])
    cls = b.op("Softmax", [cls], {"axis": 2}) if softmax else b.op("Sigmoid", [cls])
    y = b.concat([xy, wh, obj, cls], 2)
    y = b.concat([b.reshape(y, b.concat([b.shape_of(x, 0, 1), b.i64([anchors * block]), b.shape_of(x, 2)], 0)),
                  rest], 1)
    if not softmax:
        return b.reshape(y, shape)
    axis = ctx.normalize_axis(ctx.attr_int("axis", 1), 4)
    end = ctx.normalize_axis(ctx.attr_int("end_axis", 3), 4)
    if end < axis:
        return b.reshape(y, shape)
    flat = b.concat([b.shape_of(x, 0, axis), b.i64([-1]), b.shape_of(x, end + 1, 4)], 0)
    return b.reshape(y, flat)


@converter("ReorgYolo", "opset2")
def reorg_yolo(ctx: LayerContext) -> oir.Value:
    """darknet's reorg: x viewed as [N, C/s^2, H, s, W, s], dims (s, s, C/s^2, H, W) brought forward, then
    [N, C*s^2, H/s, W/s]."""
    b = ctx.b
    if ctx.input_rank(0) != 4:
        raise ctx.error("ReorgYolo takes a 4-D input")
    stride = ctx.attr_ints("stride")[0]
    dims = ctx.input_dims(0) if ctx.b.parent is None else (None,) * 4  # (a body's declared dims may be stale)
    if stride < 1 or stride * stride >= 1 << 63:
        raise ctx.error(f"stride={stride}: it must be at least 1 (and its square an int64)")
    for d in dims[2:]:
        ctx.check_divides(f"stride {stride}", stride, d, "elements of the height or width")
    s2 = stride * stride
    x = ctx.inputs[0]
    n, c, h, w = (b.shape_of(x, i, i + 1) for i in range(4))
    view = b.concat([n, b.op("Div", [c, b.i64([s2])]), h, b.i64([stride]), w, b.i64([stride])], 0)
    y = b.op("Transpose", [b.reshape(x, view)], {"perm": [0, 3, 5, 1, 2, 4]})
    out = b.concat([n, b.op("Mul", [c, b.i64([s2])]), b.op("Div", [h, b.i64([stride])]),
                    b.op("Div", [w, b.i64([stride])])], 0)
    return b.reshape(y, out)
