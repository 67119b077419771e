"""`sage-tod doctor`: can the recommended configuration run here, and if not, why.

One screen that a new user (or a bug report) can read: the version, which S2
model was resolved and from where, whether ONNX Runtime, the NLI model and the
paraphrase encoder actually load, the LLM endpoint configuration (the name of
the key's variable and whether it is set, never the key), the data directory,
and every cache with its location and size. Each problem comes with what to do.

A check is `required` when SAGE-Core (`core` = S1 + S2) cannot run as designed
without it; `doctor` exits non-zero when any required check fails, so a CI job
or an install script can gate on it. Optional parts (S3's endpoint, the data
sets, which only `bench`/`slices` read) are reported but never fail it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from rich.table import Table
from rich.text import Text

Status = Literal["ok", "problem", "info"]


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    status: Status
    detail: str
    fix: str = ""
    required: bool = False


@dataclass
class DoctorReport:
    """Every check, and whether the recommended configuration (`core`) can run."""

    version: str
    checks: list[Check] = field(default_factory=list)

    @property
    def core_ok(self) -> bool:
        return not any(c.required and c.status == "problem" for c in self.checks)

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "core_ok": self.core_ok,
                "checks": [asdict(c) for c in self.checks]}


def version() -> str:
    """The installed distribution's version (the package's own constant when not installed)."""
    try:
        return importlib.metadata.version("sage-tod")
    except importlib.metadata.PackageNotFoundError:
        from sage_tod import __version__

        return __version__


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover


def path_size(p: Path) -> int:
    """Bytes in a file, or in every file below a directory (0 when absent)."""
    if p.is_file():
        return p.stat().st_size
    if not p.is_dir():
        return 0
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def _package(mod: str, dist: str | None = None) -> str | None:
    """The installed version of `mod` without importing it (None when absent)."""
    if importlib.util.find_spec(mod) is None:
        return None
    try:
        return importlib.metadata.version(dist or mod)
    except importlib.metadata.PackageNotFoundError:
        return "installed"


def _model_checks(load: bool) -> list[Check]:
    from sage_tod.contracts.errors import InputError
    from sage_tod.nli.claims import CLAIMS_FILE
    from sage_tod.nli.resolve import ENV_MODEL, packaged_model_dir, resolve_model

    out: list[Check] = []
    try:
        res = resolve_model()
    except InputError as exc:
        return [Check("S2 model", "problem", str(exc),
                      f"unset {ENV_MODEL} or point it at a model directory", True)]
    if res.model is None:
        return [Check("S2 model", "problem", "no NLI model found; looked for: "
                      + "; ".join(res.tried),
                      f"reinstall sage-tod (its wheel ships {packaged_model_dir().name}/) or "
                      f"set {ENV_MODEL}", True)]
    from sage_tod.nli.graph import GRAPH_FILE, has_graph

    claims = Path(res.model) / CLAIMS_FILE
    design = "claim design from " + CLAIMS_FILE if claims.is_file() else "default claim design"
    local = Path(res.model).is_dir()
    shipped = local and (has_graph(res.model) or (Path(res.model) / "model.onnx").is_file())
    graph = ("; ships its ONNX graph, runs without torch" if shipped else
             f"; no {GRAPH_FILE}: the first run exports one (needs the export extra)"
             if local else "")
    out.append(Check("S2 model", "ok", f"{res.model} ({res.source}; {design}{graph})", "",
                     True))
    if not load:
        return out
    from sage_tod.nli.runtime import get_scorer

    t0 = time.perf_counter()
    try:
        scorer, why = get_scorer(res.model)
        if scorer is None:
            raise RuntimeError(why)
        p = scorer.backend.score([("A table for two, please.", "Someone says 2.")])[0]
    except Exception as exc:  # the report must name any failure, not crash on it
        out.append(Check("S2 model loads", "problem", f"{type(exc).__name__}: {exc}",
                         "pip install 'sage-tod[nli]' (onnxruntime, tokenizers); a model "
                         "without a shipped ONNX graph also needs pip install "
                         "'sage-tod[export]' for its one-time export (or `sage-tod models "
                         "build-graphs --model DIR` once where torch is installed)", True))
        return out
    be = scorer.backend
    where = getattr(be, "onnx_path", None)
    out.append(Check("S2 model loads", "ok",
                     f"backend {be.name}, {time.perf_counter() - t0:.2f} s"
                     + (f", graph {where}" if where else "") + f"; p(ent) of a test pair "
                     f"{p[0]:.2f}", "", True))
    return out


def _paraphrase_check(load: bool) -> Check:
    name = "paraphrase encoder"
    from sage_tod.nli.graph import has_graph
    from sage_tod.nli.paraphrase import default_model_path

    path = default_model_path()
    if not has_graph(path):
        return Check(name, "problem", f"{path}: the packaged encoder (weights and ONNX graph) "
                     "is missing from this install", "reinstall sage-tod", True)
    if not load:
        return Check(name, "ok", f"{path} (not loaded)", "", True)
    from sage_tod.nli.runtime import get_paraphrase

    t0 = time.perf_counter()
    try:
        enc = get_paraphrase()
        enc.embed(["somewhere cheap"])
        backend = enc.backend_name
    except Exception as exc:
        return Check(name, "problem", f"{type(exc).__name__}: {exc}",
                     "pip install 'sage-tod[nli]' (onnxruntime, tokenizers, numpy)", True)
    return Check(name, "ok", f"all-MiniLM-L6-v2 via {backend}, "
                 f"{time.perf_counter() - t0:.2f} s ({path})", "", True)


def _runtime_check() -> Check:
    have = {m: _package(m) for m in ("numpy", "tokenizers", "onnxruntime")}
    torch = _package("torch")
    missing = [m for m, v in have.items() if v is None]
    detail = ", ".join(f"{m} {v}" for m, v in have.items() if v) + (
        f"; torch {torch} (export extra: never imported to run the packaged models)"
        if torch else "; torch not installed (not needed: the packaged models ship their "
        "ONNX graphs; pip install 'sage-tod[export]' exports other models and trains)")
    if missing:
        return Check("S2 runtime", "problem", "missing " + ", ".join(missing) + "; " + detail,
                     "pip install 'sage-tod[nli]'", True)
    return Check("S2 runtime", "ok", detail, "", True)


def _llm_check() -> Check:
    from sage_tod.llm.config import LLMNotConfigured, config_from_options

    try:
        cfg = config_from_options({})
    except LLMNotConfigured:
        return Check("LLM endpoint (S3)", "info", "not configured (only --config llm and "
                     "the LLM baselines need one)",
                     "set SAGE_TOD_LLM_BASE_URL and SAGE_TOD_LLM_MODEL (docs/llm.md)")
    d = cfg.describe()
    key = (f"key from ${d['api_key_env']}: " + ("set" if d["api_key_set"] else "NOT set"))
    fix = "" if d["api_key_set"] or cfg.is_loopback else f"export {d['api_key_env']}=..."
    return Check("LLM endpoint (S3)", "ok" if not fix else "info",
                 f"{d['base_url']} model {d['model']}; {key}", fix)


def _data_check() -> Check:
    env = os.environ.get("SAGE_TOD_DATA")
    if not env:
        return Check("data sets", "info", "SAGE_TOD_DATA not set (only `slices build` and "
                     "`bench` read data sets)", "set SAGE_TOD_DATA (docs/datasets.md)")
    p = Path(env).expanduser()
    if not p.is_dir():
        return Check("data sets", "problem", f"SAGE_TOD_DATA={p} is not a directory",
                     "point SAGE_TOD_DATA at the data directory (docs/datasets.md)")
    return Check("data sets", "ok", f"SAGE_TOD_DATA={p}")


def _cache_checks() -> list[Check]:
    from sage_tod.llm.config import default_cache_path as llm_cache
    from sage_tod.locations import data_home
    from sage_tod.nli.resolve import own_model_dir
    from sage_tod.nli.runtime import cache_location

    nli = cache_location(None)
    rows: list[tuple[str, Path | None]] = [
        ("NLI score cache", nli), ("ONNX exports", data_home() / "onnx"),
        ("LLM response cache", Path(os.environ.get("SAGE_TOD_LLM_CACHE") or llm_cache())),
        ("own trained model", own_model_dir())]
    out: list[Check] = []
    for name, p in rows:
        if p is None:
            out.append(Check(name, "info", "off (memory only)"))
            continue
        size = path_size(p) + sum(path_size(p.with_name(p.name + s)) for s in ("-wal", "-shm"))
        state = human_size(size) if p.exists() else "not created yet"
        out.append(Check(name, "info", f"{p} ({state})"))
    return out


def run_checks(*, load: bool = True) -> DoctorReport:
    """Every check; `load=False` resolves and inspects without loading any model."""
    rep = DoctorReport(version())
    rep.checks.append(Check("sage-tod", "info", f"{rep.version} on Python "
                            f"{platform.python_version()} ({platform.system()} "
                            f"{platform.machine()})"))
    steps: list[Callable[[], list[Check]]] = [
        lambda: [_runtime_check()], lambda: _model_checks(load),
        lambda: [_paraphrase_check(load)], lambda: [_llm_check()], lambda: [_data_check()],
        _cache_checks]
    for step in steps:
        rep.checks.extend(step())
    return rep


_MARK = {"ok": ("ok", "green"), "problem": ("PROBLEM", "bold red"), "info": ("-", "dim")}


def render(rep: DoctorReport) -> Table:
    """The one-screen table; the caption says whether `core` can run."""
    verdict = ("[green]the recommended configuration (core = S1+S2) can run[/]" if rep.core_ok
               else "[bold red]the recommended configuration (core) cannot run: fix the "
                    "PROBLEM lines[/]")
    t = Table(title=f"sage-tod doctor ({rep.version})", caption=verdict, show_lines=False,
              expand=False)
    t.add_column("check", style="bold", no_wrap=True)
    t.add_column("status", no_wrap=True)
    t.add_column("detail", overflow="fold")
    t.add_column("what to do", overflow="fold")
    for c in rep.checks:
        label, style = _MARK[c.status]
        t.add_row(c.name + (" *" if c.required else ""), Text(label, style=style),
                  Text(c.detail), Text(c.fix))
    return t
