"""The HTML report: escaping, and a real headless Chromium session over it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.cli.app import app

runner = CliRunner()
ARTIFACTS = Path(os.environ.get("SAGE_TOD_ARTIFACTS",
                                Path(__file__).resolve().parents[1] / "build" / "test-artifacts"))
EVIL = '<script>window.pwned = 1</script> & "quotes"'


def _report(tmp_path: Path) -> Path:
    rows = [json.loads(x) for x in demo.turns_path().read_text().splitlines() if x.strip()]
    rows[0]["user"] = EVIL + " " + rows[0]["user"]
    turns = tmp_path / "turns.jsonl"
    turns.write_text("".join(json.dumps(r) + "\n" for r in rows))
    verdicts = tmp_path / "v.jsonl"
    r = runner.invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns", str(turns),
                            "--out", str(verdicts), "--config", "s1", "--quiet"])
    assert r.exit_code == 0, r.output
    page = tmp_path / "report.html"
    r = runner.invoke(app, ["report", str(verdicts), "--turns", str(turns), "--spec",
                            str(demo.spec_path()), "--out", str(page)])
    assert r.exit_code == 0, r.output
    return page


def test_report_is_self_contained_and_escaped(tmp_path: Path) -> None:
    text = _report(tmp_path).read_text()
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in text
    assert "<script>window.pwned" not in text
    assert text.count("<script>") == 1  # the page's own filter script
    assert "http://" not in text and "https://" not in text  # nothing fetched at view time
    assert "P / R / F1" in text and "criteria decided by" in text


def _chromium() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def test_report_in_headless_chromium(tmp_path: Path) -> None:
    found = _chromium()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian chromium and chromium-driver (.ci/run does)")
        pytest.skip("chromium/chromedriver not installed (apt-get install chromium "
                    "chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser, driver_path = found
    page = _report(tmp_path)
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1280,1600",
                f"--user-data-dir={tmp_path / 'profile'}"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(driver_path), options=opts)
    try:
        drv.get(page.as_uri())
        assert drv.execute_script("return window.pwned === undefined")
        first_user = drv.find_element(By.CSS_SELECTOR, "#d-0 .u-t").get_attribute("textContent")
        assert first_user is not None and first_user.startswith("<script>window.pwned")
        Select(drv.find_element(By.ID, "f-verdict")).select_by_value("failure")
        visible = [r for r in drv.find_elements(By.CSS_SELECTOR, "tr.row") if r.is_displayed()]
        assert visible and all(r.get_attribute("data-verdict") == "failure" for r in visible)
        assert drv.find_element(By.ID, "f-count").text == f"{len(visible)} turn(s)"
        row = next(r for r in visible if r.find_element(By.TAG_NAME, "td").text == "demo-r06:1")
        row.click()
        detail = drv.find_element(By.ID, f"d-{row.get_attribute('data-idx')}")
        assert detail.is_displayed()
        mark = detail.find_element(By.CSS_SELECTOR, ".u-t mark.ev")
        assert mark.text == "4"
        assert "record value '4'" in detail.text
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "report-demo.png"
        assert drv.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    finally:
        drv.quit()
