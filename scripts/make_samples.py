"""Build the sample IRs in samples/ with OpenVINO's Python API (f32 weights kept). Needs `pip install openvino`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops

ROOT = Path(__file__).resolve().parent.parent / "samples"


def ti_lstm() -> ov.Model:
    """TensorIterator over LSTMCell-4, as in the TensorIterator specification's full example (smaller sizes)."""
    rng = np.random.default_rng(0)
    T, B, I, H = 25, 1, 64, 32
    X = ops.parameter([B, T, I], np.float32, name="X")
    H0 = ops.parameter([B, H], np.float32, name="H0")
    C0 = ops.parameter([B, H], np.float32, name="C0")
    bx = ops.parameter([B, 1, I], np.float32, name="x_t")
    bh = ops.parameter([B, H], np.float32, name="h")
    bc = ops.parameter([B, H], np.float32, name="c")
    x = ops.reshape(bx, ops.constant(np.array([B, I], np.int64)), False)
    w = ops.constant((rng.standard_normal((4 * H, I)) * 0.2).astype(np.float32))
    r = ops.constant((rng.standard_normal((4 * H, H)) * 0.2).astype(np.float32))
    bias = ops.constant((rng.standard_normal(4 * H) * 0.1).astype(np.float32))
    cell = ops.lstm_cell(x, bh, bc, w, r, bias, H)
    r_h, r_c = ops.result(cell.output(0)), ops.result(cell.output(1))
    r_y = ops.result(ops.reshape(cell.output(0), ops.constant(np.array([B, 1, H], np.int64)), False))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_c, r_y], [bx, bh, bc]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(bh, H0.output(0), r_h.output(0))
    ti.set_merged_input(bc, C0.output(0), r_c.output(0))
    y = ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1)
    y.get_tensor().set_names({"Y"})
    return ov.Model([y], [X, H0, C0], "ti_lstm")


def streaming_lstm() -> ov.Model:
    """The ti_lstm network as a streaming model runs it: OpenVINO's LowLatency2 moves its states into variables
    (ReadValue/Assign) kept between calls, each call a chunk of 4 frames."""
    from openvino._offline_transformations import apply_low_latency_transformation

    model = ti_lstm()
    model.reshape({"X": [1, 4, 64]})
    apply_low_latency_transformation(model, True)
    model.set_friendly_name("streaming_lstm")
    return model


def while_loop() -> ov.Model:
    """Loop-5 with no trip limit (-1): doubles x until sum(|x|) reaches a limit; returns x and the step count."""
    X = ops.parameter([4], np.float32, name="x")
    it = ops.parameter([], np.int64, name="i")
    bx = ops.parameter([4], np.float32, name="bx")
    nx = ops.add(ops.multiply(bx, ops.constant(np.float32(2.0))), ops.constant(np.float32(0.5)))
    cond = ops.less(ops.reduce_sum(ops.abs(nx), [0], False), ops.constant(np.float32(100.0)))
    r_c, r_x, r_i = ops.result(cond), ops.result(nx), ops.result(ops.add(it, ops.constant(np.int64(1))))
    loop = ops.loop(ops.constant(np.int64(-1)), ops.constant(True))
    loop.set_function(ov.Model([r_c, r_x, r_i], [it, bx]))
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(bx, X.output(0), r_x.output(0))
    out_x = loop.get_iter_value(r_x.output(0), -1)
    out_n = loop.get_iter_value(r_i.output(0), -1)
    out_x.get_tensor().set_names({"x_final"})
    out_n.get_tensor().set_names({"steps"})
    return ov.Model([out_x, out_n], [X], "while_loop")


def nested() -> ov.Model:
    """A Loop (trip count input) whose body runs a TensorIterator over the rows of the input."""
    X = ops.parameter([5, 3], np.float32, name="x")
    S = ops.parameter([3], np.float32, name="s")
    T = ops.parameter([], np.int64, name="trip")
    it = ops.parameter([], np.int64, name="i")
    lx = ops.parameter([5, 3], np.float32, name="lx")
    ls = ops.parameter([3], np.float32, name="ls")
    tx = ops.parameter([1, 3], np.float32, name="tx")
    th = ops.parameter([3], np.float32, name="th")
    nh = ops.tanh(ops.add(ops.multiply(th, ops.constant(np.float32(0.9))), ops.squeeze(tx, [0])))
    r_th = ops.result(nh)
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_th], [tx, th]))
    scaled = ops.multiply(lx, ops.convert(ops.add(it, ops.constant(np.int64(1))), np.float32))
    ti.set_sliced_input(tx, scaled.output(0), 0, 1, 1, -1, 0)
    ti.set_merged_input(th, ls.output(0), r_th.output(0))
    inner = ti.get_iter_value(r_th.output(0), -1)
    r_c, r_s, r_y = ops.result(ops.constant(True)), ops.result(inner), ops.result(ops.unsqueeze(inner, 0))
    loop = ops.loop(T, ops.constant(True))
    loop.set_function(ov.Model([r_c, r_s, r_y], [it, lx, ls]))
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(lx, X.output(0))
    loop.set_merged_input(ls, S.output(0), r_s.output(0))
    final = loop.get_iter_value(r_s.output(0), -1)
    steps = loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)
    final.get_tensor().set_names({"s_final"})
    steps.get_tensor().set_names({"s_steps"})
    return ov.Model([final, steps], [X, S, T], "nested")


def main() -> None:
    for make in (ti_lstm, streaming_lstm, while_loop, nested):
        out = ROOT / make.__name__
        out.mkdir(parents=True, exist_ok=True)
        ov.save_model(make(), str(out / "model.xml"), compress_to_fp16=False)
        print(f"wrote {out / 'model.xml'}")


if __name__ == "__main__":
    main()
