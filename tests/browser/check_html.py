#!/usr/bin/python3
"""The HTML report in a real browser (headless Chromium through Selenium, Debian's chromium,
chromium-driver and python3-selenium).

For every sample: the page opens from disk with no console error and no network request; each
bar segment and each per-block segment is drawn at its share of the whole within a pixel, and
its hover title holds the exact count of the JSON report; each projection drawing has the
JSON's count and its in × out proportions within a pixel. A run of identical consecutive blocks
is drawn once and stands for its blocks: the runs cover the JSON's blocks once, in order, each
run's counts are every one of its blocks' counts, and runs × blocks add up to the JSON's totals. With --screenshots DIR it also saves
the README's screenshots (360 and 1280 px wide).

    /usr/bin/python3 tests/browser/check_html.py build/headcount samples [--screenshots docs/images]

A missing browser or driver is a failure, not a skip: CI installs them.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

COMPOSITION = {"emb": "embeddings", "ffn": "feed_forward", "exp": "routed_experts", "rt": "routers", "norm": "norms",
               "buf": "buffers", "const": "constants", "lm": "lm_head", "mix": "mixers", "other": "other"}
ROLES = {"q": "q", "k": "k", "v": "v", "o": "o"}


def browser(width):
    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", f"--window-size={width},900",
                "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    options.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def commas(n):
    return f"{n:,}"


# Everything the page draws, measured in the browser in one call.
MEASURE = """
const out = {bars: [], layers: [], matrices: []};
for (const svg of document.querySelectorAll('svg.bar')) {
  const box = svg.getBoundingClientRect();
  const segs = [...svg.querySelectorAll('rect.seg')].map(r => ({cls: r.getAttribute('class'),
    count: Number(r.dataset.count), width: r.getBoundingClientRect().width, title: r.querySelector('title').textContent}));
  out.bars.push({total: Number(svg.dataset.total), width: box.width, segs});
}
for (const svg of document.querySelectorAll('svg.layers')) {
  const box = svg.getBoundingClientRect();
  const vb = svg.viewBox.baseVal;
  const segs = [...svg.querySelectorAll('rect.seg')].map(r => ({cls: r.getAttribute('class'),
    count: Number(r.dataset.count), width: r.getBoundingClientRect().width, title: r.querySelector('title').textContent}));
  const runs = [...svg.querySelectorAll('g.run')].map(g => ({first: Number(g.dataset.first), last: Number(g.dataset.last),
    blocks: Number(g.dataset.blocks), segs: [...g.querySelectorAll('rect.seg')].map(r => ({
      role: r.getAttribute('class').split('seg-')[1], count: Number(r.dataset.count)}))}));
  out.layers.push({widest: Number(svg.dataset.widest), span: box.width * (1000 - 160) / vb.width, segs, runs});
}
out.sections = [...document.querySelectorAll('section.block')].map(s => ({id: s.id, first: Number(s.dataset.first),
  last: Number(s.dataset.last), blocks: Number(s.dataset.blocks)}));
