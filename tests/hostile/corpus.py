"""The hostile-input corpus: every case must end in ONE `error:` line and exit status 2.

Small inputs live in `files/` (written by hand, see README.md); large ones (a
100,000-deep nesting, a 300,000-character utterance) are generated here so the
repository does not carry megabytes of brackets. `tests/test_hostile.py` runs
every case through the real CLI; add a case by adding a `Case` below.

Placeholders in `argv` and `env`: {demo_spec}, {demo_turns}, {files} (this
corpus's `files/`), {tmp} (a fresh directory per case, where `make` writes).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"

_BASE = {"dialogue_id": "h1", "turn_id": 0, "workflow": "restaurant_booking",
         "user": "A cheap place in the centre, please.", "agent": "What food would you like?",
         "state_before": {}, "state_after": {"restaurant-area": "centre"}}


def _turn(**kw: object) -> str:
    return json.dumps({**_BASE, **kw})


def _write(name: str, text: str | bytes) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        data = text.encode("utf-8") if isinstance(text, str) else text
        (tmp / name).write_bytes(data)
    return make


def _fake_model(claims: str) -> Callable[[Path], None]:
    """A model directory whose only problem is its claim-design file."""
    def make(tmp: Path) -> None:
        d = tmp / "model"
        d.mkdir()
        (d / "config.json").write_text(json.dumps(
            {"id2label": {"0": "entailment", "1": "neutral", "2": "contradiction"}}))
        (d / "sage_tod_claims.json").write_text((FILES / claims).read_text())
    return make


def _corrupt_model(tmp: Path) -> None:
    d = tmp / "model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(
        {"model_type": "bert", "id2label": {"0": "entailment", "1": "neutral",
                                            "2": "contradiction"}}))
    (d / "model.safetensors").write_bytes(b"\x00\x01truncated")
    (d / "model.onnx").write_bytes(b"not a graph")


def _verdicts_file(tmp: Path) -> None:
    (tmp / "report.html").write_text("<p>my earlier report</p>")


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    expect: str  # a piece of the one error line (case-insensitive)
    make: Callable[[Path], None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    root_ok: bool = True  # False: meaningless as root (permissions do not bind root)


def _ev(turns: str, *more: str, spec: str = "{demo_spec}") -> tuple[str, ...]:
    return ("evaluate", "--spec", spec, "--turns", turns, "--out", "{tmp}/v.jsonl",
            "--config", "s1", "--quiet", *more)


DEEP = "[" * 100_000 + "]" * 100_000
CASES: list[Case] = [
    # --- turns files -----------------------------------------------------------------------
    Case("turns_deep_nesting", _ev("{tmp}/t.jsonl"), "nesting",
         _write("t.jsonl", '{"dialogue_id": ' + DEEP + "}\n")),
    Case("turns_moderately_deep_meta", _ev("{tmp}/t.jsonl"), "nesting",
         _write("t.jsonl", _turn(meta={"x": json.loads("[" * 500 + "]" * 500)}) + "\n")),
    Case("turns_5000_digit_turn_id", _ev("{tmp}/t.jsonl"), "too large",
         _write("t.jsonl", _turn().replace('"turn_id": 0', '"turn_id": ' + "7" * 5000) + "\n")),
    Case("turns_lone_surrogate", _ev("{files}/turns_lone_surrogate.jsonl"), "surrogate"),
    Case("turns_nan", _ev("{files}/turns_nan.jsonl"), "nan"),
    Case("turns_infinity", _ev("{files}/turns_infinity.jsonl"), "out of range"),
    Case("turns_turn_id_true", _ev("{files}/turns_turn_id_true.jsonl"), "turn_id"),
    Case("turns_colliding_ids", _ev("{files}/turns_colliding_ids.jsonl"), "duplicate turn"),
    Case("turns_not_utf8", _ev("{files}/turns_not_utf8.jsonl"), ":2: not utf-8"),
    Case("turns_unknown_slot", _ev("{files}/turns_unknown_slot.jsonl"), "not in the schema"),
    Case("turns_not_object", _ev("{files}/turns_not_object.jsonl"), "json object"),
    Case("turns_empty", _ev("{files}/turns_empty.jsonl"), "empty"),
    Case("turns_bom_then_garbage", _ev("{files}/turns_bom_then_bad.jsonl"), "malformed json"),
    Case("turns_is_a_directory", _ev("{files}"), "directory"),
    Case("turns_missing", _ev("{tmp}/nope.jsonl"), "not found"),
    Case("turns_utterance_too_long", _ev("{tmp}/t.jsonl"), "at most 200000 characters",
         _write("t.jsonl", _turn(user="word " * 60_000) + "\n")),
    # --- spec files -----------------------------------------------------------------------
    Case("spec_deep_json", _ev("{demo_turns}", spec="{tmp}/s.json"), "nesting",
         _write("s.json", '{"workflows": ' + DEEP + "}")),
    Case("spec_deep_yaml", _ev("{demo_turns}", spec="{tmp}/s.yaml"), "nesting",
         _write("s.yaml", "workflows: " + "[" * 20_000 + "]" * 20_000 + "\n")),
    Case("spec_deep_yaml_blocks", _ev("{demo_turns}", spec="{tmp}/s.yaml"), "nesting",
         _write("s.yaml", "".join("  " * i + f"k{i}:\n" for i in range(3000)))),
    Case("spec_outcome_nested", _ev("{demo_turns}", spec="{files}/spec_outcome_nested.yaml"),
         "nested more than"),
    Case("spec_outcome_nots", _ev("{demo_turns}", spec="{files}/spec_outcome_nots.yaml"),
         "nested more than"),
    Case("spec_huge_number_yaml", _ev("{demo_turns}", spec="{files}/spec_huge_number.yaml"),
         "malformed yaml"),
    Case("spec_huge_number_json", _ev("{demo_turns}", spec="{files}/spec_huge_number.json"),
         "too large"),
    Case("spec_yaml_alias_bomb", _ev("{demo_turns}", spec="{files}/spec_yaml_bomb.yaml"),
         "alias bomb"),
    Case("spec_lone_surrogate", _ev("{demo_turns}", spec="{files}/spec_surrogate.json"),
         "surrogate"),
    Case("spec_python_tag", _ev("{demo_turns}", spec="{files}/spec_python_tag.yaml"),
         "malformed yaml"),
    Case("spec_not_utf8", _ev("{demo_turns}", spec="{tmp}/s.yaml"), "not utf-8",
         _write("s.yaml", b"workflows:\n  - id: w\xff\n")),
    Case("spec_is_a_directory", _ev("{demo_turns}", spec="{files}"), "directory"),
    # --- outputs ----------------------------------------------------------------------------
    Case("out_dev_full", ("evaluate", "--spec", "{demo_spec}", "--turns", "{demo_turns}",
                          "--out", "/dev/full", "--config", "s1", "--quiet"), "no space"),
    Case("out_is_a_directory", ("evaluate", "--spec", "{demo_spec}", "--turns",
                                "{demo_turns}", "--out", "{tmp}", "--config", "s1"),
         "directory"),
    Case("out_read_only_dir", ("evaluate", "--spec", "{demo_spec}", "--turns", "{demo_turns}",
                               "--out", "/proc/sage-tod-verdicts.jsonl", "--config", "s1"),
         "cannot write"),
    Case("out_under_a_file", ("evaluate", "--spec", "{demo_spec}", "--turns", "{demo_turns}",
                              "--out", "{files}/notes.txt/v.jsonl", "--config", "s1"),
         "is not a directory"),
    Case("report_to_dev_full", ("report", "{tmp}/v.jsonl", "--out", "/dev/full"), "no space",
         _write("v.jsonl", "")),
    Case("resume_not_a_verdicts_file", ("evaluate", "--spec", "{demo_spec}", "--turns",
                                        "{demo_turns}", "--out", "{tmp}/notes.txt",
                                        "--config", "s1", "--resume"),
         "not a verdicts file", _write("notes.txt", (FILES / "notes.txt").read_text())),
    Case("report_bad_verdict_label", ("report", "{files}/verdicts_wrong_label.jsonl", "--out",
                                      "{tmp}/r.html"), "verdict"),
    Case("report_existing_out", ("report", "{tmp}/v.jsonl", "--out", "{tmp}/report.html"),
         "exists; pass --overwrite",
         lambda tmp: (_verdicts_file(tmp), (tmp / "v.jsonl").write_text(""))[0]),
    Case("demo_existing_out", ("demo", "--config", "s1", "--out", "{tmp}/report.html"),
         "exists; pass --overwrite", _verdicts_file),
    # --- verdicts files ---------------------------------------------------------------------
    Case("report_nan_verdicts", ("report", "{files}/verdicts_nan.jsonl", "--out",
                                 "{tmp}/r.html"), "nan"),
    Case("score_nan_verdicts", ("score", "--turns", "{demo_turns}", "--verdicts",
                                "{files}/verdicts_nan.jsonl"), "nan"),
    Case("explain_not_utf8", ("explain", "{tmp}/v.jsonl"), ":2: not utf-8",
         _write("v.jsonl", b"\n" + b'{"format_version": 1, "dialogue_id": "d\xff"}\n')),
    # --- options and settings ---------------------------------------------------------------
    Case("tau_out_of_range", ("evaluate", "--spec", "{demo_spec}", "--turns", "{demo_turns}",
                              "--out", "{tmp}/v.jsonl", "--tau", "5"), "tau must be"),
    Case("unknown_config", _ev("{demo_turns}", "--config", "fast"), "unknown config"),
    Case("nli_model_env_nonexistent", ("evaluate", "--spec", "{demo_spec}", "--turns",
                                       "{demo_turns}", "--out", "{tmp}/v.jsonl"),
         "not a model directory", env={"SAGE_TOD_NLI_MODEL": "/nonexistent"}),
    Case("nli_model_option_nonexistent", ("evaluate", "--spec", "{demo_spec}", "--turns",
                                          "{demo_turns}", "--out", "{tmp}/v.jsonl",
                                          "--nli-model", "/nonexistent"),
         "not a model directory"),
    Case("claims_malformed", ("evaluate", "--spec", "{demo_spec}", "--turns", "{demo_turns}",
                              "--out", "{tmp}/v.jsonl", "--nli-model", "{tmp}/model"),
         "claim design", _fake_model("claims_malformed.json")),
    Case("claims_unknown_template", ("evaluate", "--spec", "{demo_spec}", "--turns",
                                     "{demo_turns}", "--out", "{tmp}/v.jsonl", "--nli-model",
                                     "{tmp}/model"), "unknown template",
         _fake_model("claims_unknown_template.json")),
    Case("corrupt_model_files", ("evaluate", "--spec", "{demo_spec}", "--turns",
                                 "{demo_turns}", "--out", "{tmp}/v.jsonl", "--nli-model",
                                 "{tmp}/model"), "could not be loaded", _corrupt_model),
    Case("llm_backoff_negative", _ev("{demo_turns}", "--config", "no_s2"), "backoff",
         env={"SAGE_TOD_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SAGE_TOD_LLM_MODEL": "m",
              "SAGE_TOD_LLM_BACKOFF": "-1"}),
    Case("llm_timeout_nan", _ev("{demo_turns}", "--config", "no_s2"), "finite",
         env={"SAGE_TOD_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SAGE_TOD_LLM_MODEL": "m",
              "SAGE_TOD_LLM_TIMEOUT": "nan"}),
    Case("llm_base_url_malformed", _ev("{demo_turns}", "--config", "no_s2"), "base url",
         env={"SAGE_TOD_LLM_BASE_URL": "ht!tp:/nohost", "SAGE_TOD_LLM_MODEL": "m"}),
    Case("llm_base_url_bad_port", _ev("{demo_turns}", "--config", "no_s2"), "base url",
         env={"SAGE_TOD_LLM_BASE_URL": "http://127.0.0.1:99999999/v1",
              "SAGE_TOD_LLM_MODEL": "m"}),
]
