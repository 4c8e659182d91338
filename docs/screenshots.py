"""Screenshots of the web app's main pages in Chinese and English, for docs/web.md.

    pip install -e ".[web]" playwright
    python docs/screenshots.py                    # writes docs/images/web-<page>-<lang>.png
    python docs/screenshots.py --out /tmp/shots --chromium /usr/bin/chromium

Starts `gpuplan serve`'s app in this process on a free loopback port, with an empty data folder and an empty
user config folder (so the pictures show the built-in catalog and calibration only), computes one training and
one serving plan through the JSON API, and photographs each page with Playwright driving a local chromium
(no browser is downloaded), 1280 pixels wide and at most 1150 high (the top of a long page). Pages with a
chart are taken once plotly has drawn it. The Chinese pages need a CJK font on the machine (Debian:
apt-get install fonts-wqy-microhei, or fonts-noto-cjk).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "images"
TRAIN = {"model": "llama3-8b", "tokens": 1e12, "deadline": 30, "top": 5}
# a China-market serving load: rentals of export-controlled parts run on cards already in China (a warning)
INFER = {"model": "qwen2.5-7b", "qps": 5, "ttft_p99": 2, "tpot_p99": 0.05, "market": "cn"}
COMPARE = ("/compare?job=train&model=llama3-8b&accelerators=h100-sxm5-80gb&accelerators=ascend-910b"
           "&accelerators=h20-96gb&tokens=1e12&deadline=30")
VIEWPORT = {"width": 1280, "height": 860}
MAX_HEIGHT = 1150  # the top of a long page: the form or the recommendation and the ranked table


@contextmanager
def serving(folder: Path) -> Iterator[str]:
    """The app on a free loopback port, its store and user config in `folder`."""
    os.environ["XDG_CONFIG_HOME"] = str(folder / "config")
    os.environ["GPUPLAN_DATA_DIR"] = str(folder / "data")
    from gpuplan.web.app import create_app
    from gpuplan.web.local import serve_in_thread

    server, base = serve_in_thread(create_app(f"sqlite:///{folder / 'plans.db'}"))
    try:
        yield base
    finally:
        server.should_exit = True


def plan(base: str, kind: str, body: dict[str, Any]) -> str:
    """The share path of a plan computed through the API."""
    req = urllib.request.Request(f"{base}/api/v1/plan/{kind}", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=600) as r:
        return str(json.load(r)["share_url"])


def pages(train_path: str, infer_path: str) -> list[tuple[str, str, str | None]]:
    """(name, path, selector to wait for) of each page photographed."""
    return [("train", "/train", "#train-form"), ("plan-train", train_path, "#chart[data-drawn] .main-svg"),
            ("plan-infer", infer_path, "#chart[data-drawn] .main-svg"),
            ("compare", COMPARE, "#chart[data-drawn] .main-svg"), ("memory", "/memory", "#memory-result"),
            ("catalog", "/catalog", "table"), ("validation", "/validation", "table")]


def shoot(base: str, out: Path, chromium: str, langs: tuple[str, ...]) -> list[Path]:
    from playwright.sync_api import sync_playwright

    train_path = plan(base, "train", TRAIN)
    infer_path = plan(base, "infer", INFER)
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        for lang in langs:
            ctx = browser.new_context(viewport=VIEWPORT, locale="zh-CN" if lang == "zh" else "en-US")
            page = ctx.new_page()
            page.set_default_timeout(120_000)
            for name, path, selector in pages(train_path, infer_path):
                sep = "&" if "?" in path else "?"
                page.goto(f"{base}{path}{sep}lang={lang}")
                if selector:
                    page.wait_for_selector(selector)
                page.wait_for_timeout(300)  # plotly's transitions settle
                target = out / f"web-{name}-{lang}.png"
                height = min(int(page.evaluate("document.documentElement.scrollHeight")), MAX_HEIGHT)
                page.screenshot(path=str(target), full_page=True,
                                clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": height})
                written.append(target)
            ctx.close()
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help="folder for the PNG files (default: docs/images)")
    ap.add_argument("--chromium", default=os.environ.get("GPUPLAN_CHROMIUM") or shutil.which("chromium")
                    or "/usr/bin/chromium", help="the chromium executable Playwright drives")
    ap.add_argument("--lang", action="append", choices=("zh", "en"), help="languages (default: both)")
    args = ap.parse_args(argv)
    if not Path(args.chromium).exists():
        print(f"no chromium at {args.chromium}: install it (apt-get install chromium) or pass --chromium",
              file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpuplan-shots-") as tmp, serving(Path(tmp)) as base:
        written = shoot(base, args.out, args.chromium, tuple(args.lang or ("zh", "en")))
    for path in written:
        print(f"{path} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
