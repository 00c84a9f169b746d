#!/usr/bin/env python3
"""Regenerates the llama.cpp reference data that roofline's end-to-end tests compare against.

Dev-only script: roofline never runs or links llama.cpp; this only refreshes committed test data.

Two profiles, chosen by the model's general.architecture:
  gemma3        the embedded Gemma 3 model: REF_TEXT (a narrative), llama.cpp's built-in "gemma" chat
                template, stop ids <eos>/<end_of_turn>; files in tests/data/ (the defaults below).
  qwen2, llama  the ChatML instruction models (Qwen2.5-Coder, SmolLM2): INSTRUCT_TEXT (an
                instruction-style ChatML conversation, special tokens parsed), prompts rendered as
                ChatML <|im_start|>user\n...<|im_end|>\n<|im_start|>assistant\n (a system turn first when
                given; no default system prompt), stop at any end-of-generation token of the vocabulary
                (llama_vocab_is_eog); files in tests/data/<model file name without .gguf>/.
                Run: python3 tools/ref/gen_model_ref.py --model models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
                     python3 tools/ref/gen_model_ref.py --model models/smollm2-135m-instruct-q4_1.gguf

What it produces (in --out-dir, default tests/data/ or tests/data/<model>/):
  ref_text.txt     A fixed English text (embedded below as REF_TEXT; narrative, numbers, a list,
                   dialogue), about 850 tokens with the Gemma 3 tokenizer (BOS included). Longer than
                   the 512-token sliding window, so the test exercises it.
  ref_teacher.tsv  Teacher-forced logits. ref_text.txt is tokenized by llama.cpp (add BOS,
                   parse_special true) and evaluated in ONE llama_decode batch with logits for every
                   position. '#' header lines (settings, llama.cpp commit, model file size/sha256),
                   then "tokens<TAB>id id ...", then per position p = 0..n-1:
                   "p<TAB>argmax_id<TAB>logsumexp<TAB>id:logit id:logit ..." with the top 32 logits
                   (descending logit, ties by ascending id; "%.6f"); logsumexp is over the whole
                   vocabulary, computed in float64 from the float32 logits.
  ref_ppl.txt      "ppl<TAB>value<TAB>n_scored": exp(mean over p = 0..n-2 of
                   logsumexp(logits_p) - logits_p[token_{p+1}]) from those same logits, plus comment
                   lines (definition; a cross-check against the llama-perplexity tool, which uses its
                   own chunking: we also print our number for the exact window of its chunk 1).
  ref_greedy.tsv   Greedy continuations of 10 fixed chat prompts, rendered with llama.cpp's built-in
                   "gemma" template (no BOS in the text; BOS comes from the tokenizer). The prompt is
                   decoded in one batch, then one token per step; the next token is the argmax of the
                   returned logits (ties: lowest id; no sampler, no penalties), up to 64 new tokens,
                   stopping after emitting <eos> (1) or <end_of_turn> (106), which is included.
                   One line per prompt:
                   HEX(rendered prompt, UTF-8)<TAB>prompt ids<TAB>generated ids<TAB>HEX(generated text)
                   [<TAB>top1-top2 logit margin at each generated step, comma-separated "%.4f"]
                   The generated text is llama.cpp's detokenization of the generated ids without the
                   final stop token, control tokens not rendered (llama-server's default output).
                   '#' lines above each line show the prompt and output for humans.
It also checks that llama.cpp parses <start_of_turn>/<end_of_turn> in the rendered prompts as the
special tokens 105/106 (warns otherwise), and that libllama was built from the same source
distribution as the Python bindings it is driven through.

Requirements: llama.cpp built by tools/peers/build_llama_cpp.sh (libllama.so in .peers/llama.cpp-build/bin),
the unpacked llama-cpp-python sdist in .peers/llama_cpp_python-0.3.36 (its pure-Python `llama_cpp`
package loads libllama through ctypes; no compilation), numpy, and the pure-Python deps the package
imports (typing_extensions, diskcache, jinja2: `pip install diskcache jinja2 typing_extensions`).

Run (from the repository root; takes a few minutes on 2 cores):
  python3 tools/ref/gen_model_ref.py
  python3 tools/ref/gen_model_ref.py --model models/gemma-3-270m-q4_k_m.gguf --threads 2 --verbose
Deterministic: same llama.cpp build, model, CPU features and thread count give identical files.
"""

