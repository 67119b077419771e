"""The paper's benchmark slices: sampling, injection, and writing them out.

A slice is a turns JSONL file with gold labels plus the spec it is evaluated
against. Everything is seeded from one integer (`--seed`, default 0) through
per-slice `random.Random("sage-tod:<seed>:<slice>")`, and written with sorted
keys, so two builds give byte-identical files. Choices the paper leaves open
(docs/benchmarks.md): one turn per dialogue within a slice; the MultiWOZ
slices and dev use pairwise disjoint dialogues; clean turns must be
consistent with the dataset's own user acts (every value the user informs is
held by s_t), because MultiWOZ 2.1's belief states lag the acts where 2.4
fixed them; class quotas are spread as evenly as applicability allows.

The MultiWOZ *test* split is reserved for held-out checks: nothing here reads it.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from sage_tod.contracts.spec import SpecBundle, Workflow, parse_spec
from sage_tod.lab.datasets import abcd, multiwoz, sgd
from sage_tod.lab.datasets.common import SpecDoc, TurnDict, dumps_line, write_jsonl
from sage_tod.lab.datasets.paths import DataMissing, data_root, require_all
from sage_tod.lab.inject import CLASSES, InjClass, InjectionEnv, applicable, clean, inject
from sage_tod.text.booleans import is_dontcare
from sage_tod.text.normalize import is_unset

K = TypeVar("K", bound=str)
SLICE_NAMES: tuple[str, ...] = ("mw-mixed", "uv-rich", "sgd", "sgd-x", "dev", "abcd-uv",
                                "tune-mw", "tune-sgd")
DEFAULT_SLICES: tuple[str, ...] = ("mw-mixed", "uv-rich", "sgd", "sgd-x", "dev")


@dataclass(frozen=True)
class BuildConfig:
    """Slice sizes (the paper's by default) and the seed; tests shrink the sizes."""

    seed: int = 0
    mw_per_domain: int = 50
    mw_injected: int = 126
    uv_per_domain: int = 50
    uv_injected: int = 121
    sgd_workflows: int = 37
    sgd_turns: int = 280
    sgd_max_per_intent: int = 8
    sgd_max_files_per_service: int = 12
    sgd_injected: int = 151
    dev_per_domain: int = 8
    dev_injected: int = 20
    tune_mw_per_domain: int = 40
    tune_mw_classes: tuple[int, int, int, int] = (17, 17, 16, 50)  # IUV, WNF, PC, UV
    abcd_workflows: int = 30
    abcd_turns: int = 223
    abcd_injected: int = 103
    acts: bool = True


@dataclass
class Slice:
    """One built slice: its turns, the spec file it uses, and its statistics."""

    name: str
    file: str
    spec_file: str
    turns: list[TurnDict]
    stats: dict[str, Any] = field(default_factory=dict)


def rng_for(seed: int, name: str) -> random.Random:
    return random.Random(f"sage-tod:{seed}:{name}")


def split_even(total: int, k: int) -> list[int]:
    """`total` units over `k` parts, the first ones one larger."""
    if k <= 0:
        return []
    q, r = divmod(total, k)
    return [q + (1 if i < r else 0) for i in range(k)]


def proportional(total: int, sizes: Sequence[int]) -> list[int]:
    """Largest-remainder split of `total` in proportion to `sizes` (ties: earlier first)."""
    s = sum(sizes)
    if s == 0:
        return [0] * len(sizes)
    raw = [total * x / s for x in sizes]
    base = [int(x) for x in raw]
    rest = total - sum(base)
    order = sorted(range(len(sizes)), key=lambda i: (-(raw[i] - base[i]), i))
    for i in order[:rest]:
        base[i] += 1
    return base


def consistent(t: Mapping[str, Any], wf: Workflow) -> bool:
    """Clean-pool filter: every value the user informs (per the dataset acts) is held in s_t.

    Uses the dataset's own annotations, not the evaluator: a turn whose
    belief state misses what the user's acts say is a labelling gap (fixed in
    MultiWOZ 2.4, not present in our 2.1 copy), not an acceptable turn.
    """
    if not t["user"].strip() or not t["agent"].strip():
        return False
    after = {k: v for k, v in t["state_after"].items() if v}
    for uv in t.get("user_values") or []:
        if uv["slot"] not in wf.slots or is_dontcare(uv["value"]):
            continue
        if not any(wf.equals(s, v, uv["value"]) for s, v in after.items() if s in wf.slots):
            return False
    return True


def act_violations(t: Mapping[str, Any], wf: Workflow) -> list[str]:
    """Failures the dataset's own system acts show under the spec (natural WNF / PC).

    Injection bases must show none, so an injected turn carries exactly one
    failure; clean turns keep them (they are what the corpus contains) and the
    manifest counts them, since an evaluator is right to flag them.
    """
    before = {k: v for k, v in t["state_before"].items() if v and not is_unset(v)}
    after = {k: v for k, v in t["state_after"].items() if v and not is_unset(v)}
    acts = t.get("agent_acts") or {}
    out: list[str] = []
    if any(r in wf.required and wf.missing_prereqs(r, before) and wf.missing_prereqs(r, after)
           for r in acts.get("request", [])):
        out.append("WNF")
    if acts.get("confirm") and not wf.outcome_holds(after):
        out.append("PC")
    return out


def allocate(class_totals: Mapping[K, int], strata_totals: Sequence[int],
             capacity: Sequence[Mapping[K, int]]
             ) -> tuple[list[dict[K, int]], dict[K, int]]:
    """Class counts per stratum, as close to `class_totals` as applicability allows.

    The most constrained class (fewest strata that admit it) is placed first,
    each unit in the stratum with the most room left, so constrained classes
    are not crowded out by flexible ones. Units that fit nowhere are re-placed
    on any class that still fits, so the injected total holds; the returned
    dict says which classes fell short and by how much.
    """
    n = len(strata_totals)
    classes = list(class_totals)
    m: list[dict[K, int]] = [dict.fromkeys(classes, 0) for _ in range(n)]
    room = list(strata_totals)

    def fits(i: int, c: K) -> bool:
        return room[i] > 0 and capacity[i].get(c, 0) > m[i][c]

    order = sorted(classes, key=lambda c: (sum(1 for i in range(n) if capacity[i].get(c, 0)),
                                           sum(capacity[i].get(c, 0) for i in range(n)),
                                           classes.index(c)))
    short: dict[K, int] = {}
    for c in order:
        for _ in range(class_totals[c]):
            cands = [i for i in range(n) if fits(i, c)]
            if not cands:
                short[c] = short.get(c, 0) + 1
                continue
            i = max(cands, key=lambda j: (room[j], -m[j][c], -j))
            m[i][c] += 1
            room[i] -= 1
    for _ in range(sum(short.values())):
        # the class with the fewest units so far that still fits somewhere
        spots = [(sum(row[c] for row in m), classes.index(c), i, c)
                 for c in classes for i in range(n) if fits(i, c)]
        if not spots:
            break
        _, _, i, c = min(spots, key=lambda x: (x[0], x[1], -room[x[2]], x[2]))
        m[i][c] += 1
        room[i] -= 1
    return m, short


def _stratified(name: str, strata: Mapping[str, list[TurnDict]], sizes: Mapping[str, int],
                class_totals: Mapping[InjClass, int], env_of: Callable[[TurnDict], InjectionEnv],
                rng: random.Random, used: set[str]) -> tuple[list[TurnDict], dict[str, Any]]:
    keys = list(strata)
    pools: dict[str, list[TurnDict]] = {}
    for k in keys:
        pool = [t for t in strata[k] if t["dialogue_id"] not in used]
        rng.shuffle(pool)
        pools[k] = pool
    # injection bases: no failure visible in the dataset's acts (see act_violations)
    bases = {id(t): not act_violations(t, env_of(t).workflow) for k in keys for t in pools[k]}
    capacity: list[dict[InjClass, int]] = []
    for k in keys:
        cap: dict[InjClass, int] = {}
        for c in class_totals:
            # distinct dialogues with an applicable turn, counted up to what could be used
            seen: set[str] = set()
            for t in pools[k]:
                if len(seen) >= sizes[k]:
                    break
                if (t["dialogue_id"] not in seen and bases[id(t)]
                        and applicable(c, t, env_of(t))):
                    seen.add(t["dialogue_id"])
            cap[c] = len(seen)
        capacity.append(cap)
    inj_totals = proportional(sum(class_totals.values()), [sizes[k] for k in keys])
    inj_totals = [min(a, sizes[k]) for a, k in zip(inj_totals, keys, strict=True)]
    matrix, short = allocate(class_totals, inj_totals, capacity)
    out: list[TurnDict] = []
    per_stratum: dict[str, dict[str, int]] = {}
    taken: set[str] = set(used)
    missing: Counter[str] = Counter()
    violations: Counter[str] = Counter()
    for k, row in zip(keys, matrix, strict=True):
        counts: Counter[str] = Counter()
        cap_k = capacity[keys.index(k)]
        scarce: list[InjClass] = sorted(row, key=lambda c: (cap_k.get(c, 0), c))
        for c in scarce:
            need = row[c]
            for t in pools[k]:
                if need == 0:
                    break
                if t["dialogue_id"] in taken or not bases[id(t)]:
                    continue
                res = inject(c, t, env_of(t), rng)
                if res is None:
                    continue
                res.setdefault("meta", {})["slice"] = name
                out.append(res)
                taken.add(t["dialogue_id"])
                counts[c] += 1
                need -= 1
            missing[c] += need
        n_clean = sizes[k] - sum(counts.values())
        for t in pools[k]:
            if n_clean == 0:
                break
            if t["dialogue_id"] in taken:
                continue
            res = clean(t)
            res.setdefault("meta", {})["slice"] = name
            natural = act_violations(t, env_of(t).workflow)
            if natural:
                res["meta"]["act_visible_violations"] = natural
                violations.update(natural)
            out.append(res)
            taken.add(t["dialogue_id"])
            counts["clean"] += 1
            n_clean -= 1
        if n_clean:
            missing["clean"] += n_clean
        per_stratum[k] = dict(sorted(counts.items()))
    used |= taken
    out.sort(key=lambda t: (t["dialogue_id"], str(t["turn_id"])))
    stats = {"per_stratum": per_stratum, "capacity": dict(zip(keys, capacity, strict=True)),
             "shortfall_allocation": short, "shortfall_sampling": dict(missing),
             "clean_with_act_visible_violations": dict(sorted(violations.items()))}
    return out, stats


def summarize(turns: Sequence[TurnDict]) -> dict[str, Any]:
    labels = Counter(t["gold"]["label"] for t in turns)
    classes = Counter(t["gold"]["class"] for t in turns if t["gold"]["class"])
    modes = Counter(f"{t['gold']['class']}:{t['gold']['injection'].get('mode', 'replace')}"
                    for t in turns if t["gold"]["class"])
    return {"n": len(turns), "labels": dict(sorted(labels.items())),
            "classes": {c: classes.get(c, 0) for c in CLASSES},
            "injection_modes": dict(sorted(modes.items())),
            "workflows": len({t["workflow"] for t in turns}),
            "dialogues": len({t["dialogue_id"] for t in turns})}


# ---------------------------------------------------------------------------------------------
# MultiWOZ


@dataclass
class _MW:
    spec_doc: SpecDoc
    bundle: SpecBundle
    strata: dict[str, list[TurnDict]]
    values: dict[str, list[str]]
    transactional: dict[str, bool]
    pool_stats: dict[str, Any]


def _mw_setup(root: Path) -> _MW:
    doc = multiwoz.compile_spec(root)
    bundle = parse_spec(doc, "multiwoz.yaml")
    schema = multiwoz.load_schema(root)
    transactional = {d: any(it["is_transactional"] for it in schema[d]["intents"])
                     for d in multiwoz.DOMAINS}
    strata: dict[str, list[TurnDict]] = {d: [] for d in multiwoz.DOMAINS}
    total = kept = 0
    for t in multiwoz.iter_turns("val", root, version="auto"):  # validation only, never test
        total += 1
        wf = bundle.workflows[t["workflow"]]
        if consistent(t, wf):
            strata[t["workflow"]].append(t)
            kept += 1
    return _MW(doc, bundle, strata, multiwoz.value_pool(root), transactional,
               {"turns": total, "consistent": kept})


def _mw_env(mw: _MW) -> Callable[[TurnDict], InjectionEnv]:
    envs = {d: InjectionEnv(mw.bundle.workflows[d], mw.transactional[d], "booking", mw.values)
            for d in multiwoz.DOMAINS}
    return lambda t: envs[t["workflow"]]


def build_multiwoz(cfg: BuildConfig, root: Path) -> tuple[SpecDoc, dict[str, Slice]]:
    """MW-mixed, UV-rich and dev, from the validation split, on disjoint dialogues."""
    mw = _mw_setup(root)
    env_of = _mw_env(mw)
    used: set[str] = set()
    doms = list(multiwoz.DOMAINS)
    out: dict[str, Slice] = {}
    plans: list[tuple[str, str, int, dict[InjClass, int]]] = [
        ("mw-mixed", "mw_mixed.jsonl", cfg.mw_per_domain,
         dict(zip(CLASSES, split_even(cfg.mw_injected, 4), strict=True))),
        ("uv-rich", "uv_rich.jsonl", cfg.uv_per_domain, {"UV": cfg.uv_injected}),
        ("dev", "dev.jsonl", cfg.dev_per_domain,
         dict(zip(CLASSES, split_even(cfg.dev_injected, 4), strict=True))),
        # built last, from what the slices above left: adding it changes none of them
        ("tune-mw", "tune_mw.jsonl", cfg.tune_mw_per_domain,
         dict(zip(CLASSES, cfg.tune_mw_classes, strict=True))),
    ]
    for name, file, per_dom, classes in plans:
        turns, stats = _stratified(name, mw.strata, dict.fromkeys(doms, per_dom), classes,
                                   env_of, rng_for(cfg.seed, name), used)
        stats["pool"] = mw.pool_stats
        out[name] = Slice(name, file, "specs/multiwoz.yaml", turns, stats)
    return mw.spec_doc, out


# ---------------------------------------------------------------------------------------------
# SGD / SGD-X


def sgd_value_pool(turns: Iterable[TurnDict], bundle: SpecBundle) -> dict[str, list[str]]:
    """Plausible values per workflow slot: categorical values, else the corpus's own values.

    Keys are `Service.Intent/slot` flattened to `slot` per workflow by the env below.
    """
    by_service: dict[tuple[str, str], Counter[str]] = {}
    for t in turns:
        service = t["workflow"].split(".", 1)[0]
        for s, v in t["state_after"].items():
            by_service.setdefault((service, s), Counter())[v] += 1
    out: dict[str, list[str]] = {}
    for wid, wf in bundle.workflows.items():
        service = wid.split(".", 1)[0]
        for name, spec in wf.slots.items():
            key = f"{service}/{name}"
            if key in out:
                continue
            if spec.values:
                vals = list(spec.values)
            else:
                c = by_service.get((service, name), Counter())
                vals = sorted(v for v in c if not is_dontcare(v))
            if vals:
                out[key] = vals
    return out


class _ServiceValues(Mapping[str, Sequence[str]]):
    """A service's slice of the SGD value pool, keyed by bare slot name."""

    def __init__(self, pool: Mapping[str, list[str]], service: str, allowed: set[str]) -> None:
        self._d = {k.split("/", 1)[1]: v for k, v in pool.items()
                   if k.split("/", 1)[0] == service and k.split("/", 1)[1] in allowed}

    def __getitem__(self, key: str) -> Sequence[str]:
        return self._d[key]

    def __iter__(self) -> Any:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)


