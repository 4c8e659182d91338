"""The app in a real browser: Playwright for Python driving Debian's chromium (never a downloaded browser).

Flows: training form -> plan page with the chart drawn; the share link reopens the same plan; exports download
from the plan page; compare two accelerators and two saved plans; language switch;
the memory calculator answers as a field changes; no console errors or CSP violations on any page.
Skipped with the reason when playwright or /usr/bin/chromium is missing (.ci/run installs both).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
CHROMIUM = os.environ.get("GPUPLAN_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

from gpuplan.web.app import create_app  # noqa: E402
from gpuplan.web.local import serve_in_thread  # noqa: E402


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server, url = serve_in_thread(create_app(f"sqlite:///{tmp_path_factory.mktemp('browser') / 'p.db'}"), timeout_s=30)
    yield url
    server.should_exit = True


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context()
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    problems: list[str] = []
    pg.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    pg.problems = problems
    yield pg
    ctx.close()
    assert problems == []


def test_form_to_plan_to_chart_and_share_link(page: Any, base_url: str, browser: Any) -> None:
    page.goto(f"{base_url}/train?lang=en")
    page.select_option("#model", "llama3-8b")
    page.fill("#tokens", "1e12")
    page.fill("#deadline", "30")
    page.click("#go")
    page.wait_for_url("**/p/*")
    page.wait_for_selector("#chart[data-drawn] .main-svg")  # plotly drew the Pareto chart
    assert page.locator("#plans tbody tr").count() >= 2
    assert "80%" in page.inner_text("main") and page.locator("#recommendation").is_visible()
    url, first = page.url, page.inner_text("#plans")
    other = browser.new_context().new_page()  # the link alone, in a fresh browser context
    other.goto(url)
    other.wait_for_selector("#chart[data-drawn]")
    assert other.inner_text("#plans") == first
    other.context.close()


def test_exports_download_from_the_plan_page(page: Any, base_url: str) -> None:
    r = page.request.post(f"{base_url}/api/v1/plan/infer",
                          data={"model": "llama3.1-8b", "qps": 5, "ttft_p99": 2, "tpot_p99": 0.05})
    assert r.ok
    plan = r.json()
    page.goto(f"{base_url}{plan['share_url']}?lang=zh")
    page.wait_for_selector("#chart[data-drawn]")
    for link, name, check in (("#export-md", "md", "推荐"), ("#export-csv", "csv", "rank,accelerator,instance")):
        with page.expect_download() as info:
            page.click(link)
        download = info.value
        assert download.suggested_filename == f"gpuplan-{plan['plan_id']}.{name}"
        assert check in Path(download.path()).read_text(encoding="utf-8")
    page.click("#cli-command-toggle")
    assert page.inner_text("#cli-command").startswith("gpuplan plan infer --model llama3.1-8b")


def test_compare_accelerators_and_two_saved_plans(page: Any, base_url: str) -> None:
    page.goto(f"{base_url}/compare?lang=en")
    page.select_option("#model", "llama3.1-8b")
    page.select_option("#accelerators", ["h100-sxm5-80gb", "h20-96gb"])
    page.select_option("#job", "serve")
    page.click("#go")
    page.wait_for_selector("#chart[data-drawn] .main-svg")
    assert page.locator("#options tbody tr").count() == 2
    ids = []
    for deadline in (30, 20):  # two saved plans, then the history page ticks both
        r = page.request.post(f"{base_url}/api/v1/plan/train",
                              data={"model": "llama3-8b", "tokens": 1e12, "deadline": deadline})
        assert r.ok
        ids.append(r.json()["plan_id"])
    page.goto(f"{base_url}/history?lang=zh")
    for pid in ids:
        page.check(f"input[name=plan][value='{pid}']")
    page.click("#compare-picked")
    page.wait_for_url("**/compare/plans?*")
    assert page.locator("#inputs tr.differs").count() == 1 and "deadline" in page.inner_text("#inputs tr.differs")


def test_language_switch(page: Any, base_url: str) -> None:
    page.goto(f"{base_url}/?lang=en")
    assert page.get_attribute("html", "lang") == "en"
    page.click("#lang-zh")
    page.wait_for_load_state()
    assert page.get_attribute("html", "lang") == "zh-CN" and "训练规划" in page.inner_text("header")
    page.goto(f"{base_url}/memory")  # the cookie keeps the choice
    assert page.get_attribute("html", "lang") == "zh-CN"


def test_memory_answers_as_fields_change(page: Any, base_url: str) -> None:
    page.goto(f"{base_url}/memory?lang=en")
    page.wait_for_selector("#memory-chart[data-drawn]")
    before = page.inner_text("#memory-total")
    page.fill("#tp", "8")
    page.wait_for_function("t => document.querySelector('#memory-total').innerText !== t", arg=before)
    assert page.inner_text("#memory-total") != before
    page.wait_for_selector("#memory-chart[data-drawn]")


@pytest.mark.parametrize("path", ["/", "/serve", "/catalog?kind=instances", "/catalog/accelerators/h20-96gb",
                                  "/history", "/validation", "/compare"])
def test_pages_load_without_console_errors(page: Any, base_url: str, path: str) -> None:
    for lang in ("en", "zh"):
        page.goto(f"{base_url}{path}{'&' if '?' in path else '?'}lang={lang}")
        page.wait_for_load_state("networkidle")


def test_api_docs_render_offline_from_vendored_swagger_ui(page: Any, base_url: str) -> None:
    """/api/docs: Swagger UI from static/vendor (no CDN: this page has no network beyond the app, and any request
    elsewhere is aborted and counted), inside the app's CSP (no violation reaches the console)."""
    outside: list[str] = []

    def only_the_app(route: Any) -> None:
        if route.request.url.startswith(base_url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_app)
    page.goto(f"{base_url}/api/docs")
    page.wait_for_selector(".swagger-ui .opblock-tag", timeout=30_000)
    assert page.locator(".opblock").count() >= 10 and "plan/train" in page.inner_text("#swagger-ui")
    assert outside == []