import argparse
import ctypes
import hashlib
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINDINGS_VERSION = "0.3.36"

TOP_K = 32
GREEDY_MAX_NEW = 64
STOP_IDS = (1, 106)  # <eos>, <end_of_turn>
BOS_ID = 2
START_OF_TURN_ID = 105
END_OF_TURN_ID = 106

REF_TEXT = """\
The Clockmaker of Harrow Lane

On the morning the river froze, Ada Whitlock opened her shop at seven o'clock exactly, as she had done every day for twenty-three years. The bell above the door rang twice, once for the door and once for the draft, and the smell of brass polish drifted out into the grey street.

Her workshop was small: four meters wide, nine meters deep, and crowded with clocks that disagreed with one another by a few seconds. Ada liked it that way. "A room full of identical clocks," she used to say, "is a room that has stopped thinking."

At a quarter past eight a boy came in, stamping snow from his boots. He carried a wooden box tied with green string.

"Are you the one who fixes things?" he asked.

"I fix clocks," Ada said. "Sometimes the clocks fix me. What have you got?"

He untied the string and lifted out a pocket watch with a cracked face. The case was silver, dented near the hinge, and engraved with the initials M.R. and the year 1897.

"It was my grandfather's," the boy said. "It stopped on Tuesday at 3:41. My mother says it can't be repaired, but I think she just doesn't want to pay for it."

Ada turned the watch over in her palm. It weighed perhaps eighty grams. She opened the back with a thin blade and looked at the movement through her loupe: seventeen jewels, a balance wheel no larger than a lentil, and a mainspring that had snapped cleanly in two.

"Your mother is half right," she said. "It can be repaired, but it will take time. Three weeks, maybe four. The spring has to be made by hand."

"How much will it cost?"

Ada considered the question longer than it deserved. The honest price was about 120 pounds; the parts alone were 35. She looked at the boy's coat, which was too thin for the weather, and at his hands, which were red from the cold.

"Tell you what," she said. "You come here every Saturday until it's finished and help me sort screws. That will be the price."

The boy agreed at once, and they shook hands on it.

Over the following weeks he learned more than he expected. Ada gave him a notebook and made him copy out her rules, which she insisted were the only rules that mattered in the trade:

1. Never force a screw that does not want to turn.
2. Clean every part twice, even the ones that look clean.
3. Write down what you took apart, in order, before you forget.
4. Oil is a medicine; too much of it is a poison.
5. If you are angry, go for a walk before you touch anything small.

On the third Saturday, while the boy was counting tiny screws into a tray, he asked her why she had become a clockmaker.

"My father wanted me to be an accountant," she said. "He thought numbers were safe. But a ledger only tells you what already happened. A clock tells you what is happening now, and it keeps telling you, whether you listen or not."

"That sounds a bit sad," the boy said.

"Does it? I find it comforting. The world goes on at the same speed for everybody. Sixty seconds in a minute, for kings and for cats."

By the end of the month the new mainspring was finished. Ada wound the watch slowly, eleven turns, and held it up to her ear. It ticked, steady and quiet, at five beats per second. The boy laughed out loud when he heard it.

He came back the following Saturday anyway, and the Saturday after that. By spring he could open a movement on his own, and by autumn he had repaired his first alarm clock, a cheap tin thing that rang like a fire engine. Ada hung it above the workbench and refused to let anyone fix the bell.
"""

# (system message or None, user message)
PROMPTS = [
    (None, "What is the capital of France?"),
    (None, "What is 17 + 25?"),
    (None, "List three primary colors."),
    (None, "Translate to French: The cat is sleeping on the chair."),
    (None, "Write the opening sentence of a story about a lighthouse keeper."),
    (None, "Write a Python function that returns the square of a number."),
    (None, "Define the word 'photosynthesis' in one sentence."),
    (None, "Is the Pacific Ocean larger than the Atlantic Ocean? Answer yes or no."),
    (None, "I am planning a picnic for six people. Suggest a simple menu. Keep it short, "
           "and mention one thing to bring in case it rains."),
    ("You are a helpful assistant. Answer in one short sentence.", "Why is the sky blue?"),
]


