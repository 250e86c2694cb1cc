#!/usr/bin/env python3
"""Opens heapgraph HTML reports in headless Chromium through chromedriver (WebDriver, standard
library only) and checks what a reader would see.

Usage: python3 tests/browser/check_report.py [--width PX] [--first-screen] SCREENSHOT_DIR
       REPORT.html|URL [REPORT.html|URL ...]

A URL is a page `heapgraph serve` shows (a CUDA snapshot's or a recording's): the same checks,
with requests allowed to its own origin.

For each page: no console errors; every chart (<svg>) is present and has drawn lines; no chart
label reaches outside its SVG or overlaps another, every chart fills its card, nothing is wider
than its box (page, card, chart, legend, headline, table), and the notes follow the headline;
clicking a numeric column header sorts the table by it, both ways; printing opens every
collapsed subtree and gives a PDF (kept in SCREENSHOT_DIR); no request leaves the page (the
performance log holds only the file itself); and a full-page screenshot is kept in
SCREENSHOT_DIR to look at. Prints one JSON line per page; exits 1 on the first failed check.

--width sets the window's width (1280 by default). --first-screen also keeps, as
PAGE.first.png, the top of the page down to the end of its first chart (the whole first screen
when there is none): what docs/make_guide_screenshots.sh puts in the guide.
"""
import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


WIDTH = 1280


class Driver:
    def __init__(self):
        self.port = free_port()
        self.process = subprocess.Popen(
            ["chromedriver", "--port=%d" % self.port],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while True:
            try:
                self.call("GET", "/status")
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        # --disable-dev-shm-usage: a container or chroot may have no /dev/shm, or a small one;
        # Chromium then keeps its shared memory in /tmp instead of failing to start.
        capabilities = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                                            "--disable-dev-shm-usage",
                                            "--window-size=%d,1000" % WIDTH, "--hide-scrollbars"]},
            "goog:loggingPrefs": {"browser": "ALL", "performance": "ALL"},
        }}}
        try:
            self.session = self.call("POST", "/session", capabilities)["sessionId"]
        except BaseException:
            # No session, so close() will never run: stop chromedriver here.
            self.process.terminate()
            raise

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            "http://127.0.0.1:%d%s" % (self.port, path), data=data, method=method,
            headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as error:
            # WebDriver says why in the body ({"value": {"error", "message"}}): a bare
            # "HTTP Error 500" would hide that Chromium could not start, and why.
            raise RuntimeError("chromedriver: %s %s: HTTP %d: %s" % (
                method, path, error.code, error.read().decode(errors="replace"))) from None

    def session_call(self, method, path, body=None):
        return self.call(method, "/session/%s%s" % (self.session, path), body)

    def run(self, script, *args):
        return self.session_call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def close(self):
        try:
            self.call("DELETE", "/session/%s" % self.session)
        finally:
            self.process.terminate()


