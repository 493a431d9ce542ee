#!/usr/bin/env python3
"""check_grid.py DOM.html STATUS_URL: checks the status page's dispatch grid, as Chromium
dumped it, against the JSON of /v1/ops/aten::add.Tensor from the same daemon: one cell per
runtime key, each with the source class of its table entry and the right colour class."""
import html.parser
import json
import os
import sys
import urllib.request

ALIASES = {"Autograd", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
           "CompositeExplicitAutogradNonFunctional"}


class Cells(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.cells = {}
        self.grid = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == "grid":
            self.grid = a
        if tag == "div" and "cell" in a.get("class", "").split():
            self.cells[a.get("data-key")] = set(a["class"].split())


def kind(key, entry):
    s = entry["source"]
    if s == key:
        return "direct"
    if s in ALIASES:
        return "alias"
    return {"fallthrough": "fallthrough", "fallback": "fallback",
            "ambiguous_autogradother": "ambiguous"}.get(s, "missing")


def main():
    dom, base = sys.argv[1], sys.argv[2]
    p = Cells()
    with open(dom, encoding="utf-8") as f:
        p.feed(f.read())
    with urllib.request.urlopen(base + "/v1/ops/aten%3A%3Aadd.Tensor", timeout=10) as r:
        table = json.load(r)["table"]
    fails = []
    if not p.grid or p.grid.get("data-ready") != "1" or p.grid.get("data-op") != "aten::add.Tensor":
        fails.append(f"the grid was not drawn for aten::add.Tensor: {p.grid}")
    if set(p.cells) != set(table):
        fails.append(f"cells {len(p.cells)} != runtime keys {len(table)}: "
                     f"missing {sorted(set(table) - set(p.cells))[:5]}")
    for key, entry in table.items():
        cls = p.cells.get(key)
        if cls is None:
            continue
        for want in ("src-" + entry["source"], "kind-" + kind(key, entry)):
            if want not in cls:
                fails.append(f"{key}: class {want} not in {sorted(cls)}")
    # what the dispatcher registers for add.Tensor, independently of the JSON above (a build
    # with the CUDA backend registers its CUDA kernel even without a device)
    cuda = "kind-direct" if os.environ.get("OPD_HAVE_CUDA") == "1" else "kind-missing"
    for key, want in (("CPU", "kind-direct"), ("Meta", "kind-direct"),
                      ("AutogradCPU", "src-Autograd"), ("CUDA", cuda),
                      ("BackendSelect", "kind-fallthrough")):
        if want not in p.cells.get(key, set()):
            fails.append(f"{key}: expected {want}, got {sorted(p.cells.get(key, set()))}")
    for f in fails[:20]:
        print("FAIL:", f)
    if fails:
        sys.exit(1)
    print(f"ok: {len(p.cells)} grid cells match the dispatch table of aten::add.Tensor")


main()