# An instruction-style ChatML conversation for the ChatML models' teacher-forced pass (special tokens
# parsed): a system turn, a request, and an answer of about 700 tokens with prose, a numbered list
# and code.
INSTRUCT_TEXT = """\
<|im_start|>system
You are a helpful assistant. Answer clearly and completely.<|im_end|>
<|im_start|>user
I keep a small collection of text files with notes, one note per line, and each line starts with a date like 2024-03-17. Can you explain how I would find all the notes from a given month, count how many notes I wrote on each day, and print the busiest day? Please explain the approach first and then give me a short Python script.<|im_end|>
<|im_start|>assistant
Sure. The task has three parts: reading the lines, keeping the ones from the month you want, and counting them per day. Because every line starts with a date in the ISO format YYYY-MM-DD, the first ten characters of a line are enough to decide where it belongs, and no date library is needed for the filtering.

Here is the approach, step by step:

1. Walk over the files in your notes folder and open each one as UTF-8 text. Skip anything that is not a regular file, so that a stray subfolder does not stop the program.
2. Read the files line by line instead of loading them whole. Your notes are small, but reading lines keeps the memory use flat even if one file grows to a few hundred megabytes.
3. For every line, take the first ten characters and check that they really look like a date. A line that is empty, or that starts with something else, is ignored rather than counted by mistake.
4. Compare the first seven characters, the year and the month, with the month you asked for, for example 2024-03.
5. Count the matching lines in a dictionary whose keys are the full dates. The collections module has a Counter class that does exactly this, and it also knows how to return its most common entries.
6. Finally, print the counts in date order, followed by the busiest day. If two days tie, Counter returns the one it saw first, which is usually what you want.

A few details are worth getting right. Files written on different systems may end their lines with a carriage return as well as a newline; stripping the line handles both. Some editors save a byte order mark at the start of a file, and opening with the encoding utf-8-sig removes it. It is also a good idea to accept the folder and the month as command-line arguments, so you can reuse the script without editing it.

Here is a script that puts it together:

```python
import sys
from collections import Counter
from pathlib import Path


def count_notes(folder, month):
    counts = Counter()
    for path in sorted(Path(folder).iterdir()):
        if not path.is_file():
            continue
        with path.open(encoding="utf-8-sig") as f:
            for line in f:
                date = line.strip()[:10]
                if len(date) == 10 and date[4] == "-" and date[7] == "-":
                    if date.startswith(month):
                        counts[date] += 1
    return counts


if __name__ == "__main__":
    folder, month = sys.argv[1], sys.argv[2]
    counts = count_notes(folder, month)
    for day in sorted(counts):
        print(day, counts[day])
    if counts:
        day, n = counts.most_common(1)[0]
        print("busiest day:", day, "with", n, "notes")
    else:
        print("no notes in", month)
```

Save it as notes.py and run it like this: python notes.py ~/notes 2024-03. The script prints one line per day that has notes, for example 2024-03-17 4, and then the busiest day of the month. If you would also like to see the notes themselves, you could collect the lines in a dictionary of lists instead of only counting them, and print the list for the busiest day at the end.<|im_end|>
"""


def render_chatml(system, user):
    """ChatML, one user turn (after a system turn when given) plus the generation prompt."""
    out = ""
    if system is not None:
        out += "<|im_start|>system\n" + system.strip() + "<|im_end|>\n"
    return out + "<|im_start|>user\n" + user.strip() + "<|im_end|>\n<|im_start|>assistant\n"


def render_gemma(system, user):
    """llama.cpp's built-in "gemma" chat template, one user turn plus the generation prompt."""
    user = user.strip()
    if system is not None:
        user = system.strip() + "\n\n" + user
    return "<start_of_turn>user\n" + user + "<end_of_turn>\n<start_of_turn>model\n"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--lib-path", default=os.path.join(ROOT, ".peers", "llama.cpp-build", "bin"),
                    help="folder holding libllama.so (exported as LLAMA_CPP_LIB_PATH)")
    ap.add_argument("--bindings", default=os.path.join(ROOT, ".peers", "llama_cpp_python-" + BINDINGS_VERSION),
                    help="unpacked llama-cpp-python sdist (its llama_cpp package is imported from here)")
    ap.add_argument("--out-dir", default=None,
                    help="default: tests/data/ for gemma3, tests/data/<model file name without .gguf>/ else")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--teacher-ctx", type=int, default=1024,
                    help="n_ctx = n_batch = n_ubatch for the teacher-forced pass (>= token count)")
    ap.add_argument("--greedy-ctx", type=int, default=512, help="n_ctx = n_batch = n_ubatch for greedy decoding")
    ap.add_argument("--skip-perplexity-tool", action="store_true", help="skip the llama-perplexity cross-check")
    ap.add_argument("--no-flash-attn", action="store_true",
                    help="disable llama.cpp's flash attention (llama-cli -fa off)")
    ap.add_argument("--no-repack", action="store_true",
                    help="disable llama.cpp's CPU weight repacking (llama-cli --no-repack)")
    ap.add_argument("--verbose", action="store_true", help="echo llama.cpp's log to stderr")
    return ap.parse_args()


