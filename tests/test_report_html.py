"""The HTML report: escaping, and a real headless Chromium session over it."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.cli.app import app
from sage_tod.contracts.criteria import Span
from sage_tod.contracts.turns import load_turns_unchecked
from sage_tod.contracts.verdicts import read_verdicts
from sage_tod.outputs.report_html import render_report

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("SAGE_TOD_ARTIFACTS", ROOT / "build" / "test-artifacts"))
TAU2_LOG = ROOT / "tests" / "fixtures" / "logs" / "tau2-bench-airline-simulation.json"
AIRLINE_SPEC = ROOT / "examples" / "tau-bench-airline" / "spec.yaml"
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
    # the conversations card counts dialogues, a failed one being one with a failing turn
    vs = read_verdicts(tmp_path / "v.jsonl")
    failed = {v.dialogue_id for v in vs if v.verdict == "failure"}
    n = len({v.dialogue_id for v in vs})
    assert (f'<span class="muted">conversations</span><b>{n}</b> '
            f'<span class="failure">{len(failed)} failed</span>') in text


def _chromium() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@contextmanager
def _browser(tmp_path: Path) -> Iterator[Any]:
    found = _chromium()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian chromium and chromium-driver (.ci/run does)")
        pytest.skip("chromium/chromedriver not installed (apt-get install chromium "
                    "chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = found
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1280,1600",
                f"--user-data-dir={tmp_path / 'profile'}"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(driver_path), options=opts)
    try:
        yield drv
    finally:
        drv.quit()


def test_report_in_headless_chromium(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page = _report(tmp_path)
    with _browser(tmp_path) as drv:
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
        # every turn of the failed conversations, the acceptable ones among them too
        Select(drv.find_element(By.ID, "f-verdict")).select_by_value("")
        Select(drv.find_element(By.ID, "f-conversation")).select_by_value("failure")
        rows = drv.find_elements(By.CSS_SELECTOR, "tr.row")
        visible = [r for r in rows if r.is_displayed()]
        failed = {r.find_element(By.TAG_NAME, "td").text.rsplit(":", 1)[0]
                  for r in rows if r.get_attribute("data-verdict") == "failure"}
        assert {r.find_element(By.TAG_NAME, "td").text.rsplit(":", 1)[0]
                for r in visible} == failed
        assert any(r.get_attribute("data-verdict") != "failure" for r in visible)
        Select(drv.find_element(By.ID, "f-conversation")).select_by_value("")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "report-demo.png"
        assert drv.save_screenshot(str(shot)) and shot.stat().st_size > 10_000


class _ToolSpan(Span):
    """A span in the shape the per-call criteria write (docs/formats.md §3): `source`
    tool_call/tool_result, `call` and `path` beside `index`. Built here so the report's
    reading of those fields is tested whatever the verdict model accepts today."""

    source: str  # type: ignore[assignment]
    call: int | None = None
    path: str | None = None


def _tool_agent_report(tmp_path: Path, refusal: str = "Error: flight HAT021 not found"
                       ) -> tuple[Path, dict[str, Any]]:
    """The τ² airline fixture imported, evaluated (s1) and reported, with one criterion's
    evidence pointing into a passenger of the get_reservation_details result and its
    support into the cancel call's argument; one flight-status call marked failed."""
    turns = tmp_path / "turns.jsonl"
    r = runner.invoke(app, ["import", "tau-bench", str(TAU2_LOG), "--spec", str(AIRLINE_SPEC),
                            "--out", str(turns)])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in turns.read_text().splitlines()]
    status_calls = [(i, j) for i, row in enumerate(rows)
                    for j, c in enumerate(row.get("tool_calls") or ())
                    if c["name"] == "get_flight_status"]
    i, j = status_calls[-1]  # the report must mark a refused call: make one
    refused = {"error": True, "result": refusal}
    rows[i]["tool_calls"][j] |= refused
    for row in rows[i + 1:]:  # and its copies in the later turns' explicit history
        row["history"][i + 1]["tool_calls"][j] |= refused
    turns.write_text("".join(json.dumps(x) + "\n" for x in rows))
    verdicts = tmp_path / "v.jsonl"
    r = runner.invoke(app, ["evaluate", "--spec", str(AIRLINE_SPEC), "--turns", str(turns),
                            "--out", str(verdicts), "--config", "s1", "--quiet"])
    assert r.exit_code == 0, r.output
    recs = load_turns_unchecked(turns)
    vs = read_verdicts(verdicts)
    # the turn that cancels: its history holds the reservation lookup
    k = next(n for n, rec in enumerate(recs)
             if [c.name for c in rec.turn.tool_calls or ()] == ["cancel_reservation"])
    turn = recs[k].turn
    h = next(n for n, e in enumerate(turn.history or ())
             if e.tool_calls and e.tool_calls[0].name == "get_reservation_details")
    lookup = (turn.history or ())[h].tool_calls[0].result
    name = lookup["passengers"][1]["first_name"]
    rid = turn.tool_calls[0].arguments["reservation_id"] if turn.tool_calls else ""
    crit = vs[k].criteria[0].model_copy(update={
        "evidence": _ToolSpan(source="tool_result", index=h, call=0,
                              path="passengers.1.first_name", start=0, end=len(name),
                              text=name),
        "support": _ToolSpan(source="tool_call", index=None, call=0, path="reservation_id",
                             start=0, end=len(rid), text=rid)})
    vs[k] = vs[k].model_copy(update={"criteria": [crit]})
    page = tmp_path / "report.html"
    page.write_text(render_report(vs, {rec.turn.key: rec.turn for rec in recs},
                                  title="τ²-bench airline, task 0"))
    return page, {"row": k, "entry": h, "name": name, "rid": rid, "lookup": lookup,
                  "error_turn": i, "error_call": j, "rows": rows}


