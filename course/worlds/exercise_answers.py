"""Chapter 09: exercise 09's given parts: the desk, the shapes of OpenAI's messages, one recorded round, the loop.

The student writes the answer to one round: each call the model sent, refused
ones too, gets the host's verdict (a ``Refusal`` answers with its own result)
and goes back under the id the model gave it. What is plumbing is here:

* ``todo_desk()``: a temporary folder with a workspace holding ``notes/todo.md``
  and, beside it, a planted secret no read may return; ``desk.host()`` is a
  fresh host with ``read_file`` confined to the workspace. The folder is removed
  by ``close()``, at the end of a ``with`` block, or at interpreter exit;
* ``call_entry``, ``assistant_turn`` and ``tool_answer``: OpenAI's shapes for an
  echoed call, the assistant turn that carried the calls, and a result;
* ``two_calls()``: one recorded response (a good read and a call cut in the
  middle of its arguments) read into items, with the id map that read them;
* ``run_with(answer_round, chat, host)``: the smallest loop: ask, stop when the
  model is done, otherwise append ``answer_round``'s messages and ask again.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from toolkit.kernel import Host, ToolResult
from toolkit.kernel import make_read_file
from toolkit.wire import openai_calls
from toolkit._ids import IdMap
from course.worlds import ScratchFolder

DESK_TODO = "1. ship the invoice fix\n2. answer Ana\n"
DESK_SECRET = "planted secret\n"
#: One response with two calls: a read of the todo list, and a call whose arguments were cut off.
TWO_CALLS = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
    {"id": "call_good", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "notes/todo.md"}'}},
    {"id": "call_half", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "no'}}]}}]}


class TodoDesk(ScratchFolder):
    """The folder ``todo_desk`` made: ``workspace`` (the todo list) and, beside it, ``secret.txt``."""

    def __init__(self, prefix: str = "exercise09-"):
        super().__init__(prefix)
        self.workspace = self.base / "work"

    def __repr__(self) -> str:   # no machine paths in a notebook
        return "TodoDesk(<base>: work/notes/todo.md, secret.txt)"

    def host(self) -> Host:
        """A fresh host (empty log) whose only tool is ``read_file``, confined to the workspace."""
        return Host.of([make_read_file(self.workspace)])


def todo_desk(prefix: str = "exercise09-") -> TodoDesk:
    """Make the exercise's folder in a temporary place the desk owns."""
    desk = TodoDesk(prefix)
    try:
        (desk.workspace / "notes").mkdir(parents=True)
        (desk.workspace / "notes" / "todo.md").write_text(DESK_TODO, encoding="utf-8")
        (desk.base / "secret.txt").write_text(DESK_SECRET, encoding="utf-8")
    except BaseException:
        desk.close()
        raise
    return desk


def call_entry(vendor_id: str, name: str | None, arguments: str) -> dict[str, Any]:
    """One echoed call, as an assistant turn's ``tool_calls`` lists it (``arguments`` is text)."""
    return {"id": vendor_id, "type": "function", "function": {"name": name or "", "arguments": arguments}}


def assistant_turn(entries: Any) -> dict[str, Any]:
    """The assistant turn that carried ``entries`` (by ``call_entry``; any iterable, or None)."""
    return {"role": "assistant", "content": None, "tool_calls": list(entries or ())}


def tool_answer(vendor_id: str, result: ToolResult | Any) -> dict[str, Any]:
    """The ``role: "tool"`` message answering the call the model knows as ``vendor_id``.

    Anything but a ``ToolResult`` goes as the JSON it makes (``None`` as ``null``): a wrong
    verdict is the check's to explain, not a crash here."""
    content = result.to_dict() if isinstance(result, ToolResult) else result
    return {"role": "tool", "tool_call_id": vendor_id, "content": json.dumps(content, default=str)}


def two_calls() -> tuple[list[Any], IdMap]:
    """``TWO_CALLS`` read into items (a ``ToolCall`` and a ``Refusal``), and the id map that read them."""
    ids = IdMap()
    return openai_calls(json.loads(json.dumps(TWO_CALLS)), ids), ids


def run_with(answer_round: Callable[..., list], chat: Any, host: Host, max_rounds: int = 4
             ) -> tuple[bool, str, int]:
    """(finished, the model's last text, requests made): ask at most ``max_rounds`` times, answering each round
    with ``answer_round(items, host, chat.ids)`` appended to the conversation."""
    for used in range(1, max_rounds + 1):
        reply = chat.ask()
        if reply.finished:
            return True, reply.text, used
        chat.messages.extend(answer_round(list(reply.items), host, chat.ids))
    return False, "", max_rounds


__all__ = ["assistant_turn", "call_entry", "DESK_SECRET", "DESK_TODO", "run_with", "todo_desk", "TodoDesk", "tool_answer",
           "TWO_CALLS", "two_calls"]
