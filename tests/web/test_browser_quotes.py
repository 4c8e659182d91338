"""Your own quotes in a real browser: the training form with a quote -> the plan page shows it as quoted by you
and a ranked plan costed with it; a plan's JSON export imported on the history page opens the same plan."""

from __future__ import annotations

from typing import Any

import pytest
from test_browser import CHROMIUM, base_url, browser, page  # noqa: F401  (the fixtures, one server per module)

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


def test_form_with_a_quote_to_plan_page(page: Any, base_url: str, tmp_path: Any) -> None:  # noqa: F811
    page.goto(f"{base_url}/train?lang=en")
    page.select_option("#model", "llama3-8b")
    page.fill("#tokens", "1e12")
    page.fill("#deadline", "30")
    page.click("#quotes-toggle")
    page.fill("#quote-accelerator", "h100")
    page.fill("#quote-price", "0.5")
    page.fill("#quote-source", "broker call")
    page.click("#go")
    page.wait_for_url("**/p/*")
    quotes = page.locator("#your-quotes")
    assert "quote-h100-sxm5-80gb" in quotes.inner_text()
    assert "0.5 USD / GPU-h" in quotes.inner_text() and "quoted by you" in quotes.inner_text()
    assert "used by a ranked plan" in quotes.inner_text()
    assert "quote-h100-sxm5-80gb" in page.locator("#plans").inner_text()
    plan_url = page.url.split("?")[0]
    # the JSON export, imported again on the history page, opens the same plan as an imported copy (its own id)
    with page.expect_download() as dl:
        page.click("#export-json")
    path = tmp_path / "plan.json"
    dl.value.save_as(path)
    page.goto(f"{base_url}/history?lang=en")
    page.set_input_files("#plan-file", str(path))
    page.click("#import-submit")
    page.wait_for_url("**/p/*")
    assert page.url.split("?")[0] != plan_url
    assert "(imported)" in page.content() and "quote-h100-sxm5-80gb" in page.locator("#plans").inner_text()