def build_sgd(cfg: BuildConfig, root: Path, split: sgd.Split = "test"
              ) -> tuple[SpecDoc, Slice]:
    """The SGD slice (37 workflows, capped per intent and per service).

    From the test split it is the benchmark slice `sgd`; from the dev split the same
    recipe gives `tune-sgd`, a tuning set that shares no dialogue with any benchmark
    slice (but is the data the adapted NLI model was trained on).
    """
    name = "sgd" if split == "test" else "tune-sgd"
    spec_name = "sgd" if split == "test" else "sgd_dev"
    doc = sgd.compile_spec(split, root)
    bundle = parse_spec(doc, f"{spec_name}.yaml")
    schema = sgd.load_schema(split, root)
    transactional = {f"{s['service_name']}.{it['name']}": bool(it["is_transactional"])
                     for s in schema for it in s["intents"]}
    user_given = {s["service_name"]: {x for it in s["intents"]
                                      for x in [*it["required_slots"], *it["optional_slots"]]}
                  for s in schema}
    rng = rng_for(cfg.seed, name)
    all_turns = list(sgd.iter_turns(split, root))
    pool_vals = sgd_value_pool(all_turns, bundle)
    eligible = [t for t in all_turns if consistent(t, bundle.workflows[t["workflow"]])]
    # at most N dialogue files per service: a seeded draw among the files it occurs in
    files_of: dict[str, list[str]] = {}
    for t in eligible:
        files_of.setdefault(t["meta"]["service"], [])
        if t["meta"]["file"] not in files_of[t["meta"]["service"]]:
            files_of[t["meta"]["service"]].append(t["meta"]["file"])
    keep_files: dict[str, set[str]] = {}
    for service in sorted(files_of):
        fs = sorted(files_of[service])
        rng.shuffle(fs)
        keep_files[service] = set(fs[:cfg.sgd_max_files_per_service])
    strata: dict[str, list[TurnDict]] = {}
    for t in eligible:
        if t["meta"]["file"] in keep_files[t["meta"]["service"]]:
            strata.setdefault(t["workflow"], []).append(t)
    # workflows with enough distinct dialogues; a seeded draw of N of them
    ok = sorted(w for w, ts in strata.items()
                if len({t["dialogue_id"] for t in ts}) >= cfg.sgd_max_per_intent)
    chosen = sorted(rng.sample(ok, min(cfg.sgd_workflows, len(ok))))
    per = split_even(cfg.sgd_turns, len(chosen)) if chosen else []
    per = [min(p, cfg.sgd_max_per_intent) for p in per]
    order = list(chosen)
    rng.shuffle(order)  # which workflows get the smaller share: seeded, not alphabetical
    sizes = {w: p for w, p in zip(order, sorted(per, reverse=True), strict=True)}
    envs = {w: InjectionEnv(bundle.workflows[w], transactional[w], "task",
                            _ServiceValues(pool_vals, w.split(".", 1)[0],
                                           user_given[w.split(".", 1)[0]]))
            for w in chosen}
    classes: dict[InjClass, int] = dict(zip(CLASSES, split_even(cfg.sgd_injected, 4),
                                            strict=True))
    used: set[str] = set()
    turns, stats = _stratified(name, {w: strata[w] for w in chosen}, sizes, classes,
                               lambda t: envs[t["workflow"]], rng, used)
    by_service = Counter(t["workflow"].split(".", 1)[0] for t in turns)
    files_per_service = {s: len({t["meta"]["file"] for t in turns
                                 if t["workflow"].startswith(s + ".")}) for s in by_service}
    stats.update({"pool": {"turns": len(all_turns), "consistent": len(eligible)},
                  "workflows_eligible": len(ok), "excluded_workflows":
                  sorted(set(transactional) - set(chosen)),
                  "max_files_per_service": max(files_per_service.values(), default=0),
                  "max_turns_per_workflow": max(Counter(t["workflow"] for t in turns).values(),
                                                default=0)})
    return doc, Slice(name, f"{name.replace('-', '_')}.jsonl", f"specs/{spec_name}.yaml", turns,
                      stats)