def test_the_csrf_protected_form_works_here_and_is_refused_from_another_site(page: Any, base_url: str,
                                                                             browser: Any) -> None:
    page.goto(f"{base_url}/serve?lang=en")
    token = page.locator('#serve-form input[name="csrf_token"]').get_attribute("value")
    assert token and len(token) >= 40
    page.fill('input[name="qps"]', "3")
    page.click("#go")
    page.wait_for_url("**/p/*")  # the app's own form, with its token, goes through
    # another site's page posting the same fields to the app: the browser sends no token, the app answers 403
    ctx = browser.new_context()
    evil = ctx.new_page()
    evil.set_content(f'<form id="f" method="post" action="{base_url}/serve">'
                     '<input name="model" value="llama3.1-8b"><input name="qps" value="3">'
                     '<input name="ttft_p99" value="2"><input name="tpot_p99" value="0.05"></form>')
    with evil.expect_navigation():
        evil.eval_on_selector("#f", "f => f.submit()")
    assert "/serve" in evil.url and "reload the page" in evil.inner_text("body")
    ctx.close()


def test_the_menu_collapses_on_a_phone(browser: Any, base_url: str) -> None:
    ctx = browser.new_context(viewport={"width": 375, "height": 740})
    pg = ctx.new_page()
    pg.goto(f"{base_url}/?lang=en")
    assert not pg.is_visible("#nav a[href='/history']") and pg.is_visible("#nav-button")
    assert pg.eval_on_selector("header.top", "h => h.getBoundingClientRect().height") < 120
    pg.click("#nav-button")
    assert pg.is_visible("#nav a[href='/history']")
    pg.click("#nav a[href='/history']")
    pg.wait_for_url("**/history")
    ctx.close()
    wide = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    wide.goto(f"{base_url}/?lang=en")
    assert wide.is_visible("#nav a[href='/history']") and not wide.is_visible("#nav-button")
    wide.context.close()
