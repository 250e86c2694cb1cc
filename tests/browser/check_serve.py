#!/usr/bin/env python3
"""Walks heapgraph serve's explorer in headless Chromium through chromedriver (WebDriver,
standard library only), as a user would: the printed URL, Types, a type's instances, an object,
its chains from the roots and the merged paths of its type, three levels of the dominator tree
opened with the keyboard, back through the history, the duplicate strings, and the types printed
(print media: no navigation, every row laid out; then Chromium's print to PDF).

Usage: python3 tests/browser/check_serve.py SCREENSHOT_DIR URL TYPE

URL is what `heapgraph serve` printed; TYPE a type whose largest instance has a chain of
dominator-tree children at least three deep (the Java fixture's com.example.ChainLink). At each
step: no console error, and a screenshot in SCREENSHOT_DIR; at the end, no request went to
another origin than the server's. Prints one JSON line of what it saw; exits 1 on the first
failed check.
"""
import base64
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_report import Driver, WIDTH  # noqa: E402


def wait(driver, script, what, timeout=20):
    """Waits until `script` returns something truthy; returns it."""
    deadline = time.time() + timeout
    while True:
        value = driver.run(script)
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError("timed out waiting for %s (at %s)" % (what, driver.run("return location.href")))
        time.sleep(0.05)


def heading(driver):
    return driver.run("var h = document.querySelector('main h1'); return h ? h.textContent : ''")


def no_console_errors(driver, step):
    logs = driver.session_call("POST", "/se/log", {"type": "browser"})
    errors = [entry["message"] for entry in logs if entry["level"] == "SEVERE"]
    assert not errors, "%s: console errors: %s" % (step, errors)


def shot(driver, shots, name):
    height = driver.run("return document.documentElement.scrollHeight")
    driver.session_call("POST", "/window/rect", {"width": WIDTH, "height": min(int(height) + 20, 4000)})
    png = base64.b64decode(driver.session_call("GET", "/screenshot"))
    path = os.path.join(shots, name + ".png")
    with open(path, "wb") as out:
        out.write(png)
    driver.session_call("POST", "/window/rect", {"width": WIDTH, "height": 1000})
    return path


def key(driver, keys):
    """Sends keys to whatever has the focus."""
    driver.session_call("POST", "/actions", {"actions": [{
        "type": "key", "id": "keyboard",
        "actions": [a for k in keys for a in ({"type": "keyDown", "value": k}, {"type": "keyUp", "value": k})],
    }]})


ARROW_DOWN, ARROW_RIGHT, ENTER = "\ue015", "\ue014", "\ue007"