def build_sgdx(base: Slice, root: Path) -> tuple[dict[str, SpecDoc], dict[str, Slice]]:
    """The SGD slice replayed under each SGD-X variant schema (names aligned by position)."""
    specs: dict[str, SpecDoc] = {}
    out: dict[str, Slice] = {}
    for v in sgd.VARIANTS:
        doc = sgd.compile_spec("test", root, variant=v)
        parse_spec(doc, f"sgdx_{v}.yaml")
        ren = sgd.renaming("test", v, root)
        turns = [sgd.rename_turn(t, ren, v) for t in base.turns]
        specs[v] = doc
        out[v] = Slice(f"sgd-x-{v}", f"sgdx_{v}.jsonl", f"specs/sgdx_{v}.yaml", turns,
                       {"replay_of": "sgd"})
    return specs, out


# ---------------------------------------------------------------------------------------------
# ABCD


def build_abcd(cfg: BuildConfig, root: Path) -> tuple[SpecDoc, Slice]:
    """ABCD-UV: action-grounded turns, UV-injected; needs the full corpus."""
    corpus = abcd.require_full_corpus(root)
    doc = abcd.compile_spec(root)
    bundle = parse_spec(doc, "abcd.yaml")
    convos = abcd.load_conversations(corpus)
    turns = [t for t in abcd.iter_turns(convos, root) if t["meta"]["actions"]]
    values = abcd.value_pool(convos, root)
    rng = rng_for(cfg.seed, "abcd-uv")
    strata: dict[str, list[TurnDict]] = {}
    for t in turns:
        strata.setdefault(t["workflow"], []).append(t)
    need = -(-cfg.abcd_turns // max(cfg.abcd_workflows, 1))  # turns per workflow, rounded up
    ok = sorted(w for w, ts in strata.items() if len({t["dialogue_id"] for t in ts}) >= need)
    chosen = sorted(rng.sample(ok, min(cfg.abcd_workflows, len(ok))))
    per = split_even(cfg.abcd_turns, len(chosen)) if chosen else []
    order = list(chosen)
    rng.shuffle(order)
    sizes = {w: p for w, p in zip(order, sorted(per, reverse=True), strict=True)}
    envs = {w: InjectionEnv(bundle.workflows[w], False, "task", values) for w in chosen}
    used: set[str] = set()
    out, stats = _stratified("abcd-uv", {w: strata[w] for w in chosen}, sizes,
                             {"UV": cfg.abcd_injected}, lambda t: envs[t["workflow"]], rng, used)
    return doc, Slice("abcd-uv", "abcd_uv.jsonl", "specs/abcd.yaml", out, stats)


# ---------------------------------------------------------------------------------------------
# writing


def strip_acts(t: TurnDict) -> TurnDict:
    """The text-only form of a turn: no user_values, no agent_acts."""
    return {k: v for k, v in t.items() if k not in ("user_values", "agent_acts")}


def dump_spec(doc: SpecDoc) -> str:
    header = "# Compiled by sage-tod from the dataset schema; see docs/datasets.md.\n"
    return header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def _mw_files() -> list[str]:
    """Validation dialogues and schema; the databases and ontology feed the UV value pool, so
    without them the slices would come out different, not fail."""
    return [multiwoz.SPLIT_FILES["val"], multiwoz.SCHEMA, multiwoz.ONTOLOGY,
            *(f"multiwoz/db/{d}_db.json" for d in multiwoz.DOMAINS)]


# The data files each slice reads (relative to the data directory), checked before any work
# so that one error lists everything that is missing and where to get it.
def needed_files(names: Sequence[str]) -> list[str]:
    """Data-relative paths the named slices need, in a stable order without repeats."""
    out: list[str] = []
    for n in names:
        if n in ("mw-mixed", "uv-rich", "dev", "tune-mw"):
            out += _mw_files()
        elif n == "sgd":
            out += [sgd.schema_path("test"), "sgd/test"]
        elif n == "sgd-x":
            out += [sgd.schema_path("test"), "sgd/test",
                    *(sgd.schema_path("test", v) for v in sgd.VARIANTS)]
        elif n == "tune-sgd":
            out += [sgd.schema_path("dev"), "sgd/dev"]
        elif n == "abcd-uv":
            out += [abcd.FULL, abcd.ONTOLOGY, abcd.KB]
    return list(dict.fromkeys(out))


def check_requested(names: Sequence[str], root: Path) -> list[str]:
    """Validate slice names; fail early (before any work) when ABCD's corpus is missing."""
    bad = [n for n in names if n not in SLICE_NAMES]
    if bad:
        raise ValueError(f"unknown slice(s) {', '.join(bad)}; choose from "
                         + ", ".join(SLICE_NAMES))
    if "abcd-uv" in names:
        abcd.require_full_corpus(root)
    require_all(needed_files(names), root)
    return list(names)


def build(out_dir: Path, names: Sequence[str] = DEFAULT_SLICES, cfg: BuildConfig | None = None,
          root: Path | None = None) -> dict[str, Any]:
    """Build the named slices into `out_dir`; returns the manifest (also written there)."""
    cfg = cfg or BuildConfig()
    if root is None:
        require_all(needed_files(names))  # $SAGE_TOD_DATA unset: say what is needed
    base = root if root is not None else data_root()
    names = check_requested(names, base)
    specs: dict[str, SpecDoc] = {}
    slices: list[Slice] = []
    if {"mw-mixed", "uv-rich", "dev", "tune-mw"} & set(names):
        doc, mw = build_multiwoz(cfg, base)
        specs["multiwoz"] = doc
        slices += [mw[n] for n in ("mw-mixed", "uv-rich", "dev", "tune-mw") if n in names]
    if {"sgd", "sgd-x"} & set(names):
        doc, s = build_sgd(cfg, base)
        if "sgd" in names:
            specs["sgd"] = doc
            slices.append(s)
        if "sgd-x" in names:
            vspecs, vslices = build_sgdx(s, base)
            for v, d in vspecs.items():
                specs[f"sgdx_{v}"] = d
            slices += list(vslices.values())
    if "tune-sgd" in names:
        doc, s = build_sgd(cfg, base, split="dev")
        specs["sgd_dev"] = doc
        slices.append(s)
    if "abcd-uv" in names:
        doc, a = build_abcd(cfg, base)
        specs["abcd"] = doc
        slices.append(a)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, doc in specs.items():
        p = out_dir / "specs" / f"{name}.yaml"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(dump_spec(doc), encoding="utf-8", newline="\n")
    manifest: dict[str, Any] = {"seed": cfg.seed, "acts": cfg.acts, "slices": {}}
    for sl in slices:
        rows = sl.turns if cfg.acts else [strip_acts(t) for t in sl.turns]
        write_jsonl(out_dir / sl.file, rows)
        manifest["slices"][sl.name] = {"file": sl.file, "spec": sl.spec_file,
                                       **summarize(sl.turns), "build": sl.stats}
    (out_dir / "manifest.json").write_text(dumps_line(manifest) + "\n", encoding="utf-8",
                                           newline="\n")
    return manifest


__all__ = ["DEFAULT_SLICES", "SLICE_NAMES", "BuildConfig", "DataMissing", "Slice", "build"]
