#!/usr/bin/python3
"""Exports small PyTorch models to ONNX for the importer's tests (random weights, no downloads).

Each model is exported with PyTorch's default exporter settings and a dynamic batch
dimension (axis 0 of every input, "batch"), so the exported graphs carry the Shape ->
Gather -> Concat -> Reshape/Slice/Expand chains that PyTorch emits; the importer must fold
them once `--batch` fixes the batch. The weights go to external data that is deleted
afterwards: the importer needs the initializers' declared dims only.

The sizes are the ones the C++ test (tests/datasets/onnx_importer_test.cpp) computes its
FLOPs from by hand; change both together.

Needs Debian's python3-torch, python3-torchvision and python3-onnx. Exits 3 with a message
when one is missing.

Usage: export_torch_models.py OUT_DIR [--models NAME,...]
"""
import argparse
import os
import sys

# Sizes shared with the C++ test.
D_MODEL, HEADS, FFN = 64, 4, 128
SRC_LEN, TGT_LEN = 10, 6
RNN_IN, RNN_HIDDEN, RNN_STEPS = 32, 48, 20
VIT_IMAGE, VIT_PATCH, VIT_CLASSES = 32, 8, 10
EXAMPLE_BATCH = 2  # the traced batch; the exported batch stays dynamic


def build(name):
    """Returns (module, example inputs, input names, output names)."""
    import torch
    import torchvision

    nn = torch.nn
    b = EXAMPLE_BATCH
    if name == "transformer_encoder":
        layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, FFN, dropout=0.0, batch_first=True)
        model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        return model, (torch.randn(b, SRC_LEN, D_MODEL),), ["src"], ["out"]
    if name == "transformer_decoder":
        layer = nn.TransformerDecoderLayer(D_MODEL, HEADS, FFN, dropout=0.0, batch_first=True)

        class CausalDecoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.decoder = nn.TransformerDecoder(layer, num_layers=1)
                self.register_buffer(
                    "mask", nn.Transformer.generate_square_subsequent_mask(TGT_LEN))

            def forward(self, tgt, memory):
                return self.decoder(tgt, memory, tgt_mask=self.mask)

        inputs = (torch.randn(b, TGT_LEN, D_MODEL), torch.randn(b, SRC_LEN, D_MODEL))
        return CausalDecoder(), inputs, ["tgt", "memory"], ["out"]
    if name == "multihead_attention":
        # Cross-attention: query and key/value differ, so the projections are not packed.
        attn = nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True)
        inputs = (torch.randn(b, TGT_LEN, D_MODEL), torch.randn(b, SRC_LEN, D_MODEL),
                  torch.randn(b, SRC_LEN, D_MODEL))
        return attn, inputs, ["query", "key", "value"], ["out", "weights"]
    if name == "gru":
        model = nn.GRU(RNN_IN, RNN_HIDDEN, num_layers=2, batch_first=True)
        return model, (torch.randn(b, RNN_STEPS, RNN_IN),), ["x"], ["y", "h"]
    if name == "lstm":
        model = nn.LSTM(RNN_IN, RNN_HIDDEN, num_layers=1, batch_first=True, bidirectional=True)
        return model, (torch.randn(b, RNN_STEPS, RNN_IN),), ["x"], ["y", "h", "c"]
    if name == "vit":
        # torchvision's VisionTransformer (ViT-B/16's code) at a small size: its class token
        # is expanded to the batch from a Shape chain, its attention is nn.MultiheadAttention.
        model = torchvision.models.vision_transformer.VisionTransformer(
            image_size=VIT_IMAGE, patch_size=VIT_PATCH, num_layers=2, num_heads=HEADS,
            hidden_dim=D_MODEL, mlp_dim=FFN, num_classes=VIT_CLASSES)
        return model, (torch.randn(b, 3, VIT_IMAGE, VIT_IMAGE),), ["images"], ["logits"]
    if name == "resnet18":
        return torchvision.models.resnet18(weights=None), (torch.randn(1, 3, 224, 224),), \
            ["images"], ["logits"]
    if name == "mobilenet_v2":
        return torchvision.models.mobilenet_v2(weights=None), (torch.randn(1, 3, 224, 224),), \
            ["images"], ["logits"]
    raise ValueError(name)


MODELS = ("transformer_encoder", "transformer_decoder", "multihead_attention", "gru", "lstm",
          "vit", "resnet18", "mobilenet_v2")


def export(name, out_dir):
    import onnx
    import torch

    torch.manual_seed(0)
    model, inputs, input_names, output_names = build(name)
    model.eval()
    # Distinct random values, as in a trained model: the exporter merges initializers with
    # equal contents (fresh zero biases, unit LayerNorm weights) into one.
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    path = os.path.join(out_dir, f"{name}.onnx")
    tmp = path + ".full"
    dynamic = {n: {0: "batch"} for n in input_names}
    # Not under torch.no_grad(): in eval mode without autograd the Transformer layers take
    # a fused fast path (aten::_transformer_encoder_layer_fwd) that the exporter rejects.
    torch.onnx.export(model, inputs, tmp, input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic)
    proto = onnx.load(tmp)
    os.remove(tmp)
    data = f"{name}.onnx.data"
    onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data, size_threshold=1024)
    os.remove(os.path.join(out_dir, data))
    return path


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args(argv)
    try:
        import onnx  # noqa: F401
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        print(f"export_torch_models.py: {e} (install python3-torch, python3-torchvision and "
              "python3-onnx)", file=sys.stderr)
        return 3
    import warnings
    warnings.filterwarnings("ignore")  # the exporter's tracer warnings are expected
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.models.split(","):
        if name not in MODELS:
            print(f"export_torch_models.py: unknown model '{name}' (valid: {', '.join(MODELS)})",
                  file=sys.stderr)
            return 2
        print(export(name, args.out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
