"""The boundary holds when an MCP server lies: its schemas, its patterns, its listing, its answers.

A scripted server (``tests/hostile_mcp_server.py``, plain JSON-RPC over stdio, driven through the
official client by ``McpConnection``) lists tools whose schemas reach for a socket or a file,
reopen themselves, are not objects, or share a name, and answers with secrets and 20 MB. Patterns
of the classic catastrophic shapes are checked on long texts, and their meaning is compared with
the ECMA-262 engine's on short ones. The course's own server keeps digests, not outputs, over
10,000 large reads. Everything started is stopped by its ``with``.
"""
from __future__ import annotations

import contextlib
import gc
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from toolkit._caps import LOG_KEEP, MAX_ANSWER_BYTES, MAX_SCHEMA_BYTES
from toolkit._patterns import pattern_matches
from toolkit._schema import compile_schema, schema_errors
from toolkit.kernel import Contract, ContractError, MemoryLedger, Status

mcp_types = pytest.importorskip("mcp.types")

from toolkit.mcp import McpConnection, McpHost, Trust, answer_call, serving_host  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SERVER = Path(__file__).resolve().parent / "hostile_mcp_server.py"


@contextlib.contextmanager
def silent_socket():
    """A loopback port that accepts connections and never answers; yields (url, connections)."""
    accepted: list = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(0.2)
        stop = threading.Event()

        def accept():
            while not stop.is_set():
                with contextlib.suppress(OSError):
                    accepted.append(listener.accept()[0])

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json", accepted
        finally:
            stop.set()
            thread.join(5)
            for conn in accepted:
                conn.close()


def obj(properties, **more):
    return {"type": "object", "properties": properties, **more}


# ------------------------------------------------------------ $ref: nothing is fetched or opened
def test_a_ref_outside_the_schema_is_refused_when_declared_and_nothing_is_fetched(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"const": "the-file-content-42"}), encoding="utf-8")
    with silent_socket() as (url, accepted):
        for ref in (url, secret.as_uri(), "other.json#/x"):
            started = time.monotonic()
            with pytest.raises(ContractError, match="points outside the schema") as refused:
                Contract("t", "d", obj({"a": {"$ref": ref}}))
            assert time.monotonic() - started < 5, "declaring waited on something"
            assert "the-file-content-42" not in str(refused.value)
            with pytest.raises(ValueError, match="points outside the schema"):
                compile_schema(obj({"a": {"$ref": ref}}))
        time.sleep(0.3)
        assert accepted == [], "a schema reached out to the socket"
    with pytest.raises(ContractError, match="resolves to nothing"):
        Contract("t", "d", obj({"a": {"$ref": "#/$defs/missing"}}))
    defs = {"$defs": {"a": {"type": "string"}}}
    local = Contract("t", "d", obj({"a": {"$ref": "#/$defs/a"}}, **defs))
    assert schema_errors(local.validator, {"a": "x"}) == []
    assert schema_errors(local.validator, {"a": 1})[0].code == "wrong_type"


