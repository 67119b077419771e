"""The labelling page of `sage-tod audit page`: blind by construction, escaped, and driven
end to end in a real headless Chromium (label by keyboard, reload, export, score)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.cli.app import app
from sage_tod.outputs.audit_page import _AUDIT_CSS
from sage_tod.outputs.html_parts import PAGE_CSS as REPORT_CSS

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("SAGE_TOD_ARTIFACTS", ROOT / "build" / "test-artifacts"))
EVIL = '<script>window.pwned = 1</script> & "quotes"'
N = 8


def _audit(tmp_path: Path, n: int = N) -> tuple[Path, Path]:
    rows = [json.loads(x) for x in demo.turns_path().read_text().splitlines() if x.strip()]
    for r in rows:  # every turn carries the evil text, whichever the sample draws
        r["user"] = EVIL + " " + r["user"]
    turns = tmp_path / "turns.jsonl"
    turns.write_text("".join(json.dumps(r) + "\n" for r in rows))
    v = tmp_path / "v.jsonl"
    r = runner.invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns", str(turns),
                            "--out", str(v), "--config", "s1", "--quiet"])
    assert r.exit_code == 0, r.output
    a = tmp_path / "audit"
    r = runner.invoke(app, ["audit", "sample", "--verdicts", str(v), "--turns", str(turns),
                            "--spec", str(demo.spec_path()), "--out", str(a), "--n", str(n)])
    assert r.exit_code == 0, r.output
    return a, v


def _page(a: Path, out: Path, annotator: str = "alice") -> str:
    r = runner.invoke(app, ["audit", "page", str(a), "--annotator", annotator, "--out",
                            str(out), "--overwrite"])
    assert r.exit_code == 0, r.output
    return out.read_text()


def test_the_page_holds_no_verdict(tmp_path: Path) -> None:
    a, v = _audit(tmp_path, n=100)  # every demo turn
    page = _page(a, tmp_path / "p.html")
    # the page is a function of the items alone: another key, or none, gives the same bytes
    key = json.loads((a / "key.json").read_text())
    flip = {"failure": "acceptable", "acceptable": "failure", "undecided": "failure"}
    for e in key["items"]:
        e["verdict"], e["classes"], e["stratum"] = flip[e["verdict"]], [], "x"
    (a / "key.json").write_text(json.dumps(key))
    assert _page(a, tmp_path / "p2.html") == page
    (a / "key.json").unlink()
    assert _page(a, tmp_path / "p3.html") == page
    # and nothing of what the tool said is in its source (the stylesheet is a constant,
    # shared with the report, whose class names include .undecided and .repair)
    head, style_and_rest = page.split("<style>", 1)
    style, rest = style_and_rest.split("</style>", 1)
    assert style == REPORT_CSS + _AUDIT_CSS
    low = (head + rest).lower()
    for word in ("verdict", "undecided", "confidence", "margin", "decided_by", "repair",
                 "rationale", "evidence"):
        assert word not in low, word
    for d in map(json.loads, v.read_text().splitlines()):
        if "dialogue_id" not in d:
            continue  # the run header
        for c in d["criteria"]:
            for text in (c["question"], c["rationale"], c.get("repair")):
                if text and len(text) > 12:
                    assert text not in page and text.replace("'", "&#x27;") not in page
    assert '"gold"' not in page  # nor the turns' reference labels and notes
    for t in map(json.loads, demo.turns_path().read_text().splitlines()):
        note = (t.get("gold") or {}).get("note")
        if note and len(note) > 12:
            assert note not in page and note.replace("'", "&#x27;") not in page


def test_the_page_is_self_contained_and_escaped(tmp_path: Path) -> None:
    a, _ = _audit(tmp_path)
    page = _page(a, tmp_path / "p.html", annotator='</script><script>window.pwned=2</script>')
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in page
    assert "<script>window.pwned" not in page
    assert page.count("<script") == 2  # the config (JSON) and the page's own script
    assert "http://" not in page and "https://" not in page
    assert "<script>window.pwned=2" not in page
    assert "\\u003c/script\\u003e\\u003cscript\\u003ewindow.pwned=2" in page  # in the JSON


def _chromium() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def _driver(tmp_path: Path, downloads: Path) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    found = _chromium()
    assert found is not None
    browser, driver_path = found
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
                f"--user-data-dir={tmp_path / 'profile'}"):
        opts.add_argument(arg)
    opts.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                           "download.prompt_for_download": False})
    drv = webdriver.Chrome(service=Service(driver_path), options=opts)
    drv.execute_cdp_cmd("Browser.setDownloadBehavior",
                        {"behavior": "allow", "downloadPath": str(downloads)})
    return drv


def _wait_file(folder: Path, name: str) -> Path:
    for _ in range(100):
        p = folder / name
        if p.is_file() and p.stat().st_size > 0:
            return p
        time.sleep(0.1)
    raise AssertionError(f"no {name} downloaded into {folder}: {list(folder.iterdir())}")


# what each annotator presses on items 1..N (a class key implies failure)
KEYS = {"alice": ["f", "1", "a", "a", "c", "4", "a", "f"],
        "bob": ["f", "a", "a", "a", "a", "4", "f", "f"]}
LABEL_OF = {"f": "failure", "a": "acceptable", "c": "cant_tell", "1": "failure",
            "4": "failure"}


def test_label_by_keyboard_reload_export_and_score(tmp_path: Path) -> None:
    if _chromium() is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian chromium and chromium-driver (.ci/run does)")
        pytest.skip("chromium/chromedriver not installed (apt-get install chromium "
                    "chromium-driver)")
    from selenium.webdriver.common.by import By

    a, _ = _audit(tmp_path)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    exported: dict[str, Path] = {}
    drv = _driver(tmp_path, downloads)
    try:
        for who, keys in KEYS.items():
            page = tmp_path / f"audit-{who}.html"
            _page(a, page, who)
            drv.get(page.as_uri())
            assert drv.execute_script("return window.pwned === undefined")
            body = drv.find_element(By.TAG_NAME, "body")
            assert drv.find_element(By.ID, "count").text == f"0 / {N} labelled"
            shown = [s for s in drv.find_elements(By.CSS_SELECTOR, "section.item")
                     if s.is_displayed()]
            assert len(shown) == 1 and shown[0].get_attribute("data-item") == "item-001"
            user = shown[0].find_element(By.CSS_SELECTOR, ".u-t").get_attribute("textContent")
            assert user is not None and user.startswith("<script>window.pwned")
            for k, key in enumerate(keys):
                body.send_keys(key)
                if k == 2:  # a note on item 3: n focuses it, typing stays in it, Esc leaves
                    body.send_keys("n")
                    drv.switch_to.active_element.send_keys("fa: not sure")
                    drv.switch_to.active_element.send_keys("\ue00c")  # Escape
                body.send_keys("j")
            assert drv.find_element(By.ID, "count").text == f"{N} / {N} labelled"
            if who == "alice":
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                drv.find_element(By.ID, "nav").find_elements(By.TAG_NAME, "button")[0].click()
                assert drv.save_screenshot(str(ARTIFACTS / "audit-page.png"))
            drv.refresh()  # autosave: everything is still there after a reload
            assert drv.find_element(By.ID, "count").text == f"{N} / {N} labelled"
            navs = drv.find_element(By.ID, "nav").find_elements(By.TAG_NAME, "button")
            assert [b.get_attribute("class").split()[0] for b in navs] == [
                "l-" + LABEL_OF[k] for k in keys]
            navs[1].click()
            assert drv.find_element(By.CSS_SELECTOR, "input[value=IUV]").is_selected() == (
                keys[1] == "1")
            drv.find_element(By.ID, "export").click()
            exported[who] = _wait_file(downloads, f"labels-{who}.json")
    finally:
        drv.quit()
    alice = json.loads(exported["alice"].read_text())
    assert alice["annotator"] == "alice" and len(alice["labels"]) == N
    got = [(x["label"], x["class"]) for x in alice["labels"]]
    assert got[0] == ("failure", None) and got[1] == ("failure", "IUV")
    assert got[5] == ("failure", "UV") and got[4] == ("cant_tell", None)
    assert alice["labels"][2]["note"] == "fa: not sure"  # typed keys stayed in the note
    assert alice["labels"][2]["label"] == "acceptable"
    out = tmp_path / "score.json"
    r = runner.invoke(app, ["audit", "score", str(a), str(exported["alice"]),
                            str(exported["bob"]), "--json", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    la = [LABEL_OF[k] for k in KEYS["alice"]]
    lb = [LABEL_OF[k] for k in KEYS["bob"]]
    assert res["agreement"]["kappa"] == pytest.approx(cohen_kappa_score(la, lb))
    assert res["items"] == N
