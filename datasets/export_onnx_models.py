#!/usr/bin/python3
"""Exports real models to ONNX for `gopt graph import` (random weights, nothing downloaded).

Models: torchvision's ResNet-50 and Inception-v3, and a 2-layer torch.nn.TransformerEncoder.
Weights are saved as ONNX external data (one file per model next to it), so the import path
that needs only the initializers' declared dims is exercised; the .onnx files stay small.
The batch dimension is exported as dynamic ("batch"): import them with `--batch N`.

Needs Debian's python3-torch, python3-torchvision and python3-onnx (scripts/setup.sh).

Usage: datasets/export_onnx_models.py OUT_DIR [--models resnet50,inception_v3,transformer]
"""
import argparse
import os
import sys

MODELS = ("resnet50", "inception_v3", "transformer")


def transformer_encoder():
    """torch.nn.TransformerEncoder: 2 post-norm layers, d_model 256, 4 heads, FFN 1024.

    Its attention computes Reshape and Slice arguments from Shape -> Gather -> Concat
    chains; `gopt graph import` folds them once --batch fixes the batch.
    """
    import torch

    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


def build(name):
    import torch
    import torchvision

    if name == "resnet50":
        return torchvision.models.resnet50(weights=None), torch.randn(1, 3, 224, 224)
    if name == "inception_v3":
        model = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
        return model, torch.randn(1, 3, 299, 299)
    if name == "transformer":
        return transformer_encoder(), torch.randn(1, 64, 256)
    raise ValueError(f"unknown model '{name}' (valid: {', '.join(MODELS)})")


def export(name, out_dir):
    import onnx
    import torch

    model, example = build(name)
    model.eval()
    path = os.path.join(out_dir, f"{name}.onnx")
    tmp = path + ".tmp"
    # A dynamic batch for `gopt graph import --batch N`. Not under torch.no_grad(): without
    # autograd the Transformer layers take a fused path the exporter cannot export.
    dynamic = {"input": {0: "batch"}, "output": {0: "batch"}}
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