def warn(msg):
    print("WARNING: " + msg, file=sys.stderr)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build_provenance(args, L):
    """Checks that libllama and the bindings come from the same sdist; returns header lines."""
    lines = []
    import llama_cpp
    if llama_cpp.__version__ != BINDINGS_VERSION:
        warn("bindings version %s, expected %s" % (llama_cpp.__version__, BINDINGS_VERSION))
    lines.append("llama-cpp-python bindings %s (%s)" % (llama_cpp.__version__, args.bindings))
    build_dir = os.path.dirname(os.path.abspath(args.lib_path))
    commit = None
    bi = os.path.join(build_dir, "common", "build-info.cpp")
    if os.path.exists(bi):
        m = re.search(r'LLAMA_COMMIT = "([0-9a-f]+)"', open(bi).read())
        commit = m.group(1) if m else None
    src_dir = None
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if os.path.exists(cache):
        m = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", open(cache).read(), re.M)
        src_dir = m.group(1).strip() if m else None
    vendor = os.path.join(os.path.abspath(args.bindings), "vendor", "llama.cpp")
    if src_dir is None or os.path.realpath(src_dir) != os.path.realpath(vendor):
        warn("libllama was built from %s, not from the bindings' vendored llama.cpp %s" % (src_dir, vendor))
    vendor_head = None
    try:
        vendor_head = subprocess.run(["git", "-C", vendor, "rev-parse", "HEAD"], capture_output=True,
                                     text=True, check=True).stdout.strip()
    except Exception:
        pass
    changelog = os.path.join(args.bindings, "CHANGELOG.md")
    cl_commit = None
    if os.path.exists(changelog):
        m = re.search(r"## \[" + re.escape(BINDINGS_VERSION) + r"\]\s+- feat: update llama.cpp to ggml-org/llama.cpp@([0-9a-f]+)",
                      open(changelog).read())
        cl_commit = m.group(1) if m else None
    for other in (vendor_head, cl_commit):
        if commit and other and not (other.startswith(commit) or commit.startswith(other)):
            warn("llama.cpp commit mismatch: build-info %s vs %s" % (commit, other))
    lines.append("llama.cpp commit %s (build-info of %s; vendored HEAD %s; bindings changelog %s)"
                 % (commit, build_dir, vendor_head, cl_commit))
    lines.append("libllama source dir %s" % src_dir)
    lines.append("system_info: " + L.llama_print_system_info().decode().strip())
    return lines


class LogCapture:
    def __init__(self, L, echo):
        self.lines = []
        self.echo = echo
        self._buf = ""

        def cb(level, text, user_data):
            s = text.decode("utf-8", "replace")
            self._buf += s
            if self.echo:
                sys.stderr.write(s)
            while "\n" in self._buf:
                line, self._buf = self._buf.split("\n", 1)
                self.lines.append(line)

        self._cb = L.llama_log_callback(cb)  # keep a reference: ctypes callbacks must outlive their use
        L.llama_log_set(self._cb, ctypes.c_void_p(0))

    def mark(self):
        return len(self.lines)

    def since(self, mark, pattern):
        rx = re.compile(pattern)
        return [l.strip() for l in self.lines[mark:] if rx.search(l)]


CTX_LOG_PATTERN = r"n_ctx |n_ctx_seq|n_batch|n_ubatch|flash_attn|Flash Attention|causal_attn|kv_unified|swa|K \(|V \(|n_threads"


def tokenize(L, vocab, text, add_special=True, parse_special=True):
    data = text.encode("utf-8")
    cap = len(data) + 16
    buf = (L.llama_token * cap)()
    n = L.llama_tokenize(vocab, data, len(data), buf, cap, add_special, parse_special)
    if n < 0:
        raise RuntimeError("tokenize failed (%d)" % n)
    return [buf[i] for i in range(n)]


