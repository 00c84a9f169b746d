#!/usr/bin/env python3
"""tools/peers/quantize_vs_llama.py: `roofline quantize` against llama.cpp's own `llama-quantize --pure`
on the same F32 models (dev only).

Inputs: a tiny random Llama-architecture F32 model written here with the gguf package (two
layers, 256-wide, an untied output head), and the embedded Gemma 3 270M Q4_K_M file dequantized
to F32 by `roofline quantize --type F32 --force`. Each is quantized to every --types entry
(default Q8_0 and Q4_0, the deterministic formats: roofline's encoders are llama.cpp's reference
ones) by both tools; the outputs are compared tensor by tensor with the gguf reader: type and
bytes, counted per output type (identical / different), and every weight matrix must be in the
target type. Metadata: the keys and values of both outputs are compared too.

With --kquants (e.g. Q4_K,Q5_K,Q6_K), those types too: roofline's K-quant encoders are
round-to-nearest, llama.cpp's search their scales, so only the tensor types must agree; the RMS
error of each tool's output against the F32 input (relative to the RMS of the weights) is
printed side by side.

Then roofline's outputs of the Gemma model are loaded by llama.cpp (`llama-bench -m OUT -p 0
-n 4`, which reads every weight) and by roofline (`roofline run -m OUT -p Hello -n 8`).

Exit status 0 when every tensor is identical and every load works, 1 otherwise, 77 (skip) when
llama-quantize is absent (build it: tools/peers/build_llama_cpp.sh) or the gguf package is missing.

Usage: quantize_vs_llama.py [--roofline build/roofline] [--llama-bin DIR] [--model PATH]
                            [--types Q8_0,Q4_0] [--kquants Q4_K,...] [--no-gemma] [--no-load] [--work DIR] [--keep]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from benchlib import MODEL, ROOFLINE, eprint, fmt_table  # noqa: E402

SKIP = 77


def tiny_f32_model(path):
    """A 2-layer Llama F32 model with random weights and a 512-token vocabulary."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(1234)
    n_vocab, n_embd, n_ff, n_head, n_head_kv, n_layer = 512, 256, 512, 4, 2, 2
    head_dim = n_embd // n_head
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tiny-f32")
    w.add_context_length(256)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)
    w.add_tokenizer_model("llama")
    toks = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    toks += ["t%d" % i for i in range(n_vocab - len(toks))]
    w.add_token_list(toks)
    w.add_token_scores([0.0] * n_vocab)
    w.add_token_types([2, 3, 3] + [6] * 256 + [1] * (n_vocab - 259))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def t(name, *shape, scale=0.05, offset=0.0):  # shape as numpy (rows, cols)
        w.add_tensor(name, (offset + scale * rng.standard_normal(shape)).astype(np.float32))

    t("token_embd.weight", n_vocab, n_embd, scale=0.5)
    for i in range(n_layer):
        p = "blk.%d." % i
        t(p + "attn_norm.weight", n_embd, scale=0.1, offset=1.0)
        t(p + "attn_q.weight", n_head * head_dim, n_embd)
        t(p + "attn_k.weight", n_head_kv * head_dim, n_embd)
        t(p + "attn_v.weight", n_head_kv * head_dim, n_embd)
        t(p + "attn_output.weight", n_embd, n_head * head_dim)
        t(p + "ffn_norm.weight", n_embd, scale=0.1, offset=1.0)
        t(p + "ffn_gate.weight", n_ff, n_embd)
        t(p + "ffn_up.weight", n_ff, n_embd)
        t(p + "ffn_down.weight", n_embd, n_ff)
    t("output_norm.weight", n_embd, scale=0.1, offset=1.0)
    t("output.weight", n_vocab, n_embd)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def run(cmd, env=None, log=None):
    """Runs cmd at the lowest priority; returns (exit status, combined output)."""
    p = subprocess.run(["nice", "-n", "19"] + cmd, capture_output=True, text=True, env=env)
    out = p.stdout + p.stderr
    if log:
        with open(log, "w") as f:
            f.write(" ".join(cmd) + "\n" + out)
    return p.returncode, out


def llama_env(bin_dir):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = bin_dir + ":" + env.get("LD_LIBRARY_PATH", "")
    return env


def kv_value(f):
    """A comparable value of a GGUFReader field."""
    import gguf
    if f.types and f.types[0] == gguf.GGUFValueType.ARRAY:
        return ("array", len(f.data), bytes(memoryview(f.parts[-1]).cast("B")) if len(f.data) < 8 else
                tuple(bytes(memoryview(f.parts[i]).cast("B")) for i in f.data[:4]) + (len(f.data),))
    return tuple(bytes(memoryview(f.parts[i]).cast("B")) for i in f.data)


