"""Build IR fixtures with OpenVINO's PyTorch frontend: recurrent layers and scripted loops.

Each case is converted with `openvino.convert_model` and saved with f32 weights to
tests/fixtures/torch_<name>/model.{xml,bin}, beside inputs.npz (keyed by the IR's input names) and expected.npz
(PyTorch's outputs in the IR's output order). The tests only read these files.

Needs torch and openvino: `python scripts/make_torch_fixtures.py [NAME ...]`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import openvino as ov
import torch
from fixture_io import write_fixture
from torch import nn

ROOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
B, T, I, H = 2, 5, 4, 8


class Recurrent(nn.Module):
    """A recurrent layer returning its sequence output and final state(s)."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y, state = self.layer(x)
        return (y, *state) if isinstance(state, tuple) else (y, state)


class RecurrentFromState(nn.Module):
    """A recurrent layer fed its initial state as a second input, returning its sequence output and final state."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor, h0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.layer(x, h0)


class LSTMFromStates(nn.Module):
    """An LSTM fed its initial h and c as inputs, returning its sequence output and final h and c."""

    def __init__(self, layer: nn.LSTM) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y, (h, c) = self.layer(x, (h0, c0))
        return y, h, c


class PackedLSTM(nn.Module):
    """An LSTM over a padded batch packed by its lengths (pack_padded_sequence, unsorted), its sequence padded back:
    the lengths are a second input."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.LSTM(I, H, batch_first=True)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, ...]:
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        y, (h, c) = self.layer(packed)
        return nn.utils.rnn.pad_packed_sequence(y, batch_first=True)[0], h, c


class WhileLoop(nn.Module):
    """A scripted data-dependent loop: doubles x until its norm passes a limit, counting the steps."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        steps = torch.zeros(1, dtype=torch.int64)
        while bool(x.abs().sum() < 40.0):
            x = x * 2.0 + 0.25
            steps = steps + 1
        return x, steps


class ForLoop(nn.Module):
    """A scripted loop over the time steps of x, reading x[:, t] and accumulating a state and per-step outputs."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.zeros_like(x[:, 0])
        ys = []
        for t in range(x.shape[1]):
            h = torch.tanh(h * 0.5 + x[:, t])
            ys.append(h * (t + 1))
        return torch.stack(ys, 1), h


class CellsUnrolled(nn.Module):
    """Two stacked LSTMCells and a Linear in a Python loop over x[:, t], unrolled by tracing: every state is read
    along several paths, and each step selects its input with a scalar index on dynamic shapes."""

    def __init__(self) -> None:
        super().__init__()
        self.first, self.second, self.out = nn.LSTMCell(I, H), nn.LSTMCell(H, H), nn.Linear(H, 3)

    def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h2, c2 = torch.zeros_like(h), torch.zeros_like(c)
        ys = []
        for t in range(x.shape[1]):
            h, c = self.first(x[:, t], (h, c))
            h2, c2 = self.second(h, (h2, c2))
            ys.append(self.out(h2))
        return torch.stack(ys, 1), h2, c2


def _rnn(make: Callable[[], nn.Module], shape: tuple[int, ...] = (B, T, I)) -> Callable[[], tuple[nn.Module, tuple]]:
    def build() -> tuple[nn.Module, tuple]:
        return Recurrent(make()).eval(), (torch.randn(*shape),)
    return build


def _scripted(module: nn.Module, shape: tuple[int, ...]) -> Callable[[], tuple[nn.Module, tuple]]:
    def build() -> tuple[nn.Module, tuple]:
        return torch.jit.script(module.eval()), (torch.randn(*shape),)
    return build


CASES: dict[str, Callable[[], tuple[nn.Module, tuple]]] = {
    "lstm": _rnn(lambda: nn.LSTM(I, H, batch_first=True)),
    "lstm_bidirectional_2layers": _rnn(lambda: nn.LSTM(I, H, num_layers=2, bidirectional=True, batch_first=True)),
    "gru": _rnn(lambda: nn.GRU(I, H, batch_first=True)),
    "gru_time_major": _rnn(lambda: nn.GRU(I, H), (T, B, I)),
    "gru_bidirectional": _rnn(lambda: nn.GRU(I, H, bidirectional=True, batch_first=True)),
    "rnn_relu_2layers": _rnn(lambda: nn.RNN(I, H, num_layers=2, nonlinearity="relu", batch_first=True)),
    "gru_bidirectional_2layers_h0": lambda: (
        RecurrentFromState(nn.GRU(I, H, num_layers=2, bidirectional=True, batch_first=True)).eval(),
        (torch.randn(B, T, I), torch.randn(4, B, H))),
    "lstm_time_major_2layers_states": lambda: (
        LSTMFromStates(nn.LSTM(I, H, num_layers=2, bidirectional=True)).eval(),
        (torch.randn(T, B, I), torch.randn(4, B, H), torch.randn(4, B, H))),
    "rnn_3layers_no_bias": _rnn(lambda: nn.RNN(I, H, num_layers=3, bias=False, batch_first=True)),
    "rnn_bidirectional_2layers": _rnn(lambda: nn.RNN(I, H, num_layers=2, bidirectional=True, batch_first=True)),
    "lstm_cells_unrolled": lambda: (CellsUnrolled().eval(), (torch.randn(B, 8, I), torch.randn(B, H), torch.randn(B, H))),
    "packed_lstm": lambda: (PackedLSTM().eval(), (torch.randn(3, T, I), torch.tensor([T, 2, 4]))),
    "while_loop": _scripted(WhileLoop(), (2, 3)),
    "for_loop": _scripted(ForLoop(), (B, T, 3)),
}


def main(names: list[str]) -> None:
    for name in names or list(CASES):
        torch.manual_seed(0)
        module, example = CASES[name]()
        with torch.no_grad():
            expected = [t.numpy() for t in module(*example)]
        model = ov.convert_model(module, example_input=example)
        inputs = [t.numpy() for t in example]
        print(f"torch_{name}: {write_fixture(model, ROOT / f'torch_{name}', inputs, expected, 'PyTorch')}")


if __name__ == "__main__":
    main(sys.argv[1:])