for (const r of document.querySelectorAll('rect.proj')) {
  const b = r.getBoundingClientRect();
  const section = r.closest('section.block');
  out.matrices.push({block: section.id, first: Number(section.dataset.first), last: Number(section.dataset.last),
    blocks: Number(section.dataset.blocks), cls: r.getAttribute('class'), count: Number(r.dataset.count),
    din: Number(r.dataset.in), dout: Number(r.dataset.out), width: b.width, height: b.height,
    title: r.querySelector('title').textContent});
}
out.packed = [];
for (const fig of document.querySelectorAll('figure.packed')) {
  const outline = fig.querySelector('svg > rect:last-of-type').getBoundingClientRect();
  for (const r of fig.querySelectorAll('rect.share')) {
    const b = r.getBoundingClientRect();
    out.packed.push({title: r.querySelector('title').textContent, width: b.width, height: b.height,
                     total_width: outline.width, total_height: outline.height});
  }
}
out.mixers = [...document.querySelectorAll('section.mixer')].map(s => {
  const svg = s.querySelector('svg.mixer');
  return {first: Number(s.dataset.first), last: Number(s.dataset.last), blocks: Number(s.dataset.blocks),
    parameters: Number(s.dataset.parameters), widest: Number(svg.dataset.widest), width: svg.getBoundingClientRect().width,
    segs: [...svg.querySelectorAll('rect.seg')].map(r => ({count: Number(r.dataset.count),
      width: r.getBoundingClientRect().width, title: r.querySelector('title').textContent}))};
});
out.overflow = document.documentElement.scrollWidth - window.innerWidth;
return out;
"""


def check_page(driver, html_path, report, failures):
    name = os.path.basename(html_path)
    driver.get("file://" + html_path)
    m = driver.execute_script(MEASURE)
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    if errors:
        failures.append(f"{name}: console: {errors[:3]}")
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            url = msg["params"]["request"]["url"]
            if not url.startswith(("file://", "data:")):
                failures.append(f"{name}: a network request for {url}")
    comp = report["parameters"]["composition"]
    stored = report["parameters"]["stored"]
    (bar,) = m["bars"]
    if bar["total"] != stored:
        failures.append(f"{name}: the bar's whole is {bar['total']}, the JSON's stored {stored}")
    attention = 0
    for s in bar["segs"]:
        part = s["cls"].split("seg-")[1]
        if part in COMPOSITION and s["count"] != comp[COMPOSITION[part]]:
            failures.append(f"{name}: segment {part} holds {s['count']}, the JSON {comp[COMPOSITION[part]]}")
        if part in ("q", "k", "v", "o", "x"):
            attention += s["count"]
        want = bar["width"] * s["count"] / stored
        if abs(s["width"] - want) > 1:
            failures.append(f"{name}: segment {part} is {s['width']:.2f} px wide, its share is {want:.2f} px")
        if commas(s["count"]) not in s["title"]:
            failures.append(f"{name}: segment {part}'s title '{s['title']}' lacks {commas(s['count'])}")
    if attention != comp["attention"]:
        failures.append(f"{name}: the attention segments hold {attention}, the JSON {comp['attention']}")
    blocks = report["attention_blocks"]
    for layer in m["layers"]:
        for s in layer["segs"]:
            want = layer["span"] * s["count"] / layer["widest"]
            if abs(s["width"] - want) > 1:
                failures.append(f"{name}: a block segment is {s['width']:.2f} px wide, its share is {want:.2f} px")
            if commas(s["count"]) not in s["title"]:
                failures.append(f"{name}: block segment title '{s['title']}' lacks {commas(s['count'])}")
    # A run of identical consecutive blocks is drawn once and stands for its blocks: the runs of
    # the chart and the block sections each cover the JSON's blocks once, in order, and what a run
    # draws is every one of its blocks' count; so runs × blocks add up to the JSON's totals.
    def check_runs(what, runs):
        at = 0
        for r in runs:
            if r["first"] != at or r["last"] < r["first"] or r["blocks"] != r["last"] - r["first"] + 1:
                failures.append(f"{name}: {what} {r['first']}–{r['last']} ({r['blocks']}) does not follow block {at - 1}")
            at = r["last"] + 1
        if blocks and at != len(blocks):
            failures.append(f"{name}: {what}s end at block {at - 1}, the JSON has {len(blocks)} blocks")
    check_runs("block section", m["sections"])
    for layer in m["layers"]:
        check_runs("chart row", layer["runs"])
        drawn = {role: 0 for role in ROLES}
        for r in layer["runs"]:
            for s in r["segs"]:
                if s["role"] not in ROLES:
                    continue
                drawn[s["role"]] += s["count"] * r["blocks"]
                for index in range(r["first"], min(r["last"] + 1, len(blocks))):
                    want = blocks[index]["projections"][ROLES[s["role"]]]["total"]
                    if s["count"] != want:
                        failures.append(f"{name}: the row of blocks {r['first']}–{r['last']} draws {s['role']} {s['count']}, "
                                        f"the JSON's block {index} holds {want}")
        for role in ROLES:
            want = sum(b["projections"][ROLES[role]]["total"] for b in blocks)
            if drawn[role] != want:
                failures.append(f"{name}: the chart's {role} rows stand for {drawn[role]}, the JSON's blocks hold {want}")
    for mx in m["matrices"]:
        index = mx["first"]
        if mx["block"] != f"{mx['block'].rsplit('-', 1)[0]}-{index}":
            failures.append(f"{name}: section {mx['block']} starts at block {index}")
        role = mx["cls"].split("proj-")[1]
        for i in range(mx["first"], min(mx["last"] + 1, len(blocks))):
            projection = blocks[i]["projections"][ROLES[role]]
            if mx["count"] != projection["total"]:
                failures.append(f"{name}: blocks {mx['first']}–{mx['last']} {role} are drawn with {mx['count']}, "
                                f"the JSON's block {i} holds {projection['total']}")
        if commas(mx["count"]) not in mx["title"]:
            failures.append(f"{name}: block {index} {role}'s title lacks {commas(mx['count'])}")
        if mx["width"] > 2 and mx["height"] > 2:  # a hairline has no measurable proportion
            want = mx["height"] * mx["dout"] / mx["din"]
            if abs(mx["width"] - want) > 1.5:
                failures.append(f"{name}: block {index} {role} is {mx['width']:.1f} × {mx['height']:.1f} px, "
                                f"not {mx['dout']} : {mx['din']}")
    for s in m["packed"]:  # "Q: columns 0:32 of 96"
        axis, span = s["title"].split(": ")[1].split(" ", 1)
        begin, rest = span.split(":")
        end, whole = rest.split(" of ")
        share = (int(end) - int(begin)) / int(whole)
        got, want = (s["height"], s["total_height"] * share) if axis == "rows" else (s["width"], s["total_width"] * share)
        if abs(got - want) > 1:
            failures.append(f"{name}: packed share '{s['title']}' is {got:.2f} px, its share is {want:.2f} px")
    # Token mixers: each run's drawing holds its mixers' parameters, its segments drawn to the
    # widest mixer's scale; the runs cover the JSON's mixers once, in order.
    mixers = report["mixers"]["layers"]
    at = 0
    for r in m["mixers"]:
        if r["first"] != at or r["blocks"] != r["last"] - r["first"] + 1:
            failures.append(f"{name}: mixer section {r['first']}–{r['last']} does not follow mixer {at - 1}")
        at = r["last"] + 1
        for i in range(r["first"], min(r["last"] + 1, len(mixers))):
            if sum(seg["count"] for seg in r["segs"]) != mixers[i]["parameters"] or r["parameters"] != mixers[i]["parameters"]:
                failures.append(f"{name}: mixers {r['first']}–{r['last']} are drawn with {r['parameters']}, "
                                f"the JSON's mixer {i} holds {mixers[i]['parameters']}")
        for seg in r["segs"]:
            want = r["width"] * seg["count"] / r["widest"]
            if abs(seg["width"] - want) > 1:
                failures.append(f"{name}: a mixer segment is {seg['width']:.2f} px wide, its share is {want:.2f} px")
            if commas(seg["count"]) not in seg["title"]:
                failures.append(f"{name}: mixer segment title '{seg['title']}' lacks {commas(seg['count'])}")
    if at != len(mixers):
        failures.append(f"{name}: the mixer sections end at mixer {at - 1}, the JSON has {len(mixers)} mixers")
    if m["overflow"] > 1:
        failures.append(f"{name}: the page is {m['overflow']} px wider than the window")
    return len(bar["segs"]) + sum(len(l["segs"]) for l in m["layers"]) + len(m["matrices"]) + len(m["packed"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("headcount")
    ap.add_argument("samples")
    ap.add_argument("--screenshots", help="save the README's screenshots here")
    args = ap.parse_args()
    binary, samples = os.path.abspath(args.headcount), os.path.abspath(args.samples)
    root = os.path.dirname(samples)
    failures, measured, pages = [], 0, 0
    with tempfile.TemporaryDirectory() as work:
        driver = browser(1280)
        try:
            names = sorted(f for f in os.listdir(samples) if f.endswith(".onnx"))
            for name in names:
                model = os.path.join(os.path.basename(samples), name)  # named as a user in the repository would
                html = os.path.join(work, name + ".html")
                subprocess.run([binary, "audit", model, "-f", "html", "-o", html], check=True, cwd=root)
                report = json.loads(subprocess.run([binary, "audit", model, "-f", "json"], check=True, cwd=root,
                                                   capture_output=True, text=True).stdout)["models"][0]
                measured += check_page(driver, html, report, failures)
                pages += 1
            # --all-blocks: every block drawn on its own, each drawing checked as above.
            model = os.path.join(os.path.basename(samples), "bert_base_external.onnx")
            html = os.path.join(work, "all-blocks.html")
            subprocess.run([binary, "audit", model, "-f", "html", "--all-blocks", "-o", html], check=True, cwd=root)
            report = json.loads(subprocess.run([binary, "audit", model, "-f", "json"], check=True, cwd=root,
                                               capture_output=True, text=True).stdout)["models"][0]
            measured += check_page(driver, html, report, failures)
            pages += 1
            sections = driver.execute_script("return [...document.querySelectorAll('section.block')].map(s => s.dataset.blocks)")
            if sections != ["1"] * len(report["attention_blocks"]):
                failures.append(f"all-blocks.html: sections standing for {sections} blocks, not one per block")
            # The same pages in a phone-sized window: nothing wider than the screen.
            driver.set_window_size(360, 800)
            for name in names:
                driver.get("file://" + os.path.join(work, name + ".html"))
                overflow = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
                if overflow > 1:
                    failures.append(f"{name} at 360 px: the page is {overflow} px wider than the window")
            driver.set_window_size(1280, 900)
            # headcount diff's page: both bars to the larger model's scale, no error, no request.
            diff = os.path.join(work, "diff.html")
            subprocess.run([binary, "diff", "samples/mha_heads4.onnx", "samples/mha_heads12.onnx", "-f", "html", "-o", diff],
                           check=True, cwd=root)
            driver.get("file://" + diff)
            m = driver.execute_script(MEASURE)
            errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
            if errors:
                failures.append(f"diff.html: console: {errors[:3]}")
            if len(m["bars"]) != 2 or m["bars"][0]["segs"] != m["bars"][1]["segs"]:
                failures.append("diff.html: the two models' bars differ, but their parameters are the same")
            outcome = driver.execute_script("return document.querySelector('.outcome').textContent")
            if "attention parameters unchanged" not in outcome:
                failures.append(f"diff.html: outcome '{outcome}'")
            pages += 1
            if args.screenshots:
                os.makedirs(args.screenshots, exist_ok=True)
                shots = [("bert_tiny", 1280), ("width_mismatch_keras", 1280), ("bert_tiny", 360), ("diff", 1280)]
                for sample, width in shots:
                    driver.set_window_size(width, 900)
                    page = diff if sample == "diff" else os.path.join(work, sample + ".onnx.html")
                    driver.get("file://" + page)
                    height = driver.execute_script("return document.body.scrollHeight")
                    driver.set_window_size(width, min(height + 40, 2400))
                    driver.save_screenshot(os.path.join(args.screenshots, f"report-{sample}-{width}.png"))
        finally:
            driver.quit()
    print(f"{pages} pages, {measured} drawn sizes checked")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures or pages == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
