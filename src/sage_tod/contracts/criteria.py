"""Typed records that cross module boundaries: spans, criteria, decisions.

A `Criterion` is one atomic, independently verifiable question compiled from a
turn. A `Decision` is one stage's answer to it. Both serialise into the public
verdict format (docs/formats.md), so their field names are a contract.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

SpanSource = Literal["user", "agent", "history.user", "history.agent", "state_before",
                     "state_after", "tool_call", "tool_result", "user_tool_result"]


class FailureClass(StrEnum):
    """The paper's taxonomy C of workflow failures."""

    IUV = "IUV"  # ignored user value
    WNF = "WNF"  # wrong next field
    PC = "PC"  # premature confirmation
    UV = "UV"  # unsupported value


# The built-in classes in report order (IUV, WNF, PC, UV): every table, count and sort uses this.
CLASS_ORDER: tuple[FailureClass, ...] = tuple(FailureClass)
CLASS_NAMES: tuple[str, ...] = tuple(c.value for c in CLASS_ORDER)
ClassName = Literal["IUV", "WNF", "PC", "UV"]  # for static types; equals CLASS_NAMES
# a criterion class a plugin adds (docs/api.md): a name like the built-ins'
_PLUGIN_CLASS_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,31}$")


def class_rank(name: str) -> int:
    """Sort key: built-in classes in CLASS_ORDER, then plugin classes."""
    return CLASS_ORDER.index(FailureClass(name)) if name in FailureClass._value2member_map_ \
        else len(CLASS_ORDER)


def as_failure_class(value: Any) -> Any:
    """A built-in class name becomes its `FailureClass` member; plugin names stay strings."""
    if isinstance(value, str) and not isinstance(value, FailureClass):
        if value in FailureClass._value2member_map_:
            return FailureClass(value)
        if not _PLUGIN_CLASS_RE.match(value):
            raise ValueError(f"{value!r} is not a criterion class name")
    return value


class Outcome(StrEnum):
    """A stage's answer: TRUE means the failure fires."""

    TRUE = "true"
    FALSE = "false"
    ABSTAIN = "abstain"


class Span(BaseModel):
    """A minimal evidence span: which utterance, which characters, what they say."""

    model_config = ConfigDict(frozen=True)
    source: SpanSource
    index: int | None = Field(default=None, description="history position for history.* "
                              "and tool_* (null: a call of this turn)")
    start: int
    end: int
    text: str
    call: int | None = Field(default=None, description="tool_*: the call's position in its "
                             "entry's tool_calls")
    path: str | None = Field(default=None, description="tool_*: dotted path into the call's "
                             "arguments (tool_call) or result (tool_result)")

    @model_serializer(mode="wrap")
    def _drop_unset_tool_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # spans of text utterances serialise exactly as before the tool fields existed
        d: dict[str, Any] = handler(self)
        for k in ("call", "path"):
            if d.get(k) is None:
                d.pop(k, None)
        return d


class CriterionArgs(BaseModel):
    """The arguments of one criterion; each class has its own model (below).

    A plugin's criterion class subclasses this (docs/api.md). `as_dict` is the
    form written into verdicts, field order included (docs/formats.md).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    failure_class: ClassVar[str] = ""

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class _ToolCallFields(CriterionArgs):
    """The call a tool-agent criterion is about (absent on state-diff criteria, whose
    verdict lines stay as they were)."""

    tool: str | None = None
    call: int | None = Field(default=None, description="position in the turn's tool_calls")

    def as_dict(self) -> dict[str, Any]:
        d = self.model_dump(mode="json")
        for k in ("tool", "call", "path", "rule"):
            if k in d and d[k] is None:
                del d[k]
        return d


class UVArgs(_ToolCallFields):
    """UV: a value Δ_t writes (or a leaf of a tool call's arguments at `path`), and what the
    slot held before."""

    failure_class: ClassVar[str] = FailureClass.UV
    slot: str
    value: str
    old: str | None = None
    path: str | None = None


# How sure an extraction of a user value (`IUVArgs.confidence`) must be, for whom. The
# compiler writes the confidence, the verifiers read it: the two thresholds are the
# contract between them, so they live here, below both layers, not in the extractor.
# Below the floor (Appendix J) a value is not worth a criterion: the extractor drops it
# and S2 abstains on one it is handed.
EXTRACTION_FLOOR = 0.5
# At or above it (with one candidate slot) an extraction is exact: S1 may decide IUV on
# it alone; below it the criterion is left to S2 (`nlu`).
EXACT = 0.9


class IUVArgs(_ToolCallFields):
    """IUV: a value the user supplied, the slots it may fill, and how sure extraction is
    (for a tool call: a value the user asked for that the call does not carry)."""

    failure_class: ClassVar[str] = FailureClass.IUV
    slot: str
    candidates: tuple[str, ...]
    value: str
    readings: tuple[str, ...]
    confidence: float = Field(ge=0.0, le=1.0)
    source: str
    state_after: dict[str, str | None]


class WNFArgs(CriterionArgs):
    """WNF: the slot(s) the agent requests and what else it asked for in the same turn."""

    failure_class: ClassVar[str] = FailureClass.WNF
    slot: str
    candidates: tuple[str, ...]
    source: str
    asked_with: tuple[str, ...] = ()


class PCArgs(_ToolCallFields):
    """PC: how the confirmation was detected (dialogue acts, a cue, or only implied),
    the cue, and the outcome predicate. For a tool call: a precondition of the call
    (`certainty` names its kind, `rule` its id, `outcome` the condition)."""

    failure_class: ClassVar[str] = FailureClass.PC
    certainty: Literal["agent_acts", "cue", "implied", "tool_confirmation", "tool_order",
                       "tool_rule", "tool_claim", "tool_count", "tool_handoff"]
    cue: str
    outcome: str
    rule: str | None = None


BUILTIN_ARGS: dict[str, type[CriterionArgs]] = {
    m.failure_class: m for m in (IUVArgs, WNFArgs, PCArgs, UVArgs)}


class Criterion(BaseModel):
    """One compiled criterion k = (class, args, evidence) and the question it asks."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)
    id: str
    failure_class: FailureClass | str = Field(alias="class")
    args: SerializeAsAny[CriterionArgs]
    question: str
    evidence: Span | None = None
    nlu: bool = Field(default=False, description="needs language understanding (S2 may decide)")
    open_class: bool = Field(default=False, description="eligible for the focused-LLM stage S3")

    _class_name = field_validator("failure_class", mode="before")(as_failure_class)

    @model_validator(mode="before")
    @classmethod
    def _typed_args(cls, data: Any) -> Any:
        """Plain-dict args of a built-in class are read into that class's model."""
        if isinstance(data, dict) and isinstance(data.get("args"), dict):
            name = data.get("class", data.get("failure_class"))
            model = BUILTIN_ARGS.get(str(name))
            if model is not None:
                data = {**data, "args": model.model_validate(data["args"])}
        return data

    @model_validator(mode="after")
    def _args_match_class(self) -> Criterion:
        declared = type(self.args).failure_class
        if declared and declared != self.failure_class:
            raise ValueError(f"{type(self.args).__name__} belongs to class {declared}, "
                             f"not {self.failure_class}")
        return self


@dataclass(frozen=True)
class Decision:
    """One stage's answer to one criterion."""

    outcome: Outcome
    margin: float
    rationale: str
    evidence: Span | None = None
    cost_usd: float = 0.0

    @staticmethod
    def abstain(rationale: str, margin: float = 0.0) -> Decision:
        return Decision(Outcome.ABSTAIN, margin, rationale)
