"""Property tests for every importer: any document gives turns or one `InputError`.

Each format starts from its real fixture (tests/fixtures/logs/README.md and
tests/fixtures/mwzeval/README.md: sources and licences); hypothesis replaces a
value anywhere in it, deletes a key, or writes an unrelated document or bytes.
Whatever comes out, `import_file` and the validation `evaluate --format` runs
(`ImportResult.records`, with and without `--skip-invalid`) either give turns the
spec accepts or raise `InputError` — never another exception.
docs/guarantees.md names these tests.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sage_tod import InputError, load_spec  # noqa: E402
from sage_tod.importers import import_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "logs"
MWZ = ROOT / "tests" / "fixtures" / "mwzeval"
AIRLINE = ROOT / "examples" / "tau-bench-airline" / "spec.yaml"
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# format, fixture, spec, options
CASES: list[tuple[str, Path, Path, dict[str, Any]]] = [
    ("openai-chat", LOGS / "openai-chat-gpt-4o.jsonl", AIRLINE, {}),
    ("tau-bench", LOGS / "tau2-bench-airline-simulation.json", AIRLINE, {}),
    ("tau-bench", LOGS / "tau-bench-gpt-4o-airline.json", AIRLINE, {}),
    ("rasa", LOGS / "rasa-financial-demo-tracker.json", LOGS / "rasa-financial-demo-spec.yaml",
     {}),
    ("sgd", LOGS / "sgd-dialogue.json", LOGS / "sgd-ridesharing-spec.yaml", {}),
    ("multiwoz", LOGS / "multiwoz-dialogue.json", LOGS / "multiwoz-restaurant-spec.yaml", {}),
    ("mwzeval", MWZ / "damd_excerpt.json", LOGS / "multiwoz-restaurant-spec.yaml",
     {"corpus": MWZ / "corpus_test_excerpt.json"}),
]

scalars = (st.none() | st.booleans() | st.integers(-10**40, 10**40)
           | st.floats(allow_nan=True) | st.text(max_size=20))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=3),
                           max_leaves=12)


def _paths(doc: Any, limit: int = 4000) -> list[tuple[Any, ...]]:
    """Every container path of `doc` (breadth first, at most `limit`)."""
    out: list[tuple[Any, ...]] = [()]
    queue: list[tuple[tuple[Any, ...], Any]] = [((), doc)]
    while queue and len(out) < limit:
        path, node = queue.pop(0)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(
            node, list) else ()
        for k, v in items:
            out.append((*path, k))
            queue.append(((*path, k), v))
    return out


def _edit(doc: Any, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    if not path:
        return value
    copy = json.loads(json.dumps(doc))
    node = copy
    for k in path[:-1]:
        node = node[k]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return copy


def _documents(fixture: Path) -> st.SearchStrategy[bytes]:
    jsonl = fixture.suffix == ".jsonl"
    text = fixture.read_text(encoding="utf-8")
    doc = [json.loads(x) for x in text.splitlines() if x.strip()] if jsonl else json.loads(text)
    paths = _paths(doc)

    def render(d: Any) -> bytes:
        if jsonl and isinstance(d, list):
            return "".join(json.dumps(x, allow_nan=True) + "\n" for x in d).encode()
        return json.dumps(d, allow_nan=True).encode()

    edited = st.builds(lambda i, v, delete: render(_edit(doc, paths[i], v, delete and i > 0)),
                       st.integers(0, len(paths) - 1), json_values, st.booleans())
    return edited | json_values.map(render) | st.binary(max_size=200)


def _check(fmt: str, data: bytes, suffix: str, spec_path: Path, opts: dict[str, Any]) -> None:
    spec = load_spec(spec_path)
    fd, name = tempfile.mkstemp(suffix=suffix)
    with open(fd, "wb") as fh:
        fh.write(data)
    path = Path(name)
    try:
        try:
            res = import_file(fmt, path, spec, **opts)
        except InputError:
            return
        for skip in (False, True):
            try:
                tf = res.records(spec, skip_invalid=skip)
            except InputError:
                continue
            assert all(r.turn.workflow in spec.workflows for r in tf.records)
    finally:
        path.unlink()


@pytest.mark.parametrize(("fmt", "fixture", "spec_path", "opts"), CASES,
                         ids=[f"{c[0]}:{c[1].name}" for c in CASES])
def test_importer_gives_turns_or_one_input_error(fmt: str, fixture: Path, spec_path: Path,
                                                 opts: dict[str, Any]) -> None:
    @SETTINGS
    @given(_documents(fixture))
    def run(data: bytes) -> None:
        _check(fmt, data, fixture.suffix, spec_path, opts)

    run()