BLOCK = {"Q4_K": 256, "Q5_K": 256, "Q6_K": 256, "Q8_0": 32, "Q4_0": 32, "Q4_1": 32, "Q5_0": 32,
         "Q5_1": 32, "F16": 1, "BF16": 1, "F32": 1}
FALLBACK = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}


def expected_type(target, ne0):
    """llama.cpp's type for a row of ne0 values: the target, or its fallback (then F16)."""
    if ne0 % BLOCK[target] == 0:
        return target
    t = FALLBACK.get(target, target)
    return t if ne0 % BLOCK[t] == 0 else "F16"


def compare(rf_path, ll_path, target, quantized_names):
    """Per output type: [identical, different] tensor counts; plus problems found."""
    import gguf
    import numpy as np

    a, b = gguf.GGUFReader(rf_path), gguf.GGUFReader(ll_path)
    ta = {t.name: t for t in a.tensors}
    tb = {t.name: t for t in b.tensors}
    problems = []
    if set(ta) != set(tb):
        problems.append("tensor names differ: only roofline %s, only llama.cpp %s"
                        % (sorted(set(ta) - set(tb))[:5], sorted(set(tb) - set(ta))[:5]))
    counts = {}
    for name in sorted(set(ta) & set(tb)):
        x, y = ta[name], tb[name]
        tx, ty = x.tensor_type.name, y.tensor_type.name
        want = expected_type(target, int(x.shape[0]))  # gguf's shape: ne0 first
        if name in quantized_names and tx != want:
            problems.append("%s is %s in roofline's output, not %s" % (name, tx, want))
        if name in quantized_names and ty != want:
            problems.append("%s is %s in llama.cpp's output, not %s" % (name, ty, want))
        bx = np.asarray(x.data).view(np.uint8).reshape(-1)
        by = np.asarray(y.data).view(np.uint8).reshape(-1)
        same = tx == ty and list(x.shape) == list(y.shape) and bx.size == by.size and \
            bool(np.array_equal(bx, by))
        c = counts.setdefault(tx if tx == ty else "%s/%s" % (tx, ty), [0, 0])
        c[0 if same else 1] += 1
        if not same:
            nd = int(np.count_nonzero(bx != by)) if bx.size == by.size else -1
            problems.append("%s: %s vs %s, %d of %d bytes differ" % (name, tx, ty, nd, bx.size))
    fa = {k: kv_value(f) for k, f in a.fields.items() if not k.startswith("GGUF.")}
    fb = {k: kv_value(f) for k, f in b.fields.items() if not k.startswith("GGUF.")}
    for k in sorted(set(fa) | set(fb)):
        if fa.get(k) != fb.get(k):
            problems.append("metadata %s: %s in roofline's, %s in llama.cpp's"
                            % (k, "present" if k in fa else "absent",
                               "present" if k in fb else "absent")
                            if (k in fa) != (k in fb) else "metadata %s differs" % k)
    return counts, problems


def rms_errors(ref_path, paths, names):
    """RMS of (decoded - F32) over the tensors in names, relative to the RMS of the F32 values,
    for each file in paths."""
    import gguf
    import numpy as np
    from gguf.quants import dequantize

    ref = {t.name: t for t in gguf.GGUFReader(ref_path).tensors}
    out = []
    for p in paths:
        err2 = val2 = 0.0
        for t in gguf.GGUFReader(p).tensors:
            if t.name not in names:
                continue
            x = np.asarray(ref[t.name].data, dtype=np.float32).reshape(-1)
            y = dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32).reshape(-1)
            err2 += float(np.sum((x - y).astype(np.float64) ** 2))
            val2 += float(np.sum(x.astype(np.float64) ** 2))
        out.append((err2 / val2) ** 0.5 if val2 else 0.0)
    return out


