"""`sage-tod specs from-tools`: a starting spec from OpenAI function schemas.

Real inputs: τ-bench's airline and retail tool schemas (the data directory,
skipped when absent), whose write/read split is checked against τ²-bench's own
`ToolType.WRITE` marks in tools.py, and the OpenAI cookbook's drone functions
(tests/fixtures/logs/README.md), a bare `functions` list with enums, integers,
objects and argument-less tools.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sage_tod.cli.app import app
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import load_spec
from sage_tod.importers.tool_schemas import classify_by_name, spec_from_tools

runner = CliRunner()
FIXTURES = Path(__file__).parent / "fixtures" / "logs"
DRONE = FIXTURES / "openai-cookbook-drone-functions.json"
DOMAINS = Path(os.environ.get("SAGE_TOD_DATA", "/nonexistent")) / "tool-agents" / "domains"


def _domain(name: str) -> Path:
    p = DOMAINS / name / "tools-openai.json"
    if not p.is_file():
        pytest.skip(f"{p} not present (set SAGE_TOD_DATA; docs/datasets.md)")
    return p


def _tau2_kinds(domain: str) -> dict[str, str]:
    """tool name -> WRITE/READ/GENERIC as τ²-bench's tools.py marks it (`@is_tool(...)`)."""
    src = (DOMAINS / domain / "tools.py").read_text()
    return dict((name, kind) for kind, name in re.findall(
        r"^\s*@is_tool\(ToolType\.(\w+)\)\s*\n\s*def (\w+)", src, re.M))


def _run(tmp_path: Path, tools: Path, *extra: str) -> tuple[Path, str]:
    out = tmp_path / "spec.yaml"
    r = runner.invoke(app, ["specs", "from-tools", str(tools), "--out", str(out), *extra])
    assert r.exit_code == 0, r.output
    return out, r.output


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_tau_domains_write_split_matches_tau2_marks(tmp_path: Path, domain: str) -> None:
    tools_path = _domain(domain)
    out, printed = _run(tmp_path, tools_path)
    spec = load_spec(out)
    marks = _tau2_kinds(domain)
    names = [t["function"]["name"] for t in json.loads(tools_path.read_text())]
    marked = [n for n in names if n in marks]
    assert len(marked) >= len(names) - 1  # think is commented out in τ² tools.py
    for n in marked:
        expect_write = marks[n] == "WRITE"
        assert (n in spec.workflows) == expect_write, (n, marks[n])
        assert re.search(rf"^{n}: {'write' if expect_write else 'read'} \(", printed, re.M)
    # transfer_to_human_agents is GENERIC in τ²: neither a write nor a failure -> a read
    assert "transfer_to_human_agents: read (name starts with 'transfer_to_'" in printed
    for wf in spec.workflows.values():
        own = wf.tools[wf.id]
        assert own.writes and own.confirms
        assert dict(own.args) == {s: s for s in wf.slots}
        reads = {n for n, t in wf.tools.items() if not t.writes}
        assert reads == {n for n in names if n not in spec.workflows}
        # the hand-off is marked as one: allowed only for what no write tool serves
        assert {n for n, t in wf.tools.items() if t.handoff} == {"transfer_to_human_agents"}


def test_airline_slots_types_required_and_order(tmp_path: Path) -> None:
    out, _ = _run(tmp_path, _domain("airline"))
    schema = {t["function"]["name"]: t["function"]
              for t in json.loads(_domain("airline").read_text())}
    spec = load_spec(out)
    book = spec.workflows["book_reservation"]
    params = schema["book_reservation"]["parameters"]
    assert list(book.slots) == list(params["properties"])
    assert book.required == tuple(params["required"])
    assert book.buckets == (tuple(params["required"]),)
    assert book.slots["cabin"].type == "categorical"
    assert book.slots["cabin"].values == tuple(params["properties"]["cabin"]["enum"])
    assert book.slots["insurance"].values == ("yes", "no")  # quoted: YAML reads yes as True
    assert book.slots["total_baggages"].type == "number"  # integer
    assert book.slots["flights"].type == "free"  # a list of records: one slot, leaves walked
    assert book.slots["user_id"].description == \
        params["properties"]["user_id"]["description"]
    assert book.description == schema["book_reservation"]["description"]
    text = out.read_text()
    assert "TODO rules" in text and "fields flight_number, date" in text
    # the YAML is a plain document too (comments aside), with the same workflows
    assert [w["id"] for w in yaml.safe_load(text)["workflows"]] == list(spec.workflows)


def test_cookbook_drone_functions_bare_list(tmp_path: Path) -> None:
    out, printed = _run(tmp_path, DRONE, "--reads", "reject_request")
    spec = load_spec(out)
    assert "reject_request: read (named in --reads)" in printed
    # argument-less writes have no slot to check: said, not silently dropped
    for name in ("return_to_home", "calibrate_sensors"):
        assert name not in spec.workflows
        assert f"note: not a workflow: {name}: a write without arguments" in printed
    assert set(spec.workflows) == {
        "takeoff_drone", "land_drone", "control_drone_movement", "set_drone_speed",
        "control_camera", "control_gimbal", "set_drone_lighting", "set_battery_saver_mode",
        "set_obstacle_avoidance", "set_follow_me_mode", "set_autopilot",
        "configure_led_display", "set_home_location"}
    land = spec.workflows["land_drone"]
    assert land.slots["location"].values == ("current", "home_base", "custom")
    assert land.slots["coordinates"].type == "free"  # an object argument
    assert land.required == ("location",)  # coordinates is optional in the schema
    assert spec.workflows["set_autopilot"].slots["status"].values == ("on", "off")
    assert spec.workflows["takeoff_drone"].slots["altitude"].type == "number"
    assert spec.workflows["control_camera"].tools["reject_request"].writes is False


