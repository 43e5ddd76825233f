"""Build IR fixtures with OpenVINO's TensorFlow (and TensorFlow Lite) frontends: small Keras recurrent layers and TF
control flow.

Each case is converted with `openvino.convert_model` and saved with f32 weights to
tests/fixtures/tf_<name>/model.{xml,bin}, beside inputs.npz (keyed by the IR's input names). The tests only read
these files: they need neither TensorFlow nor this script.

Needs tensorflow (with Keras 3), tf_keras (for the TensorFlow 1 cells) and openvino:
`python scripts/make_tf_fixtures.py [NAME ...]`.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import openvino as ov
import tensorflow as tf
from fixture_io import write_fixture

ROOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
B, T, I, H = 2, 6, 4, 8


def _keras(layer_fn: Callable[[], keras.layers.Layer | list[keras.layers.Layer]],
           shape: tuple[int | None, ...] = (T, I), batch: int = B) -> keras.Model:
    """A Keras model running the layer (or the layers, one after another) on x."""
    inp = keras.Input(shape, batch_size=batch, name="x")
    layers = layer_fn()
    out = inp
    for layer in layers if isinstance(layers, list) else [layers]:
        out = layer(out)
    # several outputs as a new list: given the layer's own list, OpenVINO's frontend fails on a static batch
    # ("No conversion rule found for operations: TensorList")
    return keras.Model(inp, list(out) if isinstance(out, (list, tuple)) else out)


def _function(fn: Callable[..., object], *specs: tf.TensorSpec) -> ov.Model:
    """A tf.function saved as a SavedModel (so the frontend sees the TF2 control-flow ops), then converted."""

    class Module(tf.Module):
        pass

    mod = Module()
    mod.f = tf.function(fn, input_signature=list(specs))
    with tempfile.TemporaryDirectory() as d:
        tf.saved_model.save(mod, d, signatures=mod.f.get_concrete_function())
        return ov.convert_model(d)


def while_loop(x: tf.Tensor) -> tf.Tensor:
    """Doubles x (plus a step) until its sum passes a limit: the number of steps depends on the data."""
    def cond(i, v):
        return tf.reduce_sum(tf.abs(v)) < 50.0

    def body(i, v):
        return i + 1, v * 2.0 + tf.cast(i, tf.float32) * 0.1

    i, v = tf.while_loop(cond, body, (tf.constant(0), x), maximum_iterations=20)
    return v, tf.reshape(i, [1])


def scan(x: tf.Tensor) -> tf.Tensor:
    """Running state over the time-major rows of x: s_t = tanh(s_{t-1} * 0.5 + x_t)."""
    return tf.scan(lambda s, xt: tf.tanh(s * 0.5 + xt), x, initializer=tf.zeros_like(x[0]))


def map_fn(x: tf.Tensor) -> tf.Tensor:
    """Per-row function of x with a row-dependent reduction."""
    return tf.map_fn(lambda r: tf.reduce_max(r) * r + tf.reduce_sum(r), x)


def for_loop(x: tf.Tensor) -> tf.Tensor:
    """Autograph `for` over the rows of a tensor (x[i]: StridedSlice with run-time begin/end and shrink_axis_mask),
    writing a TensorArray and keeping a running sum."""
    n = tf.shape(x)[0]
    ta = tf.TensorArray(tf.float32, size=n)
    acc = tf.zeros_like(x[0])
    for i in tf.range(n):
        acc = acc * 0.5 + tf.sin(x[i])
        ta = ta.write(i, acc * tf.cast(i + 1, tf.float32))
    return ta.stack(), acc


def for_loop_columns(x: tf.Tensor) -> tf.Tensor:
    """Autograph `for` reading column i (begin/end masks with a run-time index) and the rows from i on."""
    n = tf.shape(x)[1]
    ta = tf.TensorArray(tf.float32, size=n)
    for i in tf.range(n):
        ta = ta.write(i, x[:, i] * tf.reduce_sum(x[i:, :]))
    return ta.stack()


def split_dynamic(x: tf.Tensor) -> tf.Tensor:
    """tf.split with sizes computed from the run-time shape (VariadicSplit with run-time lengths, one of them -1)."""
    a, b, c = tf.split(x, [tf.shape(x)[1] // 3, -1, 1], axis=1)
    return a * 2.0, tf.reduce_sum(b, axis=1), c - 1.0


def while_tensor_array(x: tf.Tensor) -> tf.Tensor:
    """A data-dependent while loop appending to a dynamic-size TensorArray (a decoder's output buffer)."""
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    i, s = tf.constant(0), tf.zeros_like(x[0])
    while tf.reduce_sum(s) < 10.0 and i < 50:
        s = s + tf.reduce_mean(x, 0) + 0.5
        ta = ta.write(i, s)
        i += 1
    return ta.stack(), i


Built = tuple[ov.Model, list[np.ndarray], list[np.ndarray]]  # the IR, its inputs, TensorFlow's outputs
CASES: dict[str, Callable[[], Built]] = {}


def _flat(out: object) -> list[np.ndarray]:
    return [np.asarray(t) for t in tf.nest.flatten(out)]


def _rnn(layer_fn: Callable[[], keras.layers.Layer | list[keras.layers.Layer]],
         masked: bool = False, shape: tuple[int | None, ...] = (T, I), batch: int | None = B) -> Callable[[], Built]:
    """`masked`: some steps of x are all zeros (the last two of row 0, one inside row 1), for a Masking layer;
    `shape`: the model's input shape (None: a run-time length); `batch` None: a run-time batch."""
    def build() -> Built:
        model = _keras(layer_fn, shape, batch)
        x = np.random.default_rng(0).standard_normal((B, *(T if d is None else d for d in shape))).astype(np.float32)
        if masked:
            x[0, -2:] = 0
            x[1, 2] = 0
        return ov.convert_model(model), [x], _flat(model(x))
    return build


CASES.update({
    "lstm_seq": _rnn(lambda: keras.layers.LSTM(H, return_sequences=True)),
    "lstm_last": _rnn(lambda: keras.layers.LSTM(H)),
    "lstm_backwards": _rnn(lambda: keras.layers.LSTM(H, return_sequences=True, go_backwards=True)),
    "gru_reset_after": _rnn(lambda: keras.layers.GRU(H, return_sequences=True, reset_after=True)),
    "gru_reset_before": _rnn(lambda: keras.layers.GRU(H, reset_after=False)),
    "simple_rnn": _rnn(lambda: keras.layers.SimpleRNN(H, return_sequences=True)),
    "bidirectional_lstm": _rnn(lambda: keras.layers.Bidirectional(keras.layers.LSTM(H, return_sequences=True))),
    "bidirectional_gru_last": _rnn(lambda: keras.layers.Bidirectional(keras.layers.GRU(H))),
    "lstm_two_layers": _rnn(lambda: [keras.layers.LSTM(H, return_sequences=True),
                                     keras.layers.LSTM(H, return_sequences=True)]),
    "lstm_hard_sigmoid": _rnn(lambda: keras.layers.LSTM(H, return_sequences=True,
                                                        recurrent_activation="hard_sigmoid")),
    "gru_relu": _rnn(lambda: keras.layers.GRU(H, return_sequences=True, activation="relu")),
    "rnn_lstm_cell": _rnn(lambda: keras.layers.RNN(keras.layers.LSTMCell(H), return_sequences=True)),
    "lstm_run_time_length": _rnn(lambda: keras.layers.LSTM(H, return_sequences=True), shape=(None, I)),
    "gru_last_run_time_length": _rnn(lambda: keras.layers.GRU(H), shape=(None, I)),
    "stacked_rnn_cells": _rnn(lambda: keras.layers.RNN(keras.layers.StackedRNNCells(
        [keras.layers.LSTMCell(H), keras.layers.GRUCell(H), keras.layers.SimpleRNNCell(H)]), return_sequences=True)),
    "lstm_masking_run_time_length": _rnn(lambda: [keras.layers.Masking(0.0), keras.layers.LSTM(H, return_sequences=True)],
                                         masked=True, shape=(None, I)),
    "lstm_masking": _rnn(lambda: [keras.layers.Masking(0.0), keras.layers.LSTM(H, return_sequences=True)], masked=True),
    "lstm_states": _rnn(lambda: keras.layers.LSTM(H, return_sequences=True, return_state=True)),
    "gru_no_bias": _rnn(lambda: keras.layers.GRU(H, return_sequences=True, use_bias=False)),
    "lstm_relu_no_bias": _rnn(lambda: keras.layers.LSTM(H, return_sequences=True, use_bias=False, activation="relu")),
    "bidirectional_lstm_sum": _rnn(lambda: keras.layers.Bidirectional(keras.layers.LSTM(H, return_sequences=True),
                                                                      merge_mode="sum")),
    "bidirectional_gru_unmerged": _rnn(lambda: keras.layers.Bidirectional(keras.layers.GRU(H, return_sequences=True),
                                                                          merge_mode=None)),
    # Dense before the LSTM on a run-time length: the frontend reads the loop's length from the Dense's input
    "dense_bidirectional_lstm_run_time_length": _rnn(lambda: [
        keras.layers.Dense(H, activation="relu"),
        keras.layers.Bidirectional(keras.layers.LSTM(H, return_sequences=True))], shape=(None, I)),
    "conv_lstm_2d": _rnn(lambda: keras.layers.ConvLSTM2D(3, (3, 3), padding="same", return_sequences=True),
                         shape=(T, 5, 5, 2)),
    "conv_lstm_2d_run_time_length": _rnn(lambda: keras.layers.ConvLSTM2D(3, (3, 3), padding="same",
                                                                         return_sequences=True),
                                         shape=(None, 5, 5, 2)),
})


def _encoder_decoder(batch: int | None) -> Built:
    """An encoder LSTM's final h and c (return_state) as a decoder LSTM's initial state, on a second input."""
    enc, dec = keras.Input((T, I), batch_size=batch, name="x"), keras.Input((T - 2, I), batch_size=batch, name="y")
    _, h, c = keras.layers.LSTM(H, return_state=True)(enc)
    model = keras.Model([enc, dec], keras.layers.LSTM(H, return_sequences=True)(dec, initial_state=[h, c]))
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((B, T, I)).astype(np.float32), rng.standard_normal((B, T - 2, I)).astype(np.float32)]
    return ov.convert_model(model), inputs, _flat(model(inputs))