# ------------------------------------------------------------ patterns: linear, ECMA-262 meaning
CATASTROPHIC = {r"^(a+)+$": "a", r"^(a|a)*$": "a", r"^(a|aa)+$": "a", r"^(.*a){20}$": "a",
                r"^(\w+\s?)*$": "a", r"^(\d+)*x$": "1", r"\d+\d+\d+x": "1",
                r"^([a-z]+-?)*[a-z]+$": "ab"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("pattern", list(CATASTROPHIC))
def test_a_catastrophic_pattern_costs_no_more_than_its_text_is_long(pattern):
    contract = Contract("t", "d", obj({"s": {"type": "string", "pattern": pattern}}))
    small, large = (CATASTROPHIC[pattern] * n + "!" for n in (2_000, 100_000))
    assert schema_errors(contract.validator, {"s": small})[0].code == "pattern"   # compiled, warmed
    started = time.perf_counter()
    assert schema_errors(contract.validator, {"s": large})[0].code == "pattern"
    seconds = time.perf_counter() - started
    # a backtracking engine needs about 2**100000 steps here (or 100000**3); RE2 needs one pass
    assert seconds < 2.0, f"{pattern} took {seconds:.2f} s on {len(large)} characters"


@pytest.mark.parametrize("pattern, why", [(r"^(?=a)a$", "lookaround"), (r"(?<!x)a", "lookaround"),
                                          (r"^(a)\1$", "backreference"),
                                          (r"a{1001}", "RE2 cannot run it"),
                                          (r"\p{Emoji}", "RE2 cannot run it")])
def test_a_pattern_re2_cannot_run_with_the_same_meaning_is_refused_when_declared(pattern, why):
    with pytest.raises(ContractError, match="cannot be checked in linear time") as refused:
        Contract("t", "d", obj({"s": {"type": "string", "pattern": pattern}}))
    assert why in str(refused.value)


ATOMS = ["a", "b", "1", ".", r"\d", r"\w", r"\s", r"\S", r"\D", r"\W", "[ab]", "[^a]", r"[\d\s]",
         r"\u00e9", r"\p{L}", r"\P{L}", r"\n", r"\x41", "[a-c]", r"\.", r"\b", "é", "[]", "[^]",
         r"\p{Lu}", r"[\w-]"]
pattern_text = st.recursive(
    st.sampled_from(ATOMS),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{1,3}", "*?"])).map(
            lambda t: f"(?:{t[0]}){t[1]}"),
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map(lambda t: f"({t[0]}|{t[1]})"),
        st.tuples(inner).map(lambda t: f"^{t[0]}$")),
    max_leaves=6)


@settings(max_examples=400, deadline=None)
@given(pattern_text, st.text(alphabet="ab1A \n\u00a0\u2028é_-.\t\ufeffÉ", max_size=10))
def test_a_pattern_means_what_ecma_262_says(pattern, text):
    from regress import Regex

    ecma = Regex(pattern, "u").find(text) is not None
    assert pattern_matches(pattern, text) == ecma, (pattern, text)


# ------------------------------------------------------------------ a scripted server that lies
@contextlib.contextmanager
def hostile(tmp_path, listing):
    path = tmp_path / "listing.json"
    path.write_text(json.dumps(listing), encoding="utf-8")
    with McpConnection.stdio([sys.executable, str(SERVER), str(path)], cwd=str(ROOT)) as server:
        yield server


ANSWERING = [{"name": name, "description": name, "inputSchema": obj({"x": {"type": "string"}})}
             for name in ("secrets", "huge", "fail")]
PAYLOAD = {"name": "payload",
           "inputSchema": obj({"payload": {"type": "object"}}, required=["payload"])}


def test_a_listing_that_lies_leaves_out_what_cannot_be_adopted_and_closes_the_rest(tmp_path):
    msg = {"msg": {"type": "string"}}
    with silent_socket() as (url, accepted):
        listing = [
            {"name": "echo", "inputSchema": obj(msg, additionalProperties=True,
                                                patternProperties={"^": {}})},
            {"name": "loose", "inputSchema": obj(msg, unevaluatedProperties=True)},
            {"name": "not_an_object", "inputSchema": "anything"},   # the SDK refuses the listing
            {"name": "twin", "inputSchema": obj({})},
            {"name": "twin", "inputSchema": obj({"x": {}})},
            {"name": "fetcher", "inputSchema": obj({"a": {"$ref": url}})},
            {"name": "stall", "inputSchema": obj({"a": {"pattern": "^(?=a)(a+)+$"}})},
        ] + ANSWERING
        with hostile(tmp_path, listing) as server:
            host = McpHost(server)
            assert sorted(host.contracts) == ["echo", "fail", "huge", "loose", "secrets"]
            assert sorted(host.skipped) == ["fetcher", "not_an_object", "stall", "twin"]
            assert "not an object schema" in host.skipped["not_an_object"]
            assert "names 2 tools" in host.skipped["twin"]
            assert "points outside the schema" in host.skipped["fetcher"]
            assert "linear time" in host.skipped["stall"]
            for name in ("echo", "loose"):
                refused = host.call(name, {"msg": "hi", "admin": True})
                assert refused.status is Status.REJECTED
                assert refused.errors[0].code == "unexpected_property"
            assert host.sent == []
            assert host.call("echo", {"msg": "hi"}).output == {"received": {"msg": "hi"}}
        time.sleep(0.3)
        assert accepted == []