def detokenize(L, vocab, ids, unparse_special):
    if not ids:
        return b""
    arr = (L.llama_token * len(ids))(*ids)
    cap = 64 + 64 * len(ids)
    out = ctypes.create_string_buffer(cap)
    n = L.llama_detokenize(vocab, arr, len(ids), out, cap, False, unparse_special)
    if n < 0:
        raise RuntimeError("detokenize failed (%d)" % n)
    return out.raw[:n]


FLASH_ATTN_TYPE = None  # None: llama.cpp's default (auto); 0 disables (--no-flash-attn)


def make_context(L, model, n_ctx, threads):
    p = L.llama_context_default_params()
    if FLASH_ATTN_TYPE is not None:
        p.flash_attn_type = FLASH_ATTN_TYPE
    p.n_ctx = n_ctx
    p.n_batch = n_ctx
    p.n_ubatch = n_ctx
    p.n_seq_max = 1
    p.n_threads = threads
    p.n_threads_batch = threads
    # type_k, type_v, flash_attn_type: llama.cpp defaults (f16, f16, auto), recorded from the log.
    ctx = L.llama_init_from_model(model, p)
    if not ctx:
        raise RuntimeError("llama_init_from_model failed")
    return ctx, p


def decode(L, ctx, ids, pos0, want_logits):
    """One llama_decode call with ids at positions pos0.., sequence 0; want_logits: 'all' or 'last'."""
    n = len(ids)
    batch = L.llama_batch_init(n, 0, 1)
    try:
        for i, t in enumerate(ids):
            batch.token[i] = t
            batch.pos[i] = pos0 + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = 1 if (want_logits == "all" or i == n - 1) else 0
        batch.n_tokens = n
        rc = L.llama_decode(ctx, batch)
        if rc != 0:
            raise RuntimeError("llama_decode returned %d" % rc)
    finally:
        L.llama_batch_free(batch)


def logits_row(L, ctx, i, n_vocab):
    ptr = L.llama_get_logits_ith(ctx, i)
    if not ptr:
        raise RuntimeError("no logits for output %d" % i)
    return np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy()


def logsumexp64(row):
    x = row.astype(np.float64)
    m = x.max()
    return m + np.log(np.exp(x - m).sum())


def top_k(row, k):
    """ids of the k largest logits, descending, ties broken by ascending id."""
    kth = np.partition(row, row.size - k)[row.size - k]
    idx = np.nonzero(row >= kth)[0]  # every id tied with the k-th largest is a candidate
    order = np.lexsort((idx, -row[idx].astype(np.float64)))
    return idx[order][:k]