def main():
    shots, url, type_name = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(shots, exist_ok=True)
    origin = "%s://%s" % urllib.parse.urlsplit(url)[:2]
    driver = Driver()
    facts = {"shots": []}
    try:
        driver.session_call("POST", "/url", {"url": url})
        # The token moved into the cookie: the address bar no longer holds it.
        wait(driver, "return document.querySelector('.card')", "the overview")
        address = driver.run("return location.href")
        assert "token" not in address, "the token stayed in the address bar: %s" % address
        assert heading(driver) == "Overview", heading(driver)
        facts["shots"].append(shot(driver, shots, "serve-1-overview"))
        no_console_errors(driver, "overview")

        # Types: filter as you type, then open the type.
        driver.run("location.hash = '#/types'")
        search = wait(driver, "return document.querySelector('input[type=search]')", "the types' filter")
        driver.session_call("POST", "/element/%s/value" % list(search.values())[0], {"text": type_name})
        rows = wait(driver, "var r = document.querySelectorAll('main tbody tr');"
                    "return r.length === 1 ? r.length : 0", "the filter to leave one type")
        assert "q=" in driver.run("return location.hash"), "the filter is not in the URL"
        facts["shots"].append(shot(driver, shots, "serve-2-types"))
        no_console_errors(driver, "types")
        driver.run("document.querySelector('main tbody tr a').click()")
        wait(driver, "return document.querySelector('main h1') && "
             "document.querySelector('main h1').textContent.startsWith('Instances of')", "the instances")
        assert type_name in heading(driver)
        facts["instances"] = driver.run("return document.querySelectorAll('main tbody tr').length")
        assert facts["instances"] > 0
        facts["shots"].append(shot(driver, shots, "serve-3-instances"))
        no_console_errors(driver, "instances")

        # The largest instance, with the keyboard: the first row has the focus; Enter opens it.
        wait(driver, "return document.activeElement && document.activeElement.tagName === 'TR'", "the first row's focus")
        key(driver, [ENTER])
        wait(driver, "return location.hash.startsWith('#/object/') && document.getElementById('chains')", "the object")
        chains = driver.run("return document.querySelectorAll('.chain').length")
        assert chains >= 2, "no chain and dominator chain shown (%d)" % chains
        fields = driver.run("return Array.from(document.querySelectorAll('main table')[0].querySelectorAll('tbody tr')).map(r => r.textContent)")
        assert any("next" in f for f in fields), "no field `next`: %s" % fields
        facts["object"] = driver.run("return location.hash")
        # The merged paths of its type arrive after the page: a tree ending at the instances.
        wait(driver, "return document.querySelector('.merged-row.target')", "the merged paths of the type", timeout=60)
        facts["merged_rows"] = driver.run("return document.querySelectorAll('.merged-row').length")
        facts["shots"].append(shot(driver, shots, "serve-4-object-chains"))
        no_console_errors(driver, "object")

        # Its dominator subtree, three levels down, opened with the arrow keys.
        driver.run("Array.from(document.querySelectorAll('main a')).find(a => a.textContent === 'Its dominator subtree').click()")
        wait(driver, "return document.querySelector('.tree-row')", "the tree")
        for level in range(1, 4):
            wait(driver, "return document.querySelectorAll('.tree-row').length > %d" % level, "level %d" % level)
            # Move to the deepest row shown, then open it.
            driver.run("var rows = document.querySelectorAll('.tree-row'); rows[rows.length - 1].focus()")
            key(driver, [ARROW_RIGHT])
        wait(driver, "return document.querySelectorAll('.tree-row').length >= 5", "three levels opened")
        depth = driver.run("return document.querySelectorAll('.tree [role=group] [role=group] [role=group] .tree-row').length")
        assert depth >= 1, "fewer than three levels opened"
        key(driver, [ARROW_DOWN])
        facts["tree_rows"] = driver.run("return document.querySelectorAll('.tree-row').length")
        facts["shots"].append(shot(driver, shots, "serve-5-tree"))
        no_console_errors(driver, "tree")

        # Back: the object, then the instances, from the history.
        driver.session_call("POST", "/back", {})
        wait(driver, "return location.hash === %s && document.getElementById('chains')" % json.dumps(facts["object"]), "back to the object")
        driver.session_call("POST", "/back", {})
        wait(driver, "return location.hash.startsWith('#/type/') && document.querySelector('main tbody tr')", "back to the instances")
        facts["shots"].append(shot(driver, shots, "serve-6-back"))
        no_console_errors(driver, "back")

        # Duplicate strings.
        driver.run("location.hash = '#/strings'")
        wait(driver, "return document.querySelector('main h1') && "
             "document.querySelector('main h1').textContent === 'Duplicate strings' && "
             "document.querySelector('main tbody tr')", "the duplicate strings")
        facts["string_rows"] = driver.run("return document.querySelectorAll('main tbody tr').length")
        facts["shots"].append(shot(driver, shots, "serve-7-strings"))
        no_console_errors(driver, "strings")

        # Printed: the types table in print media has no navigation, and every row is there
        # and laid out (none clipped to nothing); then Chromium's own print to PDF.
        driver.run("location.hash = '#/types'")
        wait(driver, "return document.querySelectorAll('main tbody tr').length > 10", "the types")
        on_screen = driver.run("return document.querySelectorAll('main tbody tr').length")
        driver.session_call("POST", "/goog/cdp/execute", {
            "cmd": "Emulation.setEmulatedMedia", "params": {"media": "print"}})
        assert driver.run("return matchMedia('print').matches"), "print media not emulated"
        hidden = driver.run("return ['nav', '.controls', 'input[type=search]'].map(s => document.querySelector(s))"
                            ".filter(e => e).every(e => getComputedStyle(e).display === 'none')")
        assert hidden, "the navigation shows in print"
        laid_out = driver.run("return Array.from(document.querySelectorAll('main tbody tr'))"
                              ".filter(r => r.getBoundingClientRect().height > 0).length")
        assert laid_out == on_screen, "print shows %d of %d rows" % (laid_out, on_screen)
        clipped = driver.run("return Array.from(document.querySelectorAll('main table, main td'))"
                             ".filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflow !== 'visible').length")
        assert clipped == 0, "%d table cells clipped in print" % clipped
        facts["print_rows"] = laid_out
        facts["shots"].append(shot(driver, shots, "serve-8-print-media"))
        driver.session_call("POST", "/goog/cdp/execute", {
            "cmd": "Emulation.setEmulatedMedia", "params": {"media": ""}})
        pdf = base64.b64decode(driver.session_call("POST", "/print", {"background": False}))
        assert pdf.startswith(b"%PDF") and len(pdf) > 1000, "no PDF printed"
        with open(os.path.join(shots, "serve-types.pdf"), "wb") as out:
            out.write(pdf)

        # A pasted link opens its view in a fresh tab of the same session.
        driver.session_call("POST", "/url", {"url": origin + "/" + facts["object"]})
        wait(driver, "return document.getElementById('chains')", "the pasted link")

        # Nothing left the server's origin.
        performance = driver.session_call("POST", "/se/log", {"type": "performance"})
        urls = set()
        for entry in performance:
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                urls.add(message["params"]["request"]["url"])
        others = sorted(u for u in urls if not u.startswith(origin + "/"))
        assert not others, "requests to other origins: %s" % others
        facts["requests"] = len(urls)
    finally:
        driver.close()
    print(json.dumps(facts))


if __name__ == "__main__":
    try:
        main()
    except AssertionError as error:
        print("FAILED: %s" % error)
        sys.exit(1)