def test_a_schema_too_large_to_check_quickly_is_left_out_with_its_size():
    """Checking a schema against its metaschema costs about its size: a listed inputSchema of
    10,000 properties took 6 s to adopt; past ``MAX_SCHEMA_BYTES`` it is left out at once."""
    from toolkit.mcp import adopt_tool

    wide = obj({f"p{i}": {"type": "string", "pattern": f"^(a+)+{i}$"} for i in range(10_000)})
    started = time.monotonic()
    skipped = adopt_tool(mcp_types.Tool(name="wide", input_schema=wide))
    assert isinstance(skipped, str) and f"over MAX_SCHEMA_BYTES ({MAX_SCHEMA_BYTES})" in skipped
    assert time.monotonic() - started < 5
    fine = obj({f"p{i}": {"type": "string", "maxLength": 40} for i in range(1_000)})
    assert isinstance(adopt_tool(mcp_types.Tool(name="fine", input_schema=fine)), Contract)


def test_a_remote_answer_is_redacted_and_capped_before_the_model_the_ledger_or_the_log(tmp_path):
    with hostile(tmp_path, ANSWERING) as server:
        ledger = MemoryLedger()
        host = McpHost(server, Trust(secret_fields={"secrets": ("account",)}), ledger=ledger)
        answer = host.call("secrets", {"x": "1"})
        assert answer.ok and answer.output["count"] == 3
        huge = host.call("huge", {})
        failed = host.call("fail", {})
        kept = json.dumps([answer.to_dict(), huge.to_dict(), failed.to_dict()], default=str)
        kept += repr(host.host.log) + repr(vars(ledger))
        for secret in ("tok-5f1e9a0b7c", "hunter2-xyzzy", "ACC-991-224", "sk-live0123456789abcdef",
                       "ghp_abcdefghij0123456789"):
            assert secret not in kept, secret
        assert {answer.output[k] for k in ("token", "password", "account")} == {"[redacted]"}
        assert huge.status is Status.FAILED and huge.errors[0].code == "too_large"
        assert f"over the {MAX_ANSWER_BYTES} byte cap" in huge.errors[0].message
        assert len(kept) < 20_000
        assert failed.status is Status.FAILED and "denied" in failed.errors[0].message


@pytest.fixture(scope="module")
def payload_host(tmp_path_factory):
    with hostile(tmp_path_factory.mktemp("payload"), [PAYLOAD]) as server:
        yield McpHost(server, Trust(repeatable=frozenset({"payload"})))


SECRET_NAMES = ["token", "password", "api_key", "sessionId", "clientSecret", "pin", "Authorization"]
secret_value = st.from_regex(r"\AS3cr[A-Za-z0-9]{6,12}\Z")
token_value = st.from_regex(r"\Ask-[A-Za-z0-9]{8,16}\Z")
plain = st.one_of(st.integers(), st.booleans(), st.text(alphabet="abc xyz", max_size=8))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(SECRET_NAMES), secret_value, min_size=1),
       st.dictionaries(st.sampled_from(["note", "name", "items"]), st.one_of(plain, token_value)),
       st.integers(0, 3))
def test_no_secret_a_server_answers_reaches_the_model_or_the_log(payload_host, secrets, ordinary,
                                                                 depth):
    payload = {**ordinary, **secrets}
    for _ in range(depth):
        payload = {"inner": payload, "list": [payload]}
    result = payload_host.call("payload", {"payload": {"data": payload}})
    assert result.ok
    shown = json.dumps(result.to_dict()) + repr(payload_host.host.log[-1])
    tokens = [v for v in ordinary.values() if isinstance(v, str) and v.startswith("sk-")]
    hidden = list(secrets.values()) + tokens
    assert not [value for value in hidden if value in shown]


# ------------------------------------------------------------------ the course's own server
def test_the_courses_server_log_keeps_digests_and_stays_flat_over_10000_large_reads(tmp_path):
    (tmp_path / "big.txt").write_text("line of text\n" * 5_000, encoding="utf-8")   # 65 KB
    host = serving_host(tmp_path)
    first = answer_call(host, "read_file", {"path": "big.txt"}, "mcp_0")
    assert first.is_error is False
    kept = host.log[-1].result.output
    assert set(kept) == {"bytes", "sha256"} and kept["bytes"] > 65_000
    psutil = pytest.importorskip("psutil")
    process = psutil.Process()
    gc.collect()
    before = process.memory_info().rss
    for n in range(1, 10_001):    # about 6 ms each on 2 busy cores
        answer_call(host, "read_file", {"path": "big.txt"}, f"mcp_{n}")
    gc.collect()
    grown = process.memory_info().rss - before
    # keeping the outputs of the last LOG_KEEP reads would hold over 65 MB here
    assert grown < 20_000_000, f"the server grew by {grown / 1e6:.1f} MB over 10,000 reads"
    assert len(host.log) == LOG_KEEP
    assert "line of text" not in repr(host.log)


