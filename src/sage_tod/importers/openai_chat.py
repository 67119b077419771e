"""`openai-chat`: conversations logged as OpenAI chat-completion messages.

One conversation per record: a JSON file holding one record or a list of them,
or JSONL with one record per line. A record is `{"messages": [...]}` (an id in
`id`, `conversation_id` or `dialogue_id`, else `FILE-INDEX`; an optional
`metadata`/`meta` object is carried into each turn's `meta`), or a bare list of
messages. Roles are `system` (or `developer`), `user`, `assistant` and `tool`;
assistant `tool_calls[].function.arguments` is a JSON *string*, as the API
returns it. Turns and state: `sage_tod.importers.chat`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle
from sage_tod.importers.base import ImportResult, TurnDict
from sage_tod.importers.chat import counted_conversation, parse_messages
from sage_tod.importers.records import Record, check_roles, iter_records, json_records

_ID_KEYS = ("id", "conversation_id", "dialogue_id")


def _is_message(obj: Any) -> bool:
    return isinstance(obj, dict) and "role" in obj


def _whole(top: Any) -> Any:
    if isinstance(top, list) and top and all(_is_message(m) for m in top):
        return [{"messages": top}]  # one conversation written as a bare message list
    return top


def read(path: Path, spec: SpecBundle, *, workflow: str | None = None,
         tool_results: bool = False, **_: Any) -> ImportResult:
    res = ImportResult(format="openai-chat", path=str(path))
    res.turns.extend(stream(res, path, spec, workflow=workflow, tool_results=tool_results))
    return res


def stream(res: ImportResult, path: Path, spec: SpecBundle, *, workflow: str | None = None,
           tool_results: bool = False, **_: Any) -> Iterator[TurnDict]:
    """The turns of `path`, one record (conversation) at a time, counted in `res`: JSONL
    line by line, a large JSON list item by item (`records.json_records`)."""
    recs: Iterable[Record] = (json_records(path, _whole, _is_message)
                              if path.suffix.lower() == ".json" else iter_records(path))
    for rec in recs:
        obj = rec.obj
        if isinstance(obj, list):
            obj = {"messages": obj}
        if not isinstance(obj, dict):
            raise InputError(path, "a conversation record must be an object with "
                             "'messages'", line=rec.line, field=rec.loc or None)
        if "messages" not in obj:
            raise InputError(path, "missing field 'messages'", line=rec.line,
                             field=rec.field("messages"))
        check_roles(obj["messages"], path, rec.line, rec.field("messages"))
        msgs = parse_messages(obj["messages"], path, rec.line, rec.field("messages"))
        did = next((str(obj[k]) for k in _ID_KEYS if isinstance(obj.get(k), str | int)),
                   f"{path.stem}-{rec.index}")
        extra = obj.get("metadata", obj.get("meta"))
        meta: dict[str, Any] = {"source": "openai-chat", "record": rec.where}
        if isinstance(extra, dict):
            meta["log"] = extra
        yield from counted_conversation(res, msgs, spec, did, rec.where, workflow=workflow,
                                        meta=meta, tool_results=tool_results)
