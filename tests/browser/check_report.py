#!/usr/bin/env python3
"""check_report.py RUN_DIR: loads RUN_DIR/report.html in headless Chromium (Debian's package)
and checks it as a reader would see it:

  - the page loads with no console message at all (no script errors: the page has no script)
    and references nothing outside itself (no src= or href= to any file or URL);
  - every chart the summary has data for is in the page (figure ids), and every table of the
    report (table ids, the same as the CSV files in RUN_DIR/csv/);
  - the run's numbers are there: every load level's output tok/s (as the table shows it, and
    as the throughput chart's point value), every backend's roofline ceiling and $/M figures,
    the accuracy scores, and no cell says NaN;
  - a PNG screenshot is written to RUN_DIR/report.png.

Exit 0 when every check holds, 1 with the failures listed, 77 when Chromium is not installed.
"""
import html.parser
import json
import math
import os
import shutil
import subprocess
import sys


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()
        self.refs = []
        self.values = []  # data-value attributes
        self.cells = {}   # table id -> list of cell texts
        self.table = None
        self.in_cell = False
        self.text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        for k in ("src", "href"):
            if k in a:
                self.refs.append(f"{tag} {k}={a[k]}")
        if "data-value" in a:
            self.values.append(float(a["data-value"]))
        if tag == "table":
            self.table = a.get("id")
            self.cells.setdefault(self.table, [])
        if tag in ("td", "th") and self.table:
            self.in_cell = True
            self.text = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.in_cell:
            self.cells[self.table].append("".join(self.text).strip())
            self.in_cell = False
        if tag == "table":
            self.table = None

    def handle_data(self, data):
        if self.in_cell:
            self.text.append(data)


def close(values, want, rel=1e-4):
    return any(abs(v - want) <= rel * max(1.0, abs(want)) for v in values)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    run = sys.argv[1]
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("skipped: chromium is not installed (scripts/setup.sh installs it)")
        return 77
    page = os.path.abspath(os.path.join(run, "report.html"))
    summary = json.load(open(os.path.join(run, "summary.json")))
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--enable-logging=stderr", "--v=0", "--log-level=0", "--user-data-dir=" +
            os.path.join(run, ".chromium-profile")]
    p = subprocess.run(base + ["--dump-dom", "file://" + page], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    fails = []
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l]
    if p.returncode != 0:
        fails.append(f"chromium exited {p.returncode}: {p.stderr[-400:]}")
    if console:
        fails.append("console messages: " + " | ".join(console[:5]))
    dom = Dom()
    dom.feed(p.stdout)
    if dom.refs:
        fails.append("the page references other files or URLs: " + ", ".join(dom.refs[:5]))
    # charts
    want_charts = []
    load = summary.get("load", {})
    if load:
        want_charts += ["c-throughput", "c-ttft", "c-tpot", "c-pareto"]
    if summary.get("roofline"):
        want_charts.append("c-roofline")
    kinds = {c.get("kind") for c in summary.get("cost", {}).get("backends", {}).values()}
    if kinds & {"instance", "per_token"}:
        want_charts.append("c-cost")
    if summary.get("accuracy"):
        want_charts.append("c-accuracy")
    if summary.get("aba", {}).get("decode_tok_s"):
        want_charts.append("c-aba")
    for c in want_charts:
        if c not in dom.ids:
            fails.append(f"chart {c} is missing")
    # tables: every CSV has its table
    csv_dir = os.path.join(run, "csv")
    tables = sorted(f[:-4] for f in os.listdir(csv_dir) if f.endswith(".csv"))
    for t in tables:
        if f"t-{t}" not in dom.ids:
            fails.append(f"table t-{t} is missing")
    # the numbers
    for name, b in load.items():
        for lv in b["levels"]:
            v = lv.get("output_tok_s")
            if v is None:
                continue
            if f"{v:.1f}" not in dom.cells.get("t-load", []):
                fails.append(f"load {name} c={lv.get('concurrency')}: {v:.1f} tok/s not in the "
                             f"load table")
            if lv.get("mode") == "concurrency" and not close(dom.values, v):
                fails.append(f"load {name} c={lv.get('concurrency')}: {v} not a chart point")
    for name, r in summary.get("roofline", {}).items():
        c = r.get("ceiling_tok_s")
        if c is not None and f"{c:.1f}" not in dom.cells.get("t-roofline", []):
            fails.append(f"roofline {name}: ceiling {c:.1f} not in the table")
    for name, c in summary.get("cost", {}).get("backends", {}).items():
        v = (c.get("single_stream") or {}).get("usd_per_m_output")
        if v is not None and f"{v:.2f}" not in dom.cells.get("t-cost", []):
            fails.append(f"cost {name}: {v:.2f} $/M not in the cost table")
    for name, a in summary.get("accuracy", {}).items():
        if f"{a['correct']}/{a['total']}" not in dom.cells.get("t-accuracy", []):
            fails.append(f"accuracy {name}: {a['correct']}/{a['total']} not in the table")
    for t, cells in dom.cells.items():
        bad = [x for x in cells if x.lower() in ("nan", "inf", "-nan")]
        if bad:
            fails.append(f"table {t} shows {bad[0]}")
    shot = os.path.join(run, "report.png")
    s = subprocess.run(base + ["--window-size=1280,5200", "--screenshot=" + shot,
                               "file://" + page], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    if s.returncode != 0 or not os.path.exists(shot) or os.path.getsize(shot) < 10000:
        fails.append(f"no screenshot written ({s.returncode}): {s.stderr[-300:]}")
    shutil.rmtree(os.path.join(run, ".chromium-profile"), ignore_errors=True)
    print(f"report.html: {len(want_charts)} charts, {len(tables)} tables, "
          f"{len(dom.values)} chart values checked; screenshot {shot}")
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