def run_perplexity_tool(args, text_path, n_tokens):
    exe = os.path.join(args.lib_path, "llama-perplexity")
    # llama-perplexity drops one trailing newline of the -f file (one token fewer than ours); it needs
    # >= 2*c tokens, so c is the largest even size that fits. Its chunk 1 is then a prefix of our tokens.
    c = ((n_tokens - 1) // 2) & ~1
    cmd = [exe, "-m", args.model, "-f", text_path, "-c", str(c), "-b", str(c), "-ub", str(c),
           "-t", str(args.threads), "-tb", str(args.threads)]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = args.lib_path + ":" + env.get("LD_LIBRARY_PATH", "")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    except Exception as e:
        return c, cmd, None, ["llama-perplexity failed to run: %s" % e]
    out = r.stdout + r.stderr
    notes = []
    chunks = re.findall(r"\[(\d+)\]([0-9.]+),", out)
    final = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", out)
    info = [l.strip() for l in out.splitlines()
            if re.search(r"calculating perplexity over|tokenizes to|you need at least|flash_attn|Flash Attention|n_ctx  |n_batch|n_ubatch|K \(", l)]
    notes += [re.sub(r"^[0-9.]+ [IWE] ", "", x) for x in info]
    notes.append("chunks: " + ",".join("[%s]%s" % ch for ch in chunks))
    if final:
        notes.append("Final estimate: PPL = %s +/- %s" % final.groups())
    if r.returncode != 0:
        notes.append("exit code %d" % r.returncode)
    chunk1 = float(chunks[0][1]) if chunks else None
    return c, cmd, chunk1, notes


def main():
    args = parse_args()
    os.environ["LLAMA_CPP_LIB_PATH"] = os.path.abspath(args.lib_path)
    sys.path.insert(0, os.path.abspath(args.bindings))
    import llama_cpp.llama_cpp as L

    log = LogCapture(L, args.verbose)

    prov = build_provenance(args, L)
    model_size = os.path.getsize(args.model)
    model_sha = sha256_file(args.model)
    prov.append("model %s: %d bytes, sha256 %s" % (os.path.basename(os.path.realpath(args.model)), model_size, model_sha))

    L.llama_backend_init()
    global FLASH_ATTN_TYPE
    if args.no_flash_attn:
        FLASH_ATTN_TYPE = 0
        prov.append("flash attention disabled (flash_attn_type = 0, as llama-cli -fa off)")
    mp = L.llama_model_default_params()
    if args.no_repack:
        mp.use_extra_bufts = False  # llama-cli --no-repack: keep weights in their GGUF layout
        prov.append("weight repacking disabled (use_extra_bufts = false, as llama-cli --no-repack)")
    model = L.llama_model_load_from_file(args.model.encode(), mp)
    if not model:
        sys.exit("failed to load %s" % args.model)
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    abuf = ctypes.create_string_buffer(64)
    L.llama_model_meta_val_str(model, b"general.architecture", abuf, 64)
    arch = abuf.value.decode()
    gemma = arch == "gemma3"
    if args.out_dir is None:
        args.out_dir = os.path.join(ROOT, "tests", "data")
        if not gemma:
            args.out_dir = os.path.join(args.out_dir, os.path.basename(args.model).rsplit(".gguf", 1)[0])
    os.makedirs(args.out_dir, exist_ok=True)
    ref_text = REF_TEXT if gemma else INSTRUCT_TEXT
    render = render_gemma if gemma else render_chatml
    add_bos = L.llama_vocab_get_add_bos(vocab)
    prov.append("architecture %s: %s text, %s template, add_bos %s" % (
        arch, "narrative" if gemma else "ChatML instruction", "gemma" if gemma else "ChatML", bool(add_bos)))

    def is_stop(t):
        return t in STOP_IDS if gemma else bool(L.llama_vocab_is_eog(vocab, t))
    repacked = len(log.since(0, r"repack: repack tensor"))
    if repacked:
        prov.append("CPU weight repacking at load: %d tensors (e.g. %s)" % (
            repacked, log.since(0, r"repack: repack tensor")[0].lstrip(".")))

    # ---------------------------------------------------------------- ref_text.txt
    text_path = os.path.join(args.out_dir, "ref_text.txt")
    with open(text_path, "w", encoding="utf-8", newline="\n") as f:
        f.write(ref_text)
    toks = tokenize(L, vocab, ref_text, True, True)
    n = len(toks)
    print("ref_text: %d tokens%s" % (n, " (incl. BOS)" if add_bos else ""))
    if n < 600:
        warn("ref_text has only %d tokens" % n)
    if gemma and (toks[0] != BOS_ID or (n > 1 and toks[1] == BOS_ID)):
        warn("unexpected BOS handling in ref_text tokens")
    if n > args.teacher_ctx:
        sys.exit("ref_text (%d tokens) exceeds --teacher-ctx %d" % (n, args.teacher_ctx))

    # ---------------------------------------------------------------- teacher forcing
    mark = log.mark()
    ctx, cp = make_context(L, model, args.teacher_ctx, args.threads)
    decode(L, ctx, toks, 0, "all")
    ctx_log = log.since(mark, CTX_LOG_PATTERN)
    teacher_settings = [
        "teacher-forced pass: one llama_decode batch of %d tokens (positions 0..%d, seq 0), logits for every position"
        % (n, n - 1),
        "requested n_ctx=%d n_batch=%d n_ubatch=%d n_seq_max=1 n_threads=%d n_threads_batch=%d "
        "type_k=%d type_v=%d (ggml type ids; 1 = f16) flash_attn_type=%d (-1 = auto), other params default"
        % (cp.n_ctx, cp.n_batch, cp.n_ubatch, args.threads, args.threads, cp.type_k, cp.type_v, cp.flash_attn_type),
        "tokenized by llama_tokenize(add_special=true, parse_special=true)",
    ] + ["llama.cpp log: " + l for l in ctx_log]

    tsv_lines = []
    nll = np.zeros(max(n - 1, 0), dtype=np.float64)
    lse_all = np.zeros(n, dtype=np.float64)
    for p in range(n):
        row = logits_row(L, ctx, p, n_vocab)
        lse = logsumexp64(row)
        lse_all[p] = lse
        top = top_k(row, TOP_K)
        amax = int(np.argmax(row))
        if p + 1 < n:
            nll[p] = lse - float(row[toks[p + 1]])
        tsv_lines.append("%d\t%d\t%.6f\t%s" % (p, amax, lse, " ".join("%d:%.6f" % (i, row[i]) for i in top)))
    L.llama_free(ctx)

    with open(os.path.join(args.out_dir, "ref_teacher.tsv"), "w", encoding="utf-8", newline="\n") as f:
        f.write("# roofline reference: llama.cpp teacher-forced logits of ref_text.txt (tools/ref/gen_model_ref.py)\n")
        for l in prov + teacher_settings:
            f.write("# " + l + "\n")
        f.write("# n_vocab=%d; per position: p, argmax id, float64 logsumexp over all %d logits, top %d id:logit "
                "(descending logit, ties by id)\n" % (n_vocab, n_vocab, TOP_K))
        f.write("tokens\t" + " ".join(str(t) for t in toks) + "\n")
        for l in tsv_lines:
            f.write(l + "\n")

    # ---------------------------------------------------------------- perplexity
    ppl = float(np.exp(nll.mean()))
    print("ppl = %.6f over %d scored tokens" % (ppl, nll.size))
    ppl_notes = []
    if not gemma and not args.skip_perplexity_tool:
        ppl_notes.append("cross-check with llama-perplexity skipped: the text holds ChatML special tokens, "
                         "which it would tokenize as plain text")
    elif not args.skip_perplexity_tool:
        c, cmd, chunk1, notes = run_perplexity_tool(args, text_path, n)
        first = c // 2
        ours = float(np.exp(nll[first:c - 1].mean()))
        ppl_notes.append("cross-check: " + " ".join(os.path.basename(x) if i == 0 else
                                                    (os.path.basename(x) if x in (args.model, text_path) else x)
                                                    for i, x in enumerate(cmd)))
        ppl_notes.append("  it splits the text into chunks of %d tokens (BOS put in place of each chunk's first token, "
                         "fresh KV cache per chunk) and scores positions %d..%d of each chunk" % (c, first, c - 2))
        ppl_notes += ["  llama-perplexity: " + x for x in notes]
        ppl_notes.append("  ours over the window of its chunk 1 (logits p=%d..%d predicting tokens %d..%d): %.4f; "
                         "its [1] = %s" % (first, c - 2, first + 1, c - 1, ours, chunk1))
        print("\n".join(ppl_notes))
    with open(os.path.join(args.out_dir, "ref_ppl.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("# perplexity of ref_text.txt (%d tokens%s) under llama.cpp, from the logits of ref_teacher.tsv "
                "(one batch, all positions): ppl = exp(mean over p=0..n-2 of logsumexp(logits_p) - logits_p[token_{p+1}]),"
                " float64; n_scored = n-1\n" % (n, " incl. BOS" if add_bos else ""))
        f.write("# mean NLL = %.6f nats\n" % nll.mean())
        for l in ppl_notes:
            f.write("# " + l + "\n")
        f.write("ppl\t%.6f\t%d\n" % (ppl, nll.size))

    # ---------------------------------------------------------------- greedy
    mark = log.mark()
    ctx, cp = make_context(L, model, args.greedy_ctx, args.threads)
    greedy_log = log.since(mark, CTX_LOG_PATTERN)
    mem = L.llama_get_memory(ctx)
    out_lines = []
    for k, (system, user) in enumerate(PROMPTS):
        rendered = render(system, user)
        ids = tokenize(L, vocab, rendered, True, True)
        if gemma and (ids[0] != BOS_ID or ids[1] == BOS_ID):
            warn("prompt %d: expected exactly one leading BOS, got %s" % (k, ids[:3]))
        if gemma and (ids.count(START_OF_TURN_ID) != 2 or ids.count(END_OF_TURN_ID) != 1):
            warn("prompt %d: <start_of_turn>/<end_of_turn> not parsed as special tokens 105/106: %s" % (k, ids))
        if not gemma and ids.count(ids[0]) != rendered.count("<|im_start|>"):
            warn("prompt %d: <|im_start|> not parsed as one special token: %s" % (k, ids))
        if len(ids) + GREEDY_MAX_NEW > args.greedy_ctx:
            sys.exit("prompt %d too long for --greedy-ctx" % k)
        L.llama_memory_clear(mem, True)
        decode(L, ctx, ids, 0, "last")
        gen = []
        margins = []  # top1 - top2 logit per step: how close a different engine is to a legitimate flip
        while True:
            row = logits_row(L, ctx, -1, n_vocab)
            t = int(np.argmax(row))
            top2 = np.partition(row, row.size - 2)[row.size - 2:]
            margins.append(float(top2[1] - top2[0]))
            gen.append(t)
            if is_stop(t) or len(gen) >= GREEDY_MAX_NEW:
                break
            decode(L, ctx, [t], len(ids) + len(gen) - 1, "last")
        body = gen[:-1] if is_stop(gen[-1]) else gen
        text = detokenize(L, vocab, body, False)
        shown = detokenize(L, vocab, gen, True).decode("utf-8", "replace")
        mstep = int(np.argmin(margins))
        out_lines.append("# prompt %d: %r\n# output %d (%d tokens, specials shown): %r\n"
                         "# smallest top1-top2 logit margin: %.4f at step %d\n"
                         % (k, rendered, k, len(gen), shown, margins[mstep], mstep))
        out_lines.append("%s\t%s\t%s\t%s\t%s\n" % (rendered.encode("utf-8").hex(), " ".join(map(str, ids)),
                                                   " ".join(map(str, gen)), text.hex(),
                                                   ",".join("%.4f" % x for x in margins)))
        print("prompt %d (%d ids) -> %d tokens (min margin %.4f at step %d): %r"
              % (k, len(ids), len(gen), margins[mstep], mstep, shown))
    L.llama_free(ctx)

    with open(os.path.join(args.out_dir, "ref_greedy.tsv"), "w", encoding="utf-8", newline="\n") as f:
        f.write("# roofline reference: llama.cpp greedy continuations (tools/ref/gen_model_ref.py)\n")
        for l in prov:
            f.write("# " + l + "\n")
        if gemma:
            f.write("# template: llama.cpp built-in gemma: <start_of_turn>user\\n{[system\\n\\n]user}<end_of_turn>\\n"
                    "<start_of_turn>model\\n; BOS added by the tokenizer (add_special=true, parse_special=true)\n")
        else:
            f.write("# template: ChatML: [<|im_start|>system\\n{system}<|im_end|>\\n]<|im_start|>user\\n{user}<|im_end|>\\n"
                    "<|im_start|>assistant\\n; tokenized with add_special=true (this vocabulary adds BOS: %s), "
                    "parse_special=true\n" % bool(add_bos))
        f.write("# decoding: prompt in one llama_decode batch (logits for the last position only), then one token per "
                "llama_decode; next token = argmax of the float32 logits (lowest id on ties); no sampler/penalties; "
                "at most %d new tokens; stop after emitting %s (included in generated ids)\n"
                % (GREEDY_MAX_NEW, " or ".join(map(str, STOP_IDS)) if gemma else "an end-of-generation token "
                   "(llama_vocab_is_eog)"))
        f.write("# context: n_ctx=n_batch=n_ubatch=%d n_seq_max=1 n_threads=n_threads_batch=%d, type_k=%d type_v=%d "
                "flash_attn_type=%d (defaults); KV cache cleared (llama_memory_clear) before each prompt\n"
                % (cp.n_ctx, args.threads, cp.type_k, cp.type_v, cp.flash_attn_type))
        for l in greedy_log:
            f.write("# llama.cpp log: " + l + "\n")
        f.write("# columns: hex(rendered prompt UTF-8, no BOS)\tprompt ids\tgenerated ids\t"
                "hex(llama_detokenize(generated ids minus the final stop token, remove_special=false, "
                "unparse_special=false))\ttop1-top2 logit margin at each generated step\n")
        for l in out_lines:
            f.write(l)

    L.llama_model_free(model)
    L.llama_backend_free()
    for name in ("ref_text.txt", "ref_teacher.tsv", "ref_ppl.txt", "ref_greedy.tsv"):
        p = os.path.join(args.out_dir, name)
        print("%s: %d bytes" % (p, os.path.getsize(p)))


if __name__ == "__main__":
    main()
