"""Build IR fixtures with OpenVINO's PaddlePaddle frontend: LSTM layers and a small CRNN text recogniser.

Each case is exported with `paddle.jit.save` (a run-time batch, and a run-time length or width), read with
`openvino.convert_model` and saved with f32 weights to tests/fixtures/paddle_<name>/model.{xml,bin}, beside
inputs.npz (keyed by the IR's input names) and expected.npz (Paddle's outputs in the IR's output order). The tests
only read these files.

OpenVINO's Paddle frontend reads the `.pdmodel` programs of paddlepaddle 2.x (3.x writes PIR `.json`, which it does
not read) and converts Paddle's `rnn` op in LSTM mode only (GRU and SimpleRNN are refused).
Needs paddlepaddle 2.6 and openvino: `python scripts/make_paddle_fixtures.py [NAME ...]`.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import openvino as ov
import paddle
from fixture_io import write_fixture
from paddle import nn

ROOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
B, T, I, H = 2, 5, 4, 8


class Recurrent(nn.Layer):
    """An LSTM returning its sequence output and final states."""

    def __init__(self, layer: nn.Layer) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: paddle.Tensor) -> tuple[paddle.Tensor, ...]:
        y, (h, c) = self.layer(x)
        return y, h, c


class CRNN(nn.Layer):
    """Convolutions over a text line image, its height pooled away, a two-layer bidirectional LSTM over the width
    and per-column class probabilities (PaddleOCR's CRNN recogniser, small). `adaptive`: the height pooled by
    AdaptiveAvgPool2D((1, None)) instead of a max pooling."""

    def __init__(self, adaptive: bool = False) -> None:
        super().__init__()
        layers: list[nn.Layer] = []
        channels = [3, 4, 8]
        for i in range(2):
            layers += [nn.Conv2D(channels[i], channels[i + 1], 3, padding=1), nn.BatchNorm2D(channels[i + 1]),
                       nn.ReLU(), nn.MaxPool2D((2, 1), (2, 1))]
        self.cnn = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2D((1, None)) if adaptive else nn.MaxPool2D((2, 1), (2, 1))
        self.rnn = nn.LSTM(8, H, direction="bidirect", num_layers=2)
        self.fc = nn.Linear(2 * H, 10)

    def forward(self, x: paddle.Tensor) -> paddle.Tensor:
        f = paddle.squeeze(self.pool(self.cnn(x)), axis=2).transpose([0, 2, 1])  # [B, W, C]
        y, _ = self.rnn(f)
        return nn.functional.softmax(self.fc(y), axis=2)


def _rnn(layer: Callable[[], nn.Layer], shape: tuple[int, ...] = (B, T, I)) -> Callable[[], tuple[nn.Layer, list]]:
    def build() -> tuple[nn.Layer, list]:
        spec = paddle.static.InputSpec([None, None, shape[2]], "float32", name="x")
        return Recurrent(layer()), [(np.random.default_rng(0).standard_normal(shape).astype(np.float32), spec)]
    return build


def _crnn(adaptive: bool) -> Callable[[], tuple[nn.Layer, list]]:
    def build() -> tuple[nn.Layer, list]:
        spec = paddle.static.InputSpec([None, 3, 8, None], "float32", name="image")
        return CRNN(adaptive), [(np.random.default_rng(0).standard_normal((B, 3, 8, 12)).astype(np.float32), spec)]
    return build


CASES: dict[str, Callable[[], tuple[nn.Layer, list]]] = {
    "lstm": _rnn(lambda: nn.LSTM(I, H)),
    "lstm_time_major": _rnn(lambda: nn.LSTM(I, H, time_major=True), (T, B, I)),
    "lstm_bidirectional_2layers": _rnn(lambda: nn.LSTM(I, H, num_layers=2, direction="bidirect")),
    "crnn": _crnn(adaptive=False),
    "crnn_adaptive_pool": _crnn(adaptive=True),
}


def main(names: list[str]) -> None:
    for name in names or list(CASES):
        paddle.seed(0)
        layer, feeds = CASES[name]()
        layer.eval()
        inputs = [array for array, _ in feeds]
        outs = layer(*[paddle.to_tensor(a) for a in inputs])
        expected = [t.numpy() for t in (outs if isinstance(outs, (tuple, list)) else [outs])]
        with tempfile.TemporaryDirectory() as tmp:
            static = paddle.jit.to_static(layer, input_spec=[spec for _, spec in feeds], full_graph=True)
            paddle.jit.save(static, f"{tmp}/model")
            model = ov.convert_model(f"{tmp}/model.pdmodel")
        print(f"paddle_{name}: {write_fixture(model, ROOT / f'paddle_{name}', inputs, expected, 'Paddle')}")


if __name__ == "__main__":
    main(sys.argv[1:])