def weight_names(path):
    """Tensors llama.cpp quantizes (2-D, named *weight, not a norm): those of the F32 input."""
    import gguf
    r = gguf.GGUFReader(path)
    return {t.name for t in r.tensors
            if len([d for d in t.shape if d > 1]) >= 2 and t.name.endswith("weight")
            and "_norm.weight" not in t.name}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--roofline", default=ROOFLINE)
    ap.add_argument("--llama-bin", default=os.path.join(ROOT, ".peers", "llama.cpp-build", "bin"))
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--types", default="Q8_0,Q4_0")
    ap.add_argument("--kquants", default="",
                    help="also these non-deterministic types (e.g. Q4_K,Q5_K,Q6_K): bytes are not "
                    "expected to match; their RMS error against the F32 input is compared")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-gemma", action="store_true", help="only the tiny model")
    ap.add_argument("--no-load", action="store_true", help="skip the llama-bench / run loads")
    ap.add_argument("--work", default=None, help="folder for the files (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--reuse", action="store_true",
                    help="with --work: reuse outputs already there instead of quantizing again")
    args = ap.parse_args()

    quant = os.path.join(args.llama_bin, "llama-quantize")
    if not os.access(quant, os.X_OK):
        print("skip: %s not built (tools/peers/build_llama_cpp.sh builds it)" % quant)
        return SKIP
    try:
        import gguf  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        print("skip: the gguf package is missing (pip install gguf)")
        return SKIP
    if not os.access(args.roofline, os.X_OK):
        print("error: %s not built" % args.roofline)
        return 1
    work = args.work or tempfile.mkdtemp(prefix="quantize-vs-llama-")
    os.makedirs(work, exist_ok=True)
    env = llama_env(args.llama_bin)
    ok = True
    inputs = [("tiny", os.path.join(work, "tiny-f32.gguf"))]
    tiny_f32_model(inputs[0][1])
    if not args.no_gemma:
        if not os.path.exists(args.model):
            print("skip of the Gemma part: %s absent" % args.model)
        else:
            g32 = os.path.join(work, "gemma-f32.gguf")
            rc, out = (0, "reused " + g32) if args.reuse and os.path.exists(g32) else run([args.roofline, "quantize", args.model, g32, "--type", "F32", "--force",
                           "--threads", str(args.threads)])
            eprint(out.strip())
            if rc:
                print("error: roofline quantize --type F32 --force failed (%d)" % rc)
                return 1
            inputs.append(("gemma-3-270m (F32 from Q4_K_M)", g32))
    rows, loads, quality = [], [], []
    kq = [t for t in args.kquants.split(",") if t]
    for label, src in inputs:
        names = weight_names(src)
        for target in args.types.split(",") + kq:
            exact = target not in kq
            stem = os.path.join(work, "%s-%s" % (os.path.basename(src)[:-9], target))
            rf_out, ll_out = stem + "-roofline.gguf", stem + "-llama.gguf"
            reuse = args.reuse and os.path.exists(rf_out) and os.path.exists(ll_out)
            rc, out = (0, "") if reuse else run([args.roofline, "quantize", src, rf_out, "--type",
                                                 target, "--threads", str(args.threads)],
                                                log=stem + "-roofline.log")
            if rc:
                print("error: roofline quantize %s -> %s: %s" % (label, target, out.strip()))
                ok = False
                continue
            rc, out = (0, "") if reuse else run([quant, "--pure", src, ll_out, target,
                                                 str(args.threads)], env=env,
                                                log=stem + "-llama.log")
            if rc:
                print("error: llama-quantize %s -> %s failed (%d); see %s-llama.log"
                      % (label, target, rc, stem))
                ok = False
                continue
            counts, problems = compare(rf_out, ll_out, target, names)
            for ty, (same, diff) in sorted(counts.items()):
                rows.append([label, target + ("" if exact else " (RTN)"), ty, same, diff])
            if not exact:  # only the types must agree; the bytes are another encoder's
                problems = [p for p in problems if " is " in p or "tensor names" in p]
                e_rf, e_ll = rms_errors(src, [rf_out, ll_out], names)
                quality.append([label, target, "%.5f" % e_rf, "%.5f" % e_ll, "%.3f" % (e_rf / e_ll)])
            for p in problems[:20]:
                print("  %s %s: %s" % (label, target, p))
            ok = ok and not problems
            if label != "tiny" and not args.no_load and exact:
                rc, out = run([os.path.join(args.llama_bin, "llama-bench"), "-m", rf_out, "-p",
                               "0", "-n", "4", "-t", str(args.threads)], env=env,
                              log=stem + "-llama-bench.log")
                tg = [ln.split("|") for ln in out.splitlines() if "tg4" in ln]
                loads.append(["llama-bench -m <roofline %s>" % target, "ok" if rc == 0 and tg
                              else "FAILED (%d)" % rc,
                              "%s, tg4 %s t/s" % (tg[0][1].strip(), tg[0][-2].strip()) if tg
                              else ""])
                ok = ok and rc == 0 and bool(tg)
                rc, out = run([args.roofline, "run", "-m", rf_out, "-p", "Hello", "-n", "8",
                               "--temp", "0"], log=stem + "-roofline-run.log")
                text = out.split("\nprompt tokens:")[0].strip().replace("\n", "\\n")[:40]
                loads.append(["roofline run -m <roofline %s>" % target,
                              "ok" if rc == 0 else "FAILED (%d)" % rc, text])
                ok = ok and rc == 0
    print()
    print(fmt_table(["model", "target", "tensor type", "identical", "different"], rows))
    if quality:
        print()
        print(fmt_table(["model", "type", "rms err roofline", "rms err llama.cpp", "ratio"],
                        quality))
    if loads:
        print()
        print(fmt_table(["load", "result", "output"], loads))
    verdict = "DIFFERENCES FOUND" if not ok else \
        "all identical" if not kq else "all identical (the K-quants: the same types)"
    print("\n%s (files in %s)" % (verdict, work))
    if not args.keep and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