# Returns what a reader would see as broken: a chart's text that reaches outside its SVG's
# viewBox (a clipped label) or overlaps another of its texts; a chart narrower than its card (an
# empty band beside it); a box whose content is wider than the box (the page, a card, a chart, a
# headline, a table); a headline that comes after the notes.
LAYOUT_SCRIPT = """
var problems = [];
function box(text, svg) {
    var b = text.getBBox();
    var m = svg.getScreenCTM().inverse().multiply(text.getScreenCTM());
    var xs = [], ys = [];
    [[b.x, b.y], [b.x + b.width, b.y], [b.x, b.y + b.height], [b.x + b.width, b.y + b.height]].forEach(function(c) {
        var p = svg.createSVGPoint(); p.x = c[0]; p.y = c[1]; p = p.matrixTransform(m);
        xs.push(p.x); ys.push(p.y);
    });
    return {x0: Math.min.apply(null, xs), x1: Math.max.apply(null, xs),
            y0: Math.min.apply(null, ys), y1: Math.max.apply(null, ys),
            text: text.textContent.trim()};
}
document.querySelectorAll('svg').forEach(function(svg, n) {
    var vb = svg.viewBox.baseVal;
    var boxes = Array.from(svg.querySelectorAll('text'))
        .filter(function(t) { return t.textContent.trim() !== ''; })
        .map(function(t) { return box(t, svg); });
    boxes.forEach(function(b) {
        if (b.x0 < vb.x - 0.5 || b.y0 < vb.y - 0.5 || b.x1 > vb.x + vb.width + 0.5 || b.y1 > vb.y + vb.height + 0.5)
            problems.push('chart ' + (n + 1) + ': "' + b.text + '" reaches outside the chart (' +
                [b.x0, b.y0, b.x1, b.y1].map(Math.round).join(',') + ' in 0,0,' + vb.width + ',' + vb.height + ')');
    });
    for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i], c = boxes[j];
        var w = Math.min(a.x1, c.x1) - Math.max(a.x0, c.x0), h = Math.min(a.y1, c.y1) - Math.max(a.y0, c.y0);
        // Glyph boxes include the line's leading: overlaps of a pixel or two are not ink.
        if (w > 2 && h > 3) problems.push('chart ' + (n + 1) + ': "' + a.text + '" overlaps "' + c.text + '"');
    }
    var card = svg.parentElement, style = getComputedStyle(card);
    var inner = card.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    var width = svg.getBoundingClientRect().width;
    if (width < inner - 1) problems.push('chart ' + (n + 1) + ' is ' + Math.round(width) + ' px wide in a card of ' + Math.round(inner));
});
var root = document.documentElement;
if (root.scrollWidth > root.clientWidth) problems.push('the page scrolls sideways: ' + root.scrollWidth + ' > ' + root.clientWidth);
document.querySelectorAll('main, h1, .card, .cards, .chart, .legend, .headline, .suspect, .notes, table, .tree').forEach(function(e) {
    if (e.scrollWidth > e.clientWidth + 1)
        problems.push((e.className || e.tagName) + ' overflows: ' + e.scrollWidth + ' > ' + e.clientWidth + ': ' + e.textContent.trim().slice(0, 80));
});
var headline = document.querySelector('.headline'), note = document.querySelector('.notes');
if (headline && note && (headline.compareDocumentPosition(note) & Node.DOCUMENT_POSITION_PRECEDING))
    problems.push('a note comes before the headline');
return problems;
"""