CASES["lstm_seq2seq"] = lambda: _encoder_decoder(None)
CASES["lstm_seq2seq_static_batch"] = lambda: _encoder_decoder(B)  # OpenVINO's CPU plugin fails on its IR


def _embedded(layer_fn: Callable[[], Callable[[object], object]], vocab: int = 20,
              steps: int | None = T) -> Callable[[], Built]:
    """Token ids through Embedding(mask_zero=True) (id 0 pads: its steps are masked) into the layer, on a run-time
    batch (and length, `steps` None); the stored tokens pad row 0 at its end (a prefix mask) and mask a step inside
    row 1."""
    def build() -> Built:
        inp = keras.Input((steps,), dtype="int32", name="x")
        model = keras.Model(inp, layer_fn()(keras.layers.Embedding(vocab, I, mask_zero=True)(inp)))
        x = np.random.default_rng(0).integers(1, vocab, (B, T)).astype(np.int32)
        x[0, -2:] = 0
        x[1, 2] = 0
        return ov.convert_model(model), [x], _flat(model(x))
    return build


CASES.update({
    "lstm_embedding_mask_last": _embedded(lambda: keras.layers.LSTM(H)),
    "lstm_embedding_mask_seq": _embedded(lambda: keras.layers.LSTM(H, return_sequences=True)),
    "gru_embedding_mask_seq": _embedded(lambda: keras.layers.GRU(H, return_sequences=True)),
    "gru_embedding_mask_last": _embedded(lambda: keras.layers.GRU(H)),
    "lstm_embedding_mask_last_run_time_length": _embedded(lambda: keras.layers.LSTM(H), steps=None),
    # the mask goes on to the second layer, which reads the first's sequence output
    "lstm_gru_embedding_mask_last": _embedded(lambda: lambda e: keras.layers.GRU(H)(
        keras.layers.LSTM(H, return_sequences=True)(e))),
    "lstm_gru_embedding_mask_last_run_time_length": _embedded(lambda: lambda e: keras.layers.GRU(H)(
        keras.layers.LSTM(H, return_sequences=True)(e)), steps=None),
    # Bidirectional's sequence output is zero at masked steps (zero_output_for_mask); its backward layer reads the
    # flipped sequence (padding first)
    "bidirectional_lstm_gru_embedding_mask_last_run_time_length": _embedded(lambda: lambda e: keras.layers.GRU(H)(
        keras.layers.Bidirectional(keras.layers.LSTM(H, return_sequences=True))(e)), steps=None),
})


