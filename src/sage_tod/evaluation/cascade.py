"""The cascade: route each criterion through the configured stages in order.

A stage sees only the criteria it accepts that no earlier stage decided;
abstentions pass on. A stage that raises does not crash the run: its criteria
abstain with the error as the reason (a verifier never guesses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sage_tod.compiler.kinds import BUILTIN_CRITERIA
from sage_tod.contracts.criteria import Criterion, Decision, Outcome
from sage_tod.contracts.errors import InputError, InputProblem
from sage_tod.evaluation.configs import CONFIGS, config_names, get_config
from sage_tod.plugins import UnknownName
from sage_tod.verifiers.base import Item, Stage, StageUnavailable, build_stage


@dataclass(frozen=True)
class StageStep:
    """One stage's answer to one criterion, kept for the evidence trace."""

    stage: str
    decision: Decision


@dataclass
class CriterionResult:
    criterion: Criterion
    decision: Decision
    decided_by: str | None
    trace: list[StageStep] = field(default_factory=list)


class UnknownConfig(InputError, UnknownName):
    """A configuration name nobody registered: an input error (exit 2), and a KeyError
    (`UnknownName`) as before."""

    def __init__(self, name: object) -> None:
        UnknownName.__init__(self, "config", str(name), config_names())
        self.problem = InputProblem("--config", str(self.args[0]))


class Cascade:
    """An ordered list of stages; `missing` says which configured stages could not run."""

    def __init__(self, stages: Sequence[Stage], missing: Mapping[str, str] | None = None,
                 config: str = "custom", criteria: Sequence[str] = BUILTIN_CRITERIA) -> None:
        self.stages = list(stages)
        self.missing = dict(missing or {})
        self.config = config
        self.criteria = tuple(criteria)

    @classmethod
    def from_config(cls, name: str, options: Mapping[str, Any] | None = None) -> Cascade:
        if not isinstance(name, str) or name not in CONFIGS:
            raise UnknownConfig(name)
        if options is not None and not isinstance(options, Mapping):
            raise InputError("<options>", f"options must be a mapping, got "
                                          f"{type(options).__name__}")
        stages: list[Stage] = []
        missing: dict[str, str] = {}
        config = get_config(name)
        for stage_name in config.stages:
            try:
                stages.append(build_stage(stage_name, dict(options or {})))
            except StageUnavailable as exc:
                missing[stage_name] = str(exc)
            except (TypeError, ValueError) as exc:  # an option of the wrong type or range
                raise InputError("<options>", f"{stage_name}: {exc}") from None
        return cls(stages, missing, name, config.criteria)

    @property
    def stage_names(self) -> list[str]:
        """The stages that run (a configured stage that could not be built is in `missing`)."""
        return [s.name for s in self.stages]

    def fingerprint(self) -> dict[str, object]:
        """What determines this cascade's answers, per stage (for resume checks): a stage
        with a `fingerprint()` method (S2: model hash, backend, claim design; S3: endpoint
        and model) reports it; others report their name."""
        out: dict[str, object] = {}
        for s in self.stages:
            fp = getattr(s, "fingerprint", None)
            out[s.name] = fp() if callable(fp) else {}
        return {"config": self.config, "stages": out, "missing": sorted(self.missing),
                "criteria": list(self.criteria)}

    def run(self, items: Sequence[Item]) -> list[CriterionResult]:
        why = "no stage accepted it"
        if self.missing:  # say which configured stage would have been asked
            why = ("no available stage decided it; configured but not available: "
                   + "; ".join(f"{k} ({v})" for k, v in sorted(self.missing.items())))
        # one answer for every item no stage has answered yet (a `Decision` is frozen, so
        # the items can share it; each gets its own when a stage answers)
        unanswered = Decision.abstain(why)
        results = [CriterionResult(it.criterion, unanswered, None) for it in items]
        for stage in self.stages:
            idx = [i for i, r in enumerate(results)
                   if r.decided_by is None and stage.accepts(r.criterion)]
            if not idx:
                continue
            try:
                decisions = stage.decide([items[i] for i in idx])
                if len(decisions) != len(idx):
                    raise RuntimeError(f"returned {len(decisions)} decisions for {len(idx)}")
            except Exception as exc:  # a failing stage abstains, it never guesses
                decisions = [Decision.abstain(f"{stage.name} error: {exc}")] * len(idx)
            for i, d in zip(idx, decisions, strict=True):
                res = results[i]
                res.trace.append(StageStep(stage.name, d))
                res.decision = d
                if d.outcome is not Outcome.ABSTAIN:
                    res.decided_by = stage.name
        for res in results:
            if res.decided_by is None and len(res.trace) > 1:
                # every stage abstained: keep each one's reason, not only the last
                why = "; ".join(f"{s.stage}: {s.decision.rationale}" for s in res.trace)
                res.decision = Decision(Outcome.ABSTAIN, res.decision.margin, why,
                                        res.decision.evidence)
        return results