def test_the_courses_server_says_once_on_stderr_what_it_serves(tmp_path):
    command = [sys.executable, "-m", "toolkit.mcp", "serve", "--workspace", str(tmp_path)]
    with McpConnection.stdio(command, cwd=str(ROOT)) as server:
        assert [t.name for t in server.tools()] == ["read_file"]
        deadline = time.monotonic() + 30
        while not server.server_log() and time.monotonic() < deadline:
            time.sleep(0.05)
        lines = server.server_log().splitlines()
    assert len(lines) == 1 and "serving read_file" in lines[0] and str(tmp_path) in lines[0]


@contextlib.contextmanager
def raw_server(workspace):
    """The course's server as a process, spoken to in raw JSON-RPC lines (the client as a test can
    misbehave); killed if still running at the end, and reaped."""
    command = [sys.executable, "-m", "toolkit.mcp", "serve", "--workspace", str(workspace)]
    process = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    try:
        send(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}})
        assert json.loads(process.stdout.readline())["id"] == 1
        send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(60)
        for pipe in (process.stdin, process.stdout, process.stderr):
            with contextlib.suppress(OSError):
                pipe.close()


def send(process, message):
    line = message if isinstance(message, str) else json.dumps(message)
    process.stdin.write(line.encode() + b"\n")
    process.stdin.flush()


def ended(process):
    """(exit status, stderr) once the client closes the server's stdin."""
    with contextlib.suppress(OSError):
        process.stdin.close()
    return process.wait(60), process.stderr.read().decode()


def test_a_line_the_sdk_drops_unanswered_is_reported_on_the_servers_stderr(tmp_path):
    """The SDK's transport drops a line that is not JSON-RPC and answers nothing; the course's
    server sees it go by and says so on stderr (its log), without repeating what it held."""
    with raw_server(tmp_path) as process:
        send(process, '{"password": "hunter2-xyzzy", this is not JSON')
        send(process, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
        answer = json.loads(process.stdout.readline())      # the next answer is the ping's
        status, err = ended(process)
    assert answer == {"jsonrpc": "2.0", "id": 2, "result": {}}
    dropped = [line for line in err.splitlines() if "dropped" in line]
    assert len(dropped) == 1 and "dropped a line that is not JSON-RPC" in dropped[0]
    assert "hunter2" not in err and "Traceback" not in err and status == 0


def test_a_client_gone_mid_answer_ends_the_server_with_one_line_and_no_traceback(tmp_path):
    (tmp_path / "big.txt").write_text("line of text\n" * 70_000, encoding="utf-8")   # 910 KB
    with raw_server(tmp_path) as process:
        for n in range(2, 6):
            send(process, {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                           "params": {"name": "read_file", "arguments": {"path": "big.txt"}}})
        assert process.stdout.read(1000)                     # an answer is being written...
        process.stdout.close()                               # ...and the client goes away
        status, err = ended(process)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert "closed the connection before its answer was written" in err and status == 0


def test_an_answers_secrets_are_spelled_out_once_not_once_per_field(monkeypatch):
    """1.9 MB of structured content took 1.17 s to redact when every field worked out every
    secret's spellings again; they are worked out once per answer."""
    import toolkit._show as show
    from toolkit.mcp import remote_output

    worked_out = []
    spellings = show.spellings
    monkeypatch.setattr(show, "spellings", lambda found: worked_out.append(1) or spellings(found))
    answer = {f"field{i}": {"token": f"t-{i:06}-secret", "note": f"uses t-{i:06}-secret"}
              for i in range(2_000)}
    shown = remote_output(mcp_types.CallToolResult(content=[], structured_content=answer))
    assert len(worked_out) == 1
    assert all(v == {"token": "[redacted]", "note": "uses [redacted]"} for v in shown.values())