def _keras2(layer_fn: Callable[[object], list[object]], masked: bool = False,
            shape: tuple[int | None, ...] = (T, I)) -> Callable[[], Built]:
    """A Keras 2 (tf_keras) model saved as a SavedModel, as models of TensorFlow before Keras 3 were: its layers
    loop through `backend.rnn` (the sequence and the mask read as sliced Loop inputs, the last output a Result
    without back edge) rather than Keras 3's TensorLists. `layer_fn(layers)`: the layers to run one after another;
    weights random (Keras 2 starts biases at zero, which OpenVINO then drops); `masked` as in _rnn."""
    def build() -> Built:
        import tf_keras

        inp = tf_keras.Input(shape, name="x")
        out = inp
        for layer in layer_fn(tf_keras.layers):
            out = layer(out)
        model = tf_keras.Model(inp, out)
        rng = np.random.default_rng(0)
        for w in model.weights:
            w.assign(rng.uniform(-0.5, 0.5, w.shape).astype(np.float32))
        x = rng.standard_normal((B, *(T if d is None else d for d in shape))).astype(np.float32)
        if masked:
            x[0, -2:] = 0
            x[1, 2] = 0
        with tempfile.TemporaryDirectory() as d:
            model.save(d, save_format="tf")
            return ov.convert_model(d), [x], _flat(model(x))
    return build