def check(driver, page, shots, first_screen=False):
    # A page `heapgraph serve` shows is given as its URL (with the token, and a fragment that
    # names its screenshots); its requests must stay on its own origin.
    served = page.startswith("http://")
    url = page if served else "file://" + os.path.abspath(page)
    origin = urllib.parse.urlsplit(url)
    name = "served-" + (origin.fragment or str(origin.port)) if served else os.path.basename(page)
    # The window the last page's screenshot grew is shrunk back: a page is measured, and shot,
    # at its own height.
    driver.session_call("POST", "/window/rect", {"width": WIDTH, "height": 1000})
    driver.session_call("POST", "/url", {"url": url})
    facts = {"page": page}
    # Console errors.
    logs = driver.session_call("POST", "/se/log", {"type": "browser"})
    errors = [entry["message"] for entry in logs if entry["level"] == "SEVERE"]
    assert not errors, "console errors: %s" % errors
    # Charts drawn.
    charts = driver.run(
        "return Array.from(document.querySelectorAll('svg')).map(function(s){"
        "return {w: s.getBoundingClientRect().width, paths: s.querySelectorAll('polyline,path,line').length}})")
    for chart in charts:
        assert chart["w"] > 100 and chart["paths"] > 10, "an empty chart: %s" % chart
    facts["charts"] = len(charts)
    # Layout: nothing wider than its box, no chart label cut off or drawn over another.
    problems = driver.run(LAYOUT_SCRIPT)
    assert not problems, "layout:\n  " + "\n  ".join(problems)
    facts["texts_checked"] = driver.run(
        "return Array.from(document.querySelectorAll('svg text')).length")
    # Sorting: every sortable table of two rows or more, by its first numeric column,
    # ascending then descending.
    sorted_ok = driver.run("""
        var tables = Array.from(document.querySelectorAll('table.sortable')).filter(function(t){ return t.tBodies[0].rows.length > 1; });
        return tables.map(function(table){
            var th = Array.from(table.tHead.rows[0].cells);
            var col = th.findIndex(function(h, i){ return table.tBodies[0].rows[0].cells[i].hasAttribute('data-v'); });
            if (col < 0) return null;
            function values(){ return Array.from(table.tBodies[0].rows).map(function(r){ return parseFloat(r.cells[col].getAttribute('data-v')); }); }
            function isSorted(v, asc){ for (var i = 1; i < v.length; i++) { if (asc ? v[i-1] > v[i] : v[i-1] < v[i]) return false; } return true; }
            th[col].click(); var up = isSorted(values(), true);
            th[col].click(); var down = isSorted(values(), false);
            return {rows: values().length, up: up, down: down};
        }).filter(function(result){ return result !== null; });
    """)
    for table in sorted_ok:
        assert table["up"] and table["down"], "sorting: %s" % sorted_ok
    facts["sorted_tables"] = len(sorted_ok)
    # Printing opens every collapsed subtree, and the page prints.
    closed_after_print = driver.run(
        "window.dispatchEvent(new Event('beforeprint'));"
        "return document.querySelectorAll('details:not([open])').length")
    assert closed_after_print == 0, "%d subtrees stay closed in print" % closed_after_print
    pdf = base64.b64decode(driver.session_call("POST", "/print", {"background": True}))
    assert pdf.startswith(b"%PDF") and len(pdf) > 10000, "printing gave %d bytes" % len(pdf)
    facts["pdf_bytes"] = len(pdf)
    printed = os.path.join(shots, name + ".pdf")
    with open(printed, "wb") as out:
        out.write(pdf)
    facts["pdf"] = printed
    # Requests: nothing but the page itself.
    performance = driver.session_call("POST", "/se/log", {"type": "performance"})
    urls = set()
    for entry in performance:
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.add(message["params"]["request"]["url"])
    if served:
        others = [u for u in urls if urllib.parse.urlsplit(u)[:2] != origin[:2]]
    else:
        others = [u for u in urls if u != url]
    assert not others, "the page requested %s" % others
    facts["requests"] = sorted(urls)
    if first_screen:
        bottom = driver.run(
            "var c = document.querySelector('.chart');"
            "return c ? c.getBoundingClientRect().bottom + window.scrollY + 12 : window.innerHeight")
        width = driver.run("return document.documentElement.clientWidth")
        shot = driver.session_call("POST", "/goog/cdp/execute", {
            "cmd": "Page.captureScreenshot",
            "params": {"format": "png", "captureBeyondViewport": True,
                       "clip": {"x": 0, "y": 0, "width": width, "height": int(bottom), "scale": 1}}})
        first = os.path.join(shots, name + ".first.png")
        with open(first, "wb") as out:
            out.write(base64.b64decode(shot["data"]))
        facts["first_screen"] = first
    # A full-page screenshot to look at.
    height = driver.run("return document.documentElement.scrollHeight")
    driver.session_call("POST", "/window/rect", {"width": WIDTH, "height": min(int(height) + 20, 8000)})
    png = base64.b64decode(driver.session_call("GET", "/screenshot"))
    shot = os.path.join(shots, name + ".png")
    with open(shot, "wb") as out:
        out.write(png)
    facts["screenshot"] = shot
    print(json.dumps(facts))


def main():
    global WIDTH
    args = sys.argv[1:]
    first_screen = "--first-screen" in args
    args = [arg for arg in args if arg != "--first-screen"]
    if args[:1] == ["--width"]:
        WIDTH = int(args[1])
        args = args[2:]
    shots, pages = args[0], args[1:]
    os.makedirs(shots, exist_ok=True)
    driver = Driver()
    try:
        for page in pages:
            check(driver, page, shots, first_screen)
    finally:
        driver.close()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as error:
        print("FAILED:", error, file=sys.stderr)
        sys.exit(1)
