#!/usr/bin/python3
"""Exports real models to ONNX for `gopt graph import` (random weights, nothing downloaded).

Models: torchvision's ResNet-50 and Inception-v3, and a small Transformer encoder built
from torch.nn. Weights are saved as ONNX external data (one file per model next to it), so
the import path that needs only the initializers' declared dims is exercised; the .onnx
files stay small. The CNNs' batch dimension is exported as dynamic ("batch"), so import
them with `--batch N`; the transformer is exported with fixed shapes (batch 1).

Needs Debian's python3-torch, python3-torchvision and python3-onnx (scripts/setup.sh).

Usage: datasets/export_onnx_models.py OUT_DIR [--models resnet50,inception_v3,transformer]
"""
import argparse
import os
import sys

MODELS = ("resnet50", "inception_v3", "transformer")


def small_transformer_class():
    """A 2-layer post-norm Transformer encoder (d_model 256, 4 heads, FFN 1024, 64 tokens).

    Written out instead of torch.nn.TransformerEncoder so that its reshapes use constant
    sizes: the exported graph then has no Shape/Gather arithmetic that ONNX shape inference
    cannot follow.
    """
    import torch

    class Layer(torch.nn.Module):
        def __init__(self, d=256, heads=4, ff=1024, tokens=64):
            super().__init__()
            self.d, self.heads, self.tokens = d, heads, tokens
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.out = torch.nn.Linear(d, d)
            self.norm1 = torch.nn.LayerNorm(d)
            self.ff1 = torch.nn.Linear(d, ff)
            self.ff2 = torch.nn.Linear(ff, d)
            self.norm2 = torch.nn.LayerNorm(d)

        def forward(self, x):  # x: [1, tokens, d]
            t, h, dh = self.tokens, self.heads, self.d // self.heads
            q, k, v = self.qkv(x).reshape(1, t, 3, h, dh).permute(2, 0, 3, 1, 4).unbind(0)
            att = torch.softmax(q @ k.transpose(-1, -2) / dh ** 0.5, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(1, t, self.d)
            x = self.norm1(x + self.out(y))
            return self.norm2(x + self.ff2(torch.relu(self.ff1(x))))

    class SmallTransformer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.Sequential(Layer(), Layer())

        def forward(self, x):
            return self.layers(x)

    return SmallTransformer


def build(name):
    import torch
    import torchvision

    if name == "resnet50":
        return torchvision.models.resnet50(weights=None), torch.randn(1, 3, 224, 224)
    if name == "inception_v3":
        model = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
        return model, torch.randn(1, 3, 299, 299)
    if name == "transformer":
        return small_transformer_class()(), torch.randn(1, 64, 256)
    raise ValueError(f"unknown model '{name}' (valid: {', '.join(MODELS)})")


def export(name, out_dir):
    import onnx
    import torch

    model, example = build(name)
    model.eval()
    path = os.path.join(out_dir, f"{name}.onnx")
    tmp = path + ".tmp"
    # The transformer's attention reshapes compute shapes from Shape ops that ONNX shape
    # inference cannot propagate through when the batch is dynamic: export it with fixed
    # shapes (batch 1); the CNNs keep a dynamic batch for `gopt graph import --batch N`.
    dynamic = None if name == "transformer" else {"input": {0: "batch"}, "output": {0: "batch"}}
    torch.onnx.export(model, example, tmp, opset_version=13, input_names=["input"],
                      output_names=["output"], dynamic_axes=dynamic)
    proto = onnx.load(tmp)
    os.remove(tmp)
    onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=f"{name}.onnx.data", size_threshold=1024)
    return path


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated subset of {', '.join(MODELS)}")
    args = parser.parse_args(argv)
    try:
        import onnx  # noqa: F401
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        print(f"export_onnx_models.py: {e}; install python3-torch, python3-torchvision and "
              "python3-onnx (scripts/setup.sh)", file=sys.stderr)
        return 3
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.models.split(","):
        if name not in MODELS:
            print(f"export_onnx_models.py: unknown model '{name}' (valid: {', '.join(MODELS)})",
                  file=sys.stderr)
            return 2
        print(export(name, args.out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