CASES.update({
    "keras2_lstm_last_run_time_length": _keras2(lambda L: [L.LSTM(H)], shape=(None, I)),
    "keras2_gru_run_time_length": _keras2(lambda L: [L.GRU(H, return_sequences=True)], shape=(None, I)),
    "keras2_gru_reset_before": _keras2(lambda L: [L.GRU(H, reset_after=False)]),
    # hard_sigmoid, Keras' default recurrent activation before 2.3 (GRU: with reset_after=False), spelled out as
    # clip(x * 0.2 + 0.5, 0, 1)
    "keras2_lstm_hard_sigmoid": _keras2(lambda L: [L.LSTM(H, recurrent_activation="hard_sigmoid",
                                                          return_sequences=True)]),
    "keras2_gru_hard_sigmoid": _keras2(lambda L: [L.GRU(H, recurrent_activation="hard_sigmoid", reset_after=False)]),
    "keras2_lstm_masking_last": _keras2(lambda L: [L.Masking(0.0), L.LSTM(H)], masked=True),
    "keras2_lstm_masking_seq_run_time_length": _keras2(lambda L: [L.Masking(0.0), L.LSTM(H, return_sequences=True)],
                                                       masked=True, shape=(None, I)),
    "keras2_bidirectional_gru_masking_seq": _keras2(
        lambda L: [L.Masking(0.0), L.Bidirectional(L.GRU(H, return_sequences=True))], masked=True),
})


def _tflite(layer_fn: Callable[[], keras.layers.Layer], batch: int = B) -> Callable[[], Built]:
    """The Keras layer converted to TensorFlow Lite (its loop a WHILE over subgraphs, the output TensorList written
    by slicing and concatenating; at batch 1 the step computed on flattened vectors), then by OpenVINO's TensorFlow
    Lite frontend."""
    def build() -> Built:
        model = _keras(layer_fn, batch=batch)
        x = np.random.default_rng(0).standard_normal((batch, T, I)).astype(np.float32)
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "model.tflite"
            path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
            return ov.convert_model(str(path)), [x], _flat(model(x))
    return build


CASES.update({
    "lite_lstm_seq": _tflite(lambda: keras.layers.LSTM(H, return_sequences=True)),
    "lite_gru_seq": _tflite(lambda: keras.layers.GRU(H, return_sequences=True)),
    "lite_bidirectional_lstm": _tflite(lambda: keras.layers.Bidirectional(keras.layers.LSTM(H, return_sequences=True))),
    "lite_simple_rnn": _tflite(lambda: keras.layers.SimpleRNN(H, return_sequences=True)),
    "lite_lstm_seq_batch1": _tflite(lambda: keras.layers.LSTM(H, return_sequences=True), batch=1),
    "lite_gru_last_batch1": _tflite(lambda: keras.layers.GRU(H), batch=1),
})


