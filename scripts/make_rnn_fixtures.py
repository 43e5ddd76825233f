"""Regenerate tests/fixtures/rnn_keras_*: Keras recurrent layers converted by OpenVINO's TensorFlow frontend.

The frontend writes each layer as a Loop with two counters, a condition `counter + 1 < steps`, a Gather of the
time-major sequence at the counter, the cell spelled out with MatMul/Split/StridedSlice/activations, and a TensorList
buffer written row by row by ScatterUpdate. Weights are random (biases too: zero biases are folded away by the
frontend). Needs tensorflow and openvino: python scripts/make_rnn_fixtures.py
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import openvino as ov
import tensorflow as tf

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
STEPS, INPUTS, HIDDEN = 5, 4, 8


def layers() -> dict[str, tf.keras.layers.Layer]:
    return {
        "rnn_keras_lstm": tf.keras.layers.LSTM(HIDDEN, return_sequences=True),
        "rnn_keras_gru": tf.keras.layers.GRU(HIDDEN, return_sequences=True),  # reset_after=True
        "rnn_keras_gru_reset_before": tf.keras.layers.GRU(HIDDEN, return_sequences=True, reset_after=False),
        "rnn_keras_simple_rnn": tf.keras.layers.SimpleRNN(HIDDEN, return_sequences=True),
    }


def main() -> None:
    rng = np.random.default_rng(0)
    for name, layer in layers().items():
        inp = tf.keras.Input((STEPS, INPUTS))
        model = tf.keras.Model(inp, layer(inp))
        layer.set_weights([(rng.standard_normal(w.shape) * 0.5).astype(np.float32) for w in layer.get_weights()])
        d = OUT / name
        d.mkdir(parents=True, exist_ok=True)
        ov.save_model(ov.convert_model(model), str(d / "model.xml"), compress_to_fp16=False)
        print(f"wrote {d / 'model.xml'}")


if __name__ == "__main__":
    main()
