#!/usr/bin/env python3
"""uopc --viz in a real browser: headless Chromium loads each page from file://, and the test

  - checks statically that the page references nothing outside itself (no src/href/url(...) attributes, no
    fetch, XMLHttpRequest, WebSocket, import(): the embedded data cannot carry a tag either), and dynamically
    that the browser made no request but the page's own file (DevTools' Network events);
  - counts the drawn nodes of every pass's pane against the graph uopc dumped for that pass (--dump-dir,
    JSON, counted here: the nodes under the root without entering CALL bodies);
  - clicks (real mouse events) a node and checks the info panel shows that node's op, clicks a kernel's
    CALL, opens the kernel and checks its drawn nodes against the kernel body's and that its source is shown;
  - prints the time from navigation to the page being drawn (a figure, never asserted).

Chromium is driven over --remote-debugging-pipe (DevTools protocol on fds 3/4): no extra Python package.
Without Chromium (Debian's `chromium`, or $UOPC_CHROMIUM) it prints why and exits 77 (ctest: skipped).
"""
import argparse, fcntl, glob, json, os, re, shutil, subprocess, sys, tempfile, time

SKIP = 77


def find_chromium():
    for c in [os.environ.get("UOPC_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]:
        if c and shutil.which(c):
            return shutil.which(c)
    return None


class Browser:
    """One headless Chromium with one page, spoken to over the DevTools pipe."""

    def __init__(self, exe, profile):
        r1, w1 = os.pipe()  # commands: we write w1, Chromium reads fd 3
        r2, w2 = os.pipe()  # replies: Chromium writes fd 4, we read r2
        hi = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in (r1, w2)]

        def child():
            os.dup2(hi[0], 3)
            os.dup2(hi[1], 4)

        args = [exe, "--headless=new", "--disable-gpu", "--remote-debugging-pipe", "--user-data-dir=" + profile,
                "--no-first-run", "--no-default-browser-check", "--window-size=1400,900", "--allow-file-access-from-files",
                "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")
        self.proc = subprocess.Popen(args, preexec_fn=child, close_fds=False, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        for fd in (r1, w2, *hi):
            os.close(fd)
        self.w, self.r = w1, r2
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network"):
            self.call(domain + ".enable")

    def _read(self, timeout):
        end = time.time() + timeout
        while b"\0" not in self.buf:
            if time.time() > end:
                raise TimeoutError("no reply from Chromium")
            import select
            ready, _, _ = select.select([self.r], [], [], max(0.0, end - time.time()))
            if ready:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, timeout=60, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read(timeout)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def eval(self, expr, timeout=60):
        r = self.call("Runtime.evaluate", timeout=timeout, expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"page script failed: {expr}: {r['exceptionDetails'].get('exception', {}).get('description')}")
        return r["result"].get("value")

    def click(self, x, y):
        for t in ("mouseMoved", "mousePressed", "mouseReleased"):
            extra = {} if t == "mouseMoved" else {"button": "left", "clickCount": 1}
            self.call("Input.dispatchMouseEvent", type=t, x=x, y=y, **extra)

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)


# --- what the graph says: counted from uopc's JSON, independently of the page ---------------------------

def refs_of(arg, out):
    stack = [arg]
    while stack:
        a = stack.pop()
        if isinstance(a, list):
            stack.extend(reversed(a))
        elif isinstance(a, dict):
            if a.get("$") == "UOp":
                out.append(a["id"])
            else:
                stack.extend(v for k, v in a.items() if k != "$")


def region_nodes(doc, root):
    """Nodes under `root` without entering CALL bodies (a CALL's src 0), arg and tag references included."""
    nodes = doc["nodes"]
    seen, stack, bodies = {root}, [root], []
    while stack:
        n = nodes[stack.pop()]
        nxt = []
        for k, s in enumerate(n.get("src", [])):
            if n["op"] == "CALL" and k == 0:
                bodies.append(s)
                continue
            nxt.append(s)
        if "arg" in n:
            refs_of(n["arg"], nxt)
        if "tag" in n:
            refs_of(n["tag"], nxt)
        for s in nxt:
            if s not in seen:
                seen.add(s)
                stack.append(s)
    return seen, bodies


def expected(doc):
    top, bodies = region_nodes(doc, doc["root"])
    kernels = {}
    queue = list(dict.fromkeys(bodies))
    while queue:
        b = queue.pop(0)
        if b in kernels:
            continue
        ns, inner = region_nodes(doc, b)
        kernels[b] = len(ns)
        queue.extend(x for x in inner if x not in kernels)
    return len(top), kernels


# --- the page ----------------------------------------------------------------------------------------------

BAD_ATTR = re.compile(r"""(?:\s|<)(?:src|href|srcset|xlink:href|action|formaction|poster|background|data)\s*=""", re.I)
BAD_API = re.compile(r"""\bfetch\s*\(|XMLHttpRequest|WebSocket|EventSource|\bimport\s*\(|importScripts|sendBeacon|"""
                     r"""new\s+Worker|serviceWorker|url\s*\(|@import|<link\b|<img\b|<iframe\b|<object\b|<embed\b|"""
                     r"""window\.open|\bhttps?:|//[a-z0-9.-]+\.[a-z]{2,}/""", re.I)


def static_check(html):
    m = re.search(r'<script id="uopc-data" type="application/json">(.*?)</script>', html, re.S)
    if not m:
        return ["no embedded data block"]
    data, rest = m.group(1), html[:m.start(1)] + html[m.end(1):]
    problems = []
    if "<" in data:
        problems.append("the data block contains '<'")
    for rx in (BAD_ATTR, BAD_API):
        for hit in rx.finditer(rest):
            problems.append(f"reference outside the page: {rest[max(0, hit.start() - 30):hit.end() + 30]!r}")
    scripts = re.findall(r"<script\b([^>]*)>", rest)
    if len(scripts) != 2 or scripts[0].strip() != 'id="uopc-data" type="application/json"' or scripts[1].strip():
        problems.append(f"unexpected script elements: {scripts}")
    return problems


def check_page(browser, html_path, dump_dir, input_json, name):
    fails = []
    html = open(html_path, encoding="utf-8").read()
    fails += static_check(html)
    steps = [json.load(open(input_json))]
    dumps = sorted(glob.glob(os.path.join(dump_dir, "*.json")))
    steps += [json.load(open(p)) for p in dumps]
    url = "file://" + os.path.abspath(html_path)
    browser.events.clear()
    t0 = time.time()
    browser.call("Page.navigate", url=url)
    while not browser.eval("!!(window.uopcViz && window.uopcViz.ready)"):
        time.sleep(0.005)
    wall = time.time() - t0
    page_ms = browser.eval("window.uopcViz.readyAt")
    first_drawn = browser.eval("document.querySelectorAll('#nodes .node').length")
    requests = [e["params"]["request"]["url"] for e in browser.events if e.get("method") == "Network.requestWillBeSent"]
    others = [u for u in requests if u != url]
    if others:
        fails.append(f"the page requested {others}")
    nsteps = browser.eval("uopcViz.data.steps.length")
    if nsteps != len(steps):
        fails.append(f"{nsteps} panes, but uopc dumped {len(steps) - 1} passes (+ the input)")
    counted = 0
    for i, doc in enumerate(steps[:nsteps]):
        want_top, want_kernels = expected(doc)
        got = browser.eval(f"document.querySelector('nav button[data-step=\"{i}\"]').click(); "
                           "[document.querySelectorAll('#nodes .node').length, uopcViz.data.steps[uopcViz.view.step].kernels.length]")
        if got != [want_top, len(want_kernels)]:
            fails.append(f"pane {i}: drew {got[0]} nodes and {got[1]} kernels; the graph has {want_top} and {len(want_kernels)}")
        counted += got[0]
    # click: the last pane through its button (a real mouse click), then a node, a CALL and its kernel
    def rect(expr):
        return browser.eval(f"(() => {{ const e = {expr}; if (!e) return null; const r = e.getBoundingClientRect(); "
                            "return [r.left + r.width / 2, r.top + r.height / 2]; })()")
    last = nsteps - 1
    browser.eval(f"document.querySelector('nav button[data-step=\"{last}\"]').scrollIntoView()")
    xy = rect(f"document.querySelector('nav button[data-step=\"{last}\"]')")
    browser.click(*xy)
    if browser.eval("uopcViz.view.step") != last:
        fails.append(f"clicking pass {last}'s button did not open it")
    visible = ("(() => { const b = document.getElementById('svg').getBoundingClientRect(); "
               "return [...document.querySelectorAll('#nodes .node%s')].find((e) => { const r = e.getBoundingClientRect(); "
               "const x = r.left + r.width / 2, y = r.top + r.height / 2; return x > b.left + 5 && x < b.right - 5 && y > b.top + 40 && y < b.bottom - 5; }); })()")
    xy = rect(visible % ":not(.call)")
    clicked = None
    if not xy:
        fails.append("no node of the last pane is on screen to click")
    else:
        browser.click(*xy)
        sel = browser.eval("uopcViz.view.sel")
        head = browser.eval("document.querySelector('#info h3').textContent")
        op = browser.eval(f"uopcViz.data.regions[uopcViz.view.region].nodes[{sel}][0]") if sel is not None and sel >= 0 else None
        if sel is None or sel < 0 or not head.startswith(f"%{sel} {op}"):
            fails.append(f"clicked a node: selection {sel}, info panel says {head!r}")
        clicked = head
    kernels = expected(steps[last])[1]
    kernel_result = "no kernels"
    if kernels:
        xy = rect(visible % ".call")
        if not xy:
            fails.append("no kernel CALL of the last pane is on screen to click")
        else:
            browser.click(*xy)
            xy = rect("document.querySelector('#info button.open')")
            if not xy:
                fails.append("clicking a CALL shows no 'open kernel' button")
            else:
                browser.click(*xy)
                got = browser.eval("[uopcViz.data.regions[uopcViz.view.region].kernel, document.querySelectorAll('#nodes .node').length, "
                                   "document.getElementById('source').textContent.length, document.getElementById('srchead').textContent]")
                is_kernel, drawn, srclen, srchead = got
                if not is_kernel or drawn not in kernels.values():
                    fails.append(f"opened a kernel: kernel={is_kernel}, {drawn} nodes drawn; the kernel bodies have {sorted(set(kernels.values()))}")
                elif srclen == 0:
                    fails.append(f"opened a kernel: no source shown ({srchead!r})")
                kernel_result = f"opened a kernel ({drawn} nodes, {srclen} characters of source)"
    size = os.path.getsize(html_path)
    status = "FAIL" if fails else "PASS"
    print(f"{status} viz {name}: {nsteps} panes, {counted} nodes drawn in all, first pane {first_drawn} nodes; "
          f"clicked {clicked!r}; {kernel_result}; page {size / 1e6:.2f} MB; drawn {page_ms:.0f} ms after navigation "
          f"(test's clock: {wall * 1000:.0f} ms)")
    for f in fails:
        print(f"  {f}")
    return not fails


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--corpus", help="../shared/corpus: adds red_softmax and perf_transformer_12L")
    ap.add_argument("--graph", action="append", default=[], help="more graphs (NAME=PATH or PATH)")
    ap.add_argument("--work", default=None, help="where the pages are written (kept for a look)")
    ap.add_argument("--target", default="c")
    a = ap.parse_args()
    exe = find_chromium()
    if not exe:
        print("SKIP viz: no Chromium (install Debian's chromium: scripts/setup.sh does, or set $UOPC_CHROMIUM)")
        return SKIP
    graphs = [(os.path.basename(os.path.dirname(os.path.abspath(__file__))) + "-axpy",
               os.path.join(os.path.dirname(__file__), "..", "lit", "cli", "Inputs", "axpy.json"))]
    for g in a.graph:
        name, _, path = g.rpartition("=")
        base = os.path.basename(path)
        graphs.append((name or (os.path.basename(os.path.dirname(os.path.abspath(path))) if base == "graph.json" else base), path))
    skipped = []
    if a.corpus:
        for case in ("public/red_softmax", "perf/perf_transformer_12L"):
            p = os.path.join(a.corpus, case, "graph.json")
            if os.path.exists(p):
                graphs.append((os.path.basename(case), p))
            else:
                skipped.append(case)
    work = a.work or tempfile.mkdtemp(prefix="uopc-viz-")
    os.makedirs(work, exist_ok=True)
    profile = tempfile.mkdtemp(prefix="uopc-viz-chromium-")
    ok = 0
    try:
        browser = Browser(exe, profile)
        try:
            for name, path in graphs:
                html = os.path.join(work, name + ".html")
                dump = os.path.join(work, name + ".dump")
                shutil.rmtree(dump, ignore_errors=True)
                inp = os.path.join(work, name + ".input.json")
                subprocess.run([a.uopc, "convert", path, "-o", inp], check=True)
                r = subprocess.run([a.uopc, path, "--viz", html, "--dump-dir", dump, "--target", a.target],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"FAIL viz {name}: uopc exited {r.returncode}: {r.stderr.strip()}")
                    continue
                ok += check_page(browser, html, dump, inp, name)
        finally:
            browser.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    for s in skipped:
        print(f"SKIP viz {s}: not in the corpus")
    print(f"{ok} passed, {len(graphs) - ok} failed, {len(skipped)} skipped")
    return 0 if ok == len(graphs) else 1


if __name__ == "__main__":
    sys.exit(main())