def test_tool_results_are_escaped(tmp_path: Path) -> None:
    page, _ = _tool_agent_report(tmp_path, refusal="Error: " + EVIL)
    text = page.read_text()
    assert text.count("<script>") == 1  # the page's own script only
    assert "Error: &lt;script&gt;window.pwned = 1&lt;/script&gt; &amp; &quot;quotes&quot;" in text
    assert '<span class="badge err">error</span>' in text
    # each distinct call's body is on the page once, however many later turns repeat it
    calls = {json.dumps([c.name, c.arguments, c.result, c.error], sort_keys=True)
             for rec in load_turns_unchecked(tmp_path / "turns.jsonl")
             for c in rec.turn.tool_calls or ()}
    assert text.count("<template id=") == len(calls) > 3


def test_tool_agent_report_in_headless_chromium(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    page, info = _tool_agent_report(tmp_path)
    with _browser(tmp_path) as drv:
        drv.get(page.as_uri())
        assert drv.execute_script("return window.pwned === undefined")
        rows = drv.find_elements(By.CSS_SELECTOR, "tr.row")
        rows[info["row"]].click()
        detail = drv.find_element(By.ID, f"d-{info['row']}")
        # no empty-user history rows: every row shown has words after its label
        for utt in detail.find_elements(By.CSS_SELECTOR, ".hist .utt"):
            label = utt.find_element(By.CSS_SELECTOR, ".who").text
            assert utt.text[len(label):].strip(), utt.get_attribute("outerHTML")
        entry = detail.find_element(By.CSS_SELECTOR, f'.entry[data-entry="{info["entry"]}"]')
        calls = entry.find_elements(By.CSS_SELECTOR, "details.call")
        assert [c.get_attribute("data-tool") for c in calls] == [
            "get_reservation_details", "get_flight_status", "get_flight_status"]
        lookup = calls[0]
        assert lookup.get_attribute("open") is not None  # cited: shown open
        result = lookup.find_element(By.CSS_SELECTOR, "pre.result")
        assert json.loads(result.text) == info["lookup"]  # pretty-printed JSON, intact
        assert "\n  " in result.text
        mark = result.find_element(By.CSS_SELECTOR, "mark.ev")
        assert mark.text == json.dumps(info["name"])
        # an uncited call is collapsed; a click opens it
        other = calls[1]
        assert other.get_attribute("open") is None
        assert not other.find_elements(By.CSS_SELECTOR, "pre.args")  # filled on first open
        other.find_element(By.TAG_NAME, "summary").click()
        assert json.loads(other.find_element(By.CSS_SELECTOR, "pre.args").text) == \
            info["rows"][info["entry"] - 1]["tool_calls"][1]["arguments"]
        # the turn's own call, with the support span in its argument
        own = detail.find_element(By.CSS_SELECTOR, ".turn-calls details.call")
        assert own.get_attribute("data-tool") == "cancel_reservation"
        assert own.find_element(By.CSS_SELECTOR, "pre.args mark.sup").text == \
            json.dumps(info["rid"])
        assert f"tool_result (history[{info['entry']}], call 0, passengers.1.first_name)" \
            in detail.text
        # the refused call carries the error badge, in the entry of its turn
        bad = detail.find_element(
            By.CSS_SELECTOR, f'.entry[data-entry="{info["error_turn"] + 1}"] '
            f'details.call[data-call="{info["error_call"]}"]')
        assert "err" in (bad.get_attribute("class") or "")
        assert bad.find_element(By.CSS_SELECTOR, ".badge.err").text == "error"
        bad.find_element(By.TAG_NAME, "summary").click()
        assert bad.find_element(By.CSS_SELECTOR, "pre.result").text == \
            "Error: flight HAT021 not found"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        drv.set_window_size(1280, 1900)
        drv.execute_script("arguments[0].scrollIntoView({block: 'center'})", mark)
        drv.execute_script("window.scrollTo(0, arguments[0].getBoundingClientRect().top"
                           " + window.scrollY - 8)", rows[info["row"]])
        shot = ARTIFACTS / "report-tool-agent.png"
        assert drv.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