def _tf_case(fn: Callable[..., object], shape: tuple[int, ...], dynamic: bool = False) -> Callable[[], Built]:
    def build() -> Built:
        spec = tf.TensorSpec([None] * len(shape) if dynamic else shape, tf.float32, name="x")
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        return _function(fn, spec), [x], _flat(fn(tf.constant(x)))
    return build


CASES.update({
    "while_loop": _tf_case(while_loop, (3, 4)),
    "scan": _tf_case(scan, (T, 3)),
    "map_fn": _tf_case(map_fn, (5, 4)),
    "for_loop": _tf_case(for_loop, (T, 3)),
    "for_loop_columns": _tf_case(for_loop_columns, (4, 5)),
    "split_dynamic": _tf_case(split_dynamic, (2, 7), dynamic=True),
    "while_tensor_array": _tf_case(while_tensor_array, (5, 4)),
})


def _v1_rnn(make_cell: Callable[[], object], bidirectional: bool = False, lengths: bool = False) -> Callable[[], Built]:
    """A TensorFlow 1 graph, tf.compat.v1.nn.dynamic_rnn (or bidirectional_dynamic_rnn, outputs concatenated) over a
    cell with control flow v1 (Enter/Exit/Merge/Switch, TensorArrayV3), frozen, as legacy models were saved; batch of
    run-time size. `lengths`: per-row sequence lengths, a second input (`sequence_length=`)."""
    def build() -> Built:
        v1 = tf.compat.v1
        v1.disable_control_flow_v2()
        try:
            graph = tf.Graph()
            with graph.as_default():
                v1.set_random_seed(0)
                x = v1.placeholder(tf.float32, (None, T, I), name="x")
                lens = v1.placeholder(tf.int32, (None,), name="lens") if lengths else None
                if bidirectional:
                    ys, _ = v1.nn.bidirectional_dynamic_rnn(make_cell(), make_cell(), x, dtype=tf.float32)
                    y = tf.concat(ys, -1)
                else:
                    y, _ = v1.nn.dynamic_rnn(make_cell(), x, sequence_length=lens, dtype=tf.float32)
                y = tf.identity(y, name="y")
                with v1.Session(graph=graph) as sess:
                    sess.run(v1.global_variables_initializer())
                    data = np.random.default_rng(0).standard_normal((B, T, I)).astype(np.float32)
                    inputs = [data] + ([np.array([T, 3], np.int32)[:B]] if lengths else [])
                    expected = sess.run(y, dict(zip([x, lens] if lengths else [x], inputs)))
                    frozen = v1.graph_util.convert_variables_to_constants(sess, graph.as_graph_def(), ["y"])
        finally:
            v1.enable_control_flow_v2()
        return ov.convert_model(frozen), inputs, [expected]
    return build


def _v1_cells() -> dict[str, Callable[[], object]]:
    """tf.compat.v1.nn.rnn_cell's classes (kept in tf_keras: with Keras 3, tf.compat.v1 no longer offers them)."""
    from tf_keras.src.layers.rnn import legacy_cells as cells

    return {
        "lstm_cell": lambda: cells.LSTMCell(H),
        "basic_lstm_cell": lambda: cells.BasicLSTMCell(H),
        "gru_cell": lambda: cells.GRUCell(H),
        "basic_rnn_cell": lambda: cells.BasicRNNCell(H),
        "multi_rnn_cell": lambda: cells.MultiRNNCell([cells.LSTMCell(H), cells.LSTMCell(H)]),
        "lstm_cell_projection": lambda: cells.LSTMCell(H, num_proj=5),
    }


CASES.update({f"v1_{name}": _v1_rnn(make) for name, make in _v1_cells().items()})
CASES["v1_bidirectional_lstm_cell"] = _v1_rnn(lambda: _v1_cells()["lstm_cell"](), bidirectional=True)
CASES["v1_lstm_cell_sequence_length"] = _v1_rnn(lambda: _v1_cells()["lstm_cell"](), lengths=True)
CASES["v1_gru_cell_sequence_length"] = _v1_rnn(lambda: _v1_cells()["gru_cell"](), lengths=True)


def main(names: list[str]) -> None:
    for name in names or list(CASES):
        keras.utils.set_random_seed(0)
        model, inputs, expected = CASES[name]()
        print(f"tf_{name}: {write_fixture(model, ROOT / f'tf_{name}', inputs, expected, 'TensorFlow')}")


if __name__ == "__main__":
    main(sys.argv[1:])
