"""No secret reaches the model, a log or a database: canary secrets through every flow the chapters run.

Three canaries (a token, a password, a non-ASCII secret) travel in fields named like secrets, inside nested
objects, in array items and in free text. Each flow below runs for real; afterwards every object it returned, every
line it printed and every file it wrote (SQLite databases with their WAL files included) is searched for each
canary in every form a serializer could give it: as is, JSON-escaped, repr-escaped and unicode-escaped. Each flow
is one *place*; the test asserts that no place holds a canary. ``python tests/test_canary.py`` prints the count.
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest

import toolkit as tk
from course.worlds import ScriptedPolicy
from toolkit.kernel import Contract, Retry, ToolFailure, Status, FailureClass

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "sk-CANARY-0f1e2d3c4b5a69788796-CANARY"
PASSWORD = "hunter2-CANARY-correct-horse-CANARY"
UNICODE = "p\u00e4ss-CAN\u00c4RY-w\u00f6rd-\u00fc\u00df-CAN\u00c4RY"
CANARIES = (TOKEN, PASSWORD, UNICODE)


def forms(secret: str) -> set[str]:
    """Every way a serializer could spell ``secret``, plus the marker a cut fragment would still carry."""
    spelled = {secret, json.dumps(secret)[1:-1], repr(secret)[1:-1], secret.encode("unicode_escape").decode("ascii"),
               json.dumps(secret, ensure_ascii=False)[1:-1]}
    return spelled | {"CANARY", "CAN\u00c4RY", "CAN\\u00c4RY", "CAN\\xc4RY", "hunter2", "p\\u00e4ss", "p\u00e4ss"}


FORMS = sorted(set().union(*(forms(s) for s in CANARIES)), key=len, reverse=True)


def as_text(obj: Any) -> str:
    """Everything an object shows: repr, JSON (with dataclass dicts where it has them) and str."""
    parts = [repr(obj), str(obj)]
    for method in ("to_dict", "lines", "line"):
        if hasattr(obj, method):
            try:
                parts.append(repr(getattr(obj, method)()))
            except Exception as exc:  # a method that needs arguments says so in its name only
                parts.append(type(exc).__name__)
    try:
        parts.append(json.dumps(obj, default=repr))
        parts.append(json.dumps(obj, default=repr, ensure_ascii=False))
    except (TypeError, ValueError):
        pass
    if isinstance(obj, (list, tuple)):
        parts += [as_text(o) for o in obj]
    return "\n".join(parts)


def files_text(folder: Path) -> str:
    """Every byte every file under ``folder`` holds, read as text both ways."""
    out = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            out += [data.decode("utf-8", "replace"), data.decode("latin-1")]
    return "\n".join(out)


def found(text: str) -> list[str]:
    return [f for f in FORMS if f in text]


# ------------------------------------------------------------------ the world the flows share
SCHEMA = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "pattern": "^[a-z]+@example[.]org$"},
        "note": {"type": "string", "maxLength": 400},
        "api_key": {"type": "string", "minLength": 8},
        "password": {"type": "string", "minLength": 8},
        "auth": {"type": "object", "properties": {"token": {"type": "string"}, "passphrase": {"type": "string"}}},
        "api_keys": {"type": "array", "items": {"type": "string", "pattern": "^k-[0-9]+$"}},
        "idempotency_key": {"type": "string"},
    },
    "required": ["to", "api_key"],
    "additionalProperties": False,
}
GOOD = {"to": "ops@example.org", "note": f"deploy with {TOKEN}; the password is {PASSWORD}",
        "api_key": TOKEN, "password": PASSWORD, "auth": {"token": TOKEN, "passphrase": UNICODE},
        "idempotency_key": "send:1"}
BAD_TYPES = {**GOOD, "api_key": [TOKEN], "password": 12, "api_keys": [PASSWORD, UNICODE], "to": UNICODE}


def contract(name: str = "send_report", retry: Retry = Retry.SAFE_WITH_KEY) -> Contract:
    return Contract(name, "Send a report.", SCHEMA, retry=retry, reversible=False, idempotency_field="idempotency_key",
                    secret_fields=("password",))


def failing_tools() -> dict[str, Callable]:
    def failure(args, world):
        raise ToolFailure(Status.FAILED, "send_failed", f"could not send {json.dumps(args)}", FailureClass.EXECUTION)

    def tool_error(args, world):
        raise ToolFailure(Status.REJECTED, "bad_auth", f"key {args['api_key']} refused",
                          errors=(tk.ToolError("bad_auth", "$.api_key", "refused", received=args["api_key"],
                                               hint=f"try again without {args['password']}"),))

    def crash(args, world):
        raise RuntimeError(f"boom with {args['auth']} and {args!r}")

    def echo(args, world):
        return {"sent": True, "to": args["to"]}

    return {"failure": failure, "tool_error": tool_error, "crash": crash, "echo": echo}


def host_for(run: Callable) -> tk.Host:
    return tk.Host.of([tk.Tool(contract(), run)], tk.Caller("agent"))


# ------------------------------------------------------------------ the places
def place_verdicts() -> str:
    host = host_for(failing_tools()["echo"])
    shown = []
    for args in (BAD_TYPES, json.dumps(BAD_TYPES), {"to": "x", "api_key": {"nested": {"token": TOKEN}}}):
        verdict = host.check(tk.request("send_report", args, call_id="v1"))
        shown += [as_text(verdict), as_text(list(verdict.errors)), as_text([e.to_dict() for e in verdict.errors])]
    return "\n".join(shown)


def place_rejections() -> str:
    host = host_for(failing_tools()["echo"])
    results = [host.execute(tk.request("send_report", a, call_id=f"r{i}"))
               for i, a in enumerate((BAD_TYPES, json.dumps(BAD_TYPES)))]
    return as_text(results) + as_text([r.to_dict() for r in results])


def place_tool_failures() -> str:
    shown = []
    for name, run in failing_tools().items():
        host = host_for(run)
        result = host.execute(tk.request("send_report", GOOD, call_id=f"t-{name}"))
        shown += [as_text(result), as_text(result.to_dict())]
    return "\n".join(shown)


def place_host_log() -> str:
    host = host_for(failing_tools()["failure"])
    host.execute(tk.request("send_report", GOOD, call_id="l1"))
    host.execute(tk.request("send_report", json.dumps(GOOD), call_id="l2"))
    return as_text(host.log) + "\n".join(as_text(a.call) + as_text(a.verdict) for a in host.log)


def place_call_summary() -> str:
    calls = [tk.request("send_report", GOOD, call_id="s1"), tk.request("send_report", json.dumps(GOOD), call_id="s2"),
             tk.request("send_report", {"note": "x" * 100, "api_key": TOKEN}, call_id="s3")]
    return "\n".join(c.summary() for c in calls)


def place_loop_transcript() -> str:
    host = host_for(failing_tools()["failure"])
    script = [tk.request("send_report", GOOD, call_id="p1"), tk.request("send_report", BAD_TYPES, call_id="p2")]
    state = tk.evaluate(tk.State("send the report"), ScriptedPolicy(script), host, tk.MemoryLedger())
    return "\n".join(state.transcript()) + as_text(state)


def place_memory_ledger() -> str:
    ledger = tk.MemoryLedger()
    host = host_for(failing_tools()["failure"])
    results = [tk.invoke_with_ledger(host, tk.request("send_report", a, call_id=f"m{i}"), ledger)
               for i, a in enumerate((GOOD, json.dumps(GOOD)))]
    return as_text(results) + repr(vars(ledger))


def place_durable_ledger(tmp: Path) -> str:
    host = host_for(failing_tools()["failure"])
    with tk.DurableLedger(tmp / "ledger.db") as ledger:
        results = [tk.invoke_with_ledger(host, tk.request("send_report", a, call_id=f"q{i}"), ledger)
                   for i, a in enumerate((GOOD, json.dumps(GOOD)))]
        results.append(tk.invoke_with_ledger(host_for(failing_tools()["crash"]),
                                             tk.request("send_report", {**GOOD, "idempotency_key": "k2"}), ledger))
    return as_text(results) + files_text(tmp)


def place_records() -> str:
    from toolkit._show import summarize
    from toolkit.effects import open_record

    long_args = {"note": "n" * 110, "api_key": TOKEN, "password": PASSWORD}
    record = open_record(tk.request("send_report", GOOD, call_id="e1"), "agent", contract())
    record.move("approved")
    return "\n".join([summarize(GOOD, ("password",)), summarize(long_args),
                      summarize(json.dumps(GOOD)), as_text(record)] + [t.line() for t in record.transitions])


def place_audit(tmp: Path) -> str:
    from toolkit.effects import AuditLog, run_audited

    with AuditLog(tmp / "audit.db") as log:
        for name in ("failure", "echo"):
            run_audited(host_for(failing_tools()[name]), tk.request("send_report", GOOD, call_id=f"a-{name}"),
                        log, "agent-427")
        run_audited(host_for(failing_tools()["echo"]), tk.request("send_report", BAD_TYPES, call_id="a-bad"),
                    log, "agent-427")
        shown = log.trail() + log.replay(write=lambda line: None) + [as_text(log.events())]
    return "\n".join(shown) + files_text(tmp)


def place_streaming() -> str:
    from toolkit.kernel import Assembler

    # A preview cannot mask a password that free text repeats before the password field itself has arrived
    # (it does not know yet that the words are a secret): the model's fields arrive here secret fields first.
    text = json.dumps({k: GOOD[k] for k in ("password", "auth", "api_key", "to", "note", "idempotency_key")})
    stream = Assembler()
    stream.add(0, call_id="c1", name="send_report")
    shown = []
    for i in range(0, len(text), 7):
        stream.add(0, arguments=text[i:i + 7])
        shown.append(as_text(stream.previews()))
    cut = Assembler()
    cut.add(0, call_id="c2", name="send_report", arguments=text[:60])
    shown += [as_text(cut.previews()), as_text(cut.finish("length")), as_text(stream.finish("tool_calls"))]
    return "\n".join(shown)


def place_vendor_messages() -> str:
    from toolkit.wire import openai_tool_messages, anthropic_tool_results
    from toolkit._ids import IdMap

    host = host_for(failing_tools()["tool_error"])
    ids = IdMap()
    results = []
    for vendor in ("openai", "anthropic"):
        call_id = ids.internal(vendor, f"toolu_{vendor}")
        results.append(host.execute(tk.request("send_report", GOOD, call_id=call_id)))
    openai_results, anthropic_results = results[:1], results[1:]
    return as_text(openai_tool_messages(openai_results, ids)) + as_text(anthropic_tool_results(anthropic_results, ids))


def place_billing_service(tmp: Path) -> str:
    from course.worlds import BillingService

    service = BillingService(tmp / "billing.db")
    bad = {"order_id": "order-431", "amount": 100, "currency": "EUR", "idempotency_key": "k", "api_key": TOKEN,
           "password": PASSWORD, "auth": {"passphrase": UNICODE}}
    answers = [service.create_invoice(bad), service.create_invoice(json.dumps(bad)),
               service.create_invoice({**bad, "order_id": UNICODE})]
    service.conn.close()
    return as_text(answers) + files_text(tmp)


PLACES: dict[str, Callable[..., str]] = {
    "verdicts and their errors": place_verdicts,
    "rejected results": place_rejections,
    "tool failures (message, ToolError, crash)": place_tool_failures,
    "host log": place_host_log,
    "ToolCall.summary": place_call_summary,
    "loop transcript": place_loop_transcript,
    "memory ledger": place_memory_ledger,
    "SQLite ledger and ledger.db": place_durable_ledger,
    "execution records": place_records,
    "audit log and audit.db": place_audit,
    "streaming previews and refusals": place_streaming,
    "vendor result messages": place_vendor_messages,
    "billing service and billing.db": place_billing_service,
}


def run_place(name: str) -> list[str]:
    fn = PLACES[name]
    with tempfile.TemporaryDirectory(prefix="canary-") as folder:
        text = fn(Path(folder)) if fn.__code__.co_argcount else fn()
    return found(text)


@pytest.mark.parametrize("name", list(PLACES))
def test_no_canary_reaches_this_place(name: str):
    assert run_place(name) == [], f"{name} shows a secret"


def notebook_secrets() -> dict[str, set[str]]:
    """The secret values each stored notebook's own code puts in secret-named fields."""
    pattern = re.compile(r"""["'](\w*(?:token|api_key|password|secret|passphrase)\w*)["']\s*:\s*["']([^"']{6,})["']""")
    out = {}
    for path in sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("solutions/*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        out[path.name] = {m.group(2) for m in pattern.finditer(code)}
    return out


def test_no_stored_notebook_output_shows_a_secret_its_code_used():
    leaks = []
    for path in sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("solutions/*.ipynb")):
        secrets = notebook_secrets()[path.name]
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        shown = json.dumps([c.get("outputs", []) for c in cells if c["cell_type"] == "code"], ensure_ascii=False)
        leaks += [f"{path.name}: {s[:4]}..." for s in secrets if s in shown or json.dumps(s)[1:-1] in shown]
    assert leaks == []


if __name__ == "__main__":
    hits = {name: run_place(name) for name in PLACES}
    for name, h in hits.items():
        print(f"{'LEAK' if h else 'ok  '}  {name}  {h[:4]}")
    print(f"{sum(bool(h) for h in hits.values())} of {len(hits)} places show a canary")
    sys.exit(0)
