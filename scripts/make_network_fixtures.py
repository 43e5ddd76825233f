"""Build whole-network IR fixtures with OpenVINO's PyTorch frontend: the kinds of networks users convert.

- shufflenet: a ShuffleNetV2-style classifier (channel split, channel shuffle, depthwise convolutions), narrow,
  with the channel shuffle fused into ShuffleChannels by OpenVINO's offline transformations;
- crnn_ocr: a text recogniser in the CRNN style with a MobileNetV3-style backbone (Hardswish, squeeze-excitation
  with Hardsigmoid), a bidirectional LSTM over the width and per-column class scores;
- transformer_ocr: a convolutional stem and a transformer encoder whose attention is
  torch.nn.functional.scaled_dot_product_attention (OpenVINO's ScaledDotProductAttention), with a causal decoder
  layer over embedded tokens;
- attention_kv: nn.MultiheadAttention with keys and values of their own widths, on run-time batch and lengths
  (the keys' and values' lengths must be equal, which the IR does not say).

Weights are random (seeded) and small; each model is saved twice where it matters: with f32 weights, and with the
f16-compressed weights `openvino.save_model` writes by default (`*_f16`). Files go to tests/fixtures/net_<name>/:
model.xml, model.bin, inputs.npz (keyed by the IR's input names) and expected.npz (PyTorch's outputs in the IR's
output order). The tests only read these files.

Needs torch and openvino: `python scripts/make_network_fixtures.py [NAME ...]`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import openvino as ov
import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


# ---- ShuffleNetV2 (narrow)
def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    b, c, h, w = x.shape
    return x.view(b, groups, c // groups, h, w).transpose(1, 2).contiguous().view(b, c, h, w)


class ShuffleUnit(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        branch = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin),
                nn.Conv2d(cin, branch, 1, bias=False), nn.BatchNorm2d(branch), nn.ReLU(inplace=True))
        self.branch2 = nn.Sequential(
            nn.Conv2d(cin if stride > 1 else branch, branch, 1, bias=False), nn.BatchNorm2d(branch),
            nn.ReLU(inplace=True),
            nn.Conv2d(branch, branch, 3, stride, 1, groups=branch, bias=False), nn.BatchNorm2d(branch),
            nn.Conv2d(branch, branch, 1, bias=False), nn.BatchNorm2d(branch), nn.ReLU(inplace=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNet(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        stages, cin = [], 8
        for cout, repeats in ((16, 2), (32, 2)):
            stages.append(ShuffleUnit(cin, cout, 2))
            stages += [ShuffleUnit(cout, cout, 1) for _ in range(repeats - 1)]
            cin = cout
        self.stages = nn.Sequential(*stages)
        self.head = nn.Sequential(nn.Conv2d(cin, 64, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True))
        self.fc = nn.Linear(64, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.head(self.stages(self.stem(x)))
        return self.fc(x.mean([2, 3]))


# ---- CRNN text recogniser with a MobileNetV3-style backbone
class SqueezeExcite(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, c // 4, 1), nn.Conv2d(c // 4, c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


class MobileBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: tuple[int, int]) -> None:
        super().__init__()
        mid = cin * 2
        self.expand = nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid),
                                nn.Hardswish())
        self.se = SqueezeExcite(mid)
        self.project = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = cin == cout and stride == (1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.project(self.se(self.dw(self.expand(x))))
        return x + y if self.residual else y


class CRNN(nn.Module):
    def __init__(self, classes: int = 12, hidden: int = 16) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.Hardswish())
        self.blocks = nn.Sequential(MobileBlock(8, 8, (1, 1)), MobileBlock(8, 16, (2, 1)), MobileBlock(16, 16, (2, 1)))
        self.rnn = nn.LSTM(16, hidden, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.blocks(self.stem(x))          # [B, C, H', W']
        f = F.adaptive_avg_pool2d(f, (1, None)).squeeze(2).permute(0, 2, 1)  # [B, W', C]
        y, _ = self.rnn(f)
        return self.fc(y).log_softmax(-1)      # [B, W', classes] for CTC decoding


# ---- transformer text recogniser (attention through scaled_dot_product_attention)
class Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: torch.Tensor, mem: torch.Tensor, causal: bool) -> torch.Tensor:
        b, n, d = x.shape
        split = lambda t: t.view(b, -1, self.heads, d // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(mem)), split(self.v(mem)),
                                           is_causal=causal)
        return self.o(y.transpose(1, 2).reshape(b, n, d))


class Layer(nn.Module):
    def __init__(self, d: int, heads: int, cross: bool) -> None:
        super().__init__()
        self.self_attn = Attention(d, heads)
        self.cross_attn = Attention(d, heads) if cross else None
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(3))
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x: torch.Tensor, mem: torch.Tensor | None = None) -> torch.Tensor:
        h = self.norms[0](x)
        x = x + self.self_attn(h, h, causal=mem is not None)
        if self.cross_attn is not None and mem is not None:
            x = x + self.cross_attn(self.norms[1](x), mem, causal=False)
        return x + self.ff(self.norms[2](x))


class TransformerOCR(nn.Module):
    def __init__(self, d: int = 16, heads: int = 2, vocab: int = 11) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, d, 3, 2, 1), nn.ReLU(), nn.Conv2d(d, d, 3, (4, 1), 1))
        self.encoder = Layer(d, heads, cross=False)
        self.embed = nn.Embedding(vocab, d)
        self.decoder = Layer(d, heads, cross=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, image: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        f = self.stem(image).flatten(2).transpose(1, 2)  # [B, H'W', d]
        mem = self.encoder(f)
        return self.out(self.decoder(self.embed(tokens), mem))


class AttentionKV(nn.Module):
    """Multi-head attention over keys and values of their own widths (kdim/vdim), batch first."""

    def __init__(self, d: int = 24, heads: int = 2, kdim: int = 16, vdim: int = 20) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, kdim=kdim, vdim=vdim, batch_first=True)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.attn(q, k, v, need_weights=False)[0]


CASES: dict[str, Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]] = {
    "shufflenet": lambda: (ShuffleNet(), (torch.randn(1, 3, 32, 32),)),
    "crnn_ocr": lambda: (CRNN(), (torch.randn(2, 1, 16, 40),)),
    "transformer_ocr": lambda: (TransformerOCR(), (torch.randn(1, 1, 16, 24), torch.randint(0, 11, (1, 5)))),
    "attention_kv": lambda: (AttentionKV(), (torch.randn(2, 5, 24), torch.randn(2, 7, 16), torch.randn(2, 7, 20))),
}
COMPRESSED = {"shufflenet", "crnn_ocr"}  # also saved with f16-compressed weights
# Exported to ONNX first and converted by OpenVINO's ONNX frontend (torch's hardsigmoid becomes ONNX HardSigmoid, as
# in OCR models distributed as ONNX), saved as `<name>_onnx`.
VIA_ONNX = {"crnn_ocr", "attention_kv"}
# ONNX inputs' dynamic axes (named alike where they must be equal; the IR keeps only that they are dynamic)
DYNAMIC_AXES = {"attention_kv": {"input0": {0: "B", 1: "L"}, "input1": {0: "B", 1: "S"}, "input2": {0: "B", 1: "S"}}}
# Converted for a static input shape and passed through OpenVINO's offline (MOC) transformations, as Model Optimizer
# did: they fuse ShuffleNet's reshape-transpose-reshape into ShuffleChannels.
OFFLINE = {"shufflenet"}


def _randomise_norms(model: nn.Module) -> None:
    """Non-trivial BatchNorm statistics, so folded normalisations are exercised."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)