def test_tools_object_and_boolean(tmp_path: Path) -> None:
    fns = json.loads(DRONE.read_text())[:2]
    fns[0]["parameters"]["properties"]["confirm"] = {"type": "boolean"}
    p = tmp_path / "tools.json"
    p.write_text(json.dumps({"tools": [{"type": "function", "function": f} for f in fns]
                             + [{"type": "code_interpreter"}]}))
    draft = spec_from_tools(p)
    spec = draft.bundle()
    assert spec.workflows["takeoff_drone"].slots["confirm"].values == ("true", "false")
    assert any("'code_interpreter' tool, not a function" in s for s in draft.skipped)


def test_writes_option_overrides_the_name_rule(tmp_path: Path) -> None:
    out, printed = _run(tmp_path, DRONE, "--writes", "reject_request,set_drone_speed",
                        "--reads", "takeoff_drone")
    spec = load_spec(out)
    assert "takeoff_drone: read (named in --reads)" in printed
    assert "set_drone_speed: write (named in --writes)" in printed
    assert "takeoff_drone" not in spec.workflows
    assert "land_drone: write (name has no read word first" in printed


@pytest.mark.parametrize(("name", "writes"), [
    ("get_user_details", False), ("getWeather", False), ("search-flights", False),
    ("calculate", False), ("think", False), ("transfer_to_human_agents", False),
    ("transfer_funds", True), ("cancel_pending_order", True), ("book", True),
    ("targeted_update", True)])
def test_name_rule(name: str, writes: bool) -> None:
    assert classify_by_name(name)[0] is writes


def _error(tmp_path: Path, content: str, *extra: str) -> str:
    p = tmp_path / "tools.json"
    p.write_text(content)
    r = runner.invoke(app, ["specs", "from-tools", str(p), "--out",
                            str(tmp_path / "s.yaml"), *extra])
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {p}"), r.output
    assert not (tmp_path / "s.yaml").exists()
    return lines[0]


def test_errors_are_one_line_with_file_and_field(tmp_path: Path) -> None:
    assert "malformed JSON" in _error(tmp_path, '[{"name": "a",}]')
    line = _error(tmp_path, json.dumps([{"type": "function", "function": {"name": "a"}},
                                        {"type": "function", "function": {"description":
                                                                          "x"}}]))
    assert "field '[1].function.name'" in line and "needs a name" in line
    line = _error(tmp_path, json.dumps([{"name": "set_a", "parameters": {}},
                                        {"name": "set_a"}]))
    assert "field '[1].name'" in line and "duplicate tool name 'set_a' (first at [0])" in line
    line = _error(tmp_path, json.dumps({"tools": [{"name": "set_a", "parameters": {
        "properties": {"x": {}}, "required": ["y"]}}]}))
    assert "field 'tools[0].parameters.required[0]'" in line
    assert "no tool with arguments writes" in _error(
        tmp_path, json.dumps([{"name": "get_a", "parameters": {"properties": {"x": {}}}}]))
    assert "--writes names tool(s) the file does not have: nope" in _error(
        tmp_path, DRONE.read_text(), "--writes", "nope")


def test_existing_out_is_not_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "spec.yaml"
    out.write_text("keep\n")
    r = runner.invoke(app, ["specs", "from-tools", str(DRONE), "--out", str(out)])
    assert r.exit_code == 2 and "--overwrite" in r.output
    assert out.read_text() == "keep\n"
    r = runner.invoke(app, ["specs", "from-tools", str(DRONE), "--out", str(out),
                            "--overwrite"])
    assert r.exit_code == 0 and load_spec(out).workflows


def test_draft_is_checked_before_it_is_written(tmp_path: Path) -> None:
    # an argument named like YAML's null would not survive a careless dump
    p = tmp_path / "tools.json"
    p.write_text(json.dumps([{"name": "set_x", "parameters": {"properties": {
        "null": {"enum": ["on", "off", 1]}, "yes": {"type": "integer"}}}}]))
    wf = spec_from_tools(p).bundle().workflows["set_x"]
    assert list(wf.slots) == ["null", "yes"]
    assert wf.slots["null"].values == ("on", "off", "1")
    with pytest.raises(InputError, match="no function tools"):
        p.write_text("[]")
        spec_from_tools(p)


def test_the_starting_spec_suggests_a_request_cue_that_loads(tmp_path: Path) -> None:
    """The commented `requested` suggestion, put into the tool's entry, is a valid spec."""
    out, _ = _run(tmp_path, _domain("airline"))
    text = out.read_text()
    line = next(ln for ln in text.splitlines() if "cancel_reservation: {..., requested:" in ln)
    cue = line.split("requested: ", 1)[1].rstrip("}")
    assert cue == "'\\bcancel\\b'"
    text = text.replace("cancel_reservation: {writes: true,",
                        f"cancel_reservation: {{requested: {cue}, writes: true,", 1)
    out.write_text(text)
    spec = load_spec(out)
    tool = spec.workflows["cancel_reservation"].tools["cancel_reservation"]
    assert tool.requested == "\\bcancel\\b"