def build(name: str) -> None:
    torch.manual_seed(0)
    model, args = CASES[name]()
    _randomise_norms(model)
    model.eval()
    with torch.no_grad():
        outs = model(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    _save(name, model, args, outs)
    if name in VIA_ONNX:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.onnx"
            torch.onnx.export(model, args, str(path), opset_version=17, dynamo=False,
                              input_names=[f"input{i}" for i in range(len(args))],
                              dynamic_axes=DYNAMIC_AXES.get(name))
            _write(f"{name}_onnx", ov.convert_model(str(path)), args, outs, compress=False)


def _save(name: str, model: nn.Module, args: tuple[torch.Tensor, ...], outs: tuple[torch.Tensor, ...]) -> None:
    if name in OFFLINE:
        from openvino._offline_transformations import apply_moc_transformations

        ov_model = ov.convert_model(model, example_input=args, input=[tuple(a.shape) for a in args])
        apply_moc_transformations(ov_model, cf=True)
    else:
        ov_model = ov.convert_model(model, example_input=args)
    _write(name, ov_model, args, outs, compress=False)
    if name in COMPRESSED:
        _write(f"{name}_f16", ov_model, args, outs, compress=True)


def _write(name: str, ov_model: ov.Model, args: tuple[torch.Tensor, ...], outs: tuple[torch.Tensor, ...],
           compress: bool) -> None:
    d = ROOT / f"net_{name}"
    d.mkdir(parents=True, exist_ok=True)
    ov.save_model(ov_model, str(d / "model.xml"), compress_to_fp16=compress)
    names = [p.get_any_name() for p in ov_model.inputs]
    np.savez(d / "inputs.npz", **{n: a.numpy() for n, a in zip(names, args)})
    np.savez(d / "expected.npz", *[o.numpy() for o in outs])
    types = sorted({op.get_type_name() for op in ov_model.get_ordered_ops()})
    print(f"{d.name}: {', '.join(types)}")


def main() -> None:
    for name in sys.argv[1:] or list(CASES):
        build(name)


if __name__ == "__main__":
    main()
