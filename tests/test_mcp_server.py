"""`python -m toolkit.mcp serve`, driven by the official MCP client over stdio.

tools/list gives each contract's schema; a good read succeeds; hostile paths, a missing argument and an unknown
tool are isError results carrying the course's ToolResult as structuredContent; no answer carries the server's
path (the workspace sits under a long temporary path); every message is a valid mcp.types value; nothing is left
running afterwards.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

mcp_types = pytest.importorskip("mcp.types")

from toolkit.kernel import Host
from toolkit.kernel import READ_FILE_SCHEMA
from toolkit.mcp import McpConnection, answer_call, catalog_tools, workspace_roots  # noqa: E402
from course.worlds import course_server_command  # noqa: E402

from processes import live_children as children  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A workspace under a long path (with a planted secret beside it) and one server over it for the module."""
    base = tmp_path_factory.mktemp("mcp")
    deep = base.joinpath(*(["a_rather_long_folder_name_for_paths"] * 5))
    workspace = deep / "workspace"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "config.ts").write_text("export const port = 8080;\n", encoding="utf-8")
    (workspace / "tools.py").write_text("__all__ = ['load']\n\ndef load():\n    pass\n", encoding="utf-8")
    (deep / "secret.txt").write_text("TOP-SECRET-VALUE\n", encoding="utf-8")
    (workspace / "link.txt").symlink_to(deep / "secret.txt")
    before = children()
    with McpConnection.stdio(course_server_command(workspace, ("read_file", "inspect_exports")), cwd=str(ROOT)) as s:
        yield s, workspace, deep
    assert children() == before, "the server process outlived its connection"


def wire(result) -> dict:
    """The result as it travels (camelCase JSON), after checking it is a valid mcp.types.CallToolResult."""
    data = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert mcp_types.CallToolResult.model_validate(data) == result
    return data


def assert_no_server_path(data: dict, deep: Path) -> None:
    text = json.dumps(data)
    for root in workspace_roots(deep):
        assert root not in text
    assert "a_rather_long_folder_name_for_paths" not in text
    assert "TOP-SECRET-VALUE" not in text


def test_tools_list_gives_each_contracts_schema(served):
    server, workspace, _ = served
    tools = server.tools()
    listing = mcp_types.ListToolsResult(tools=tools).model_dump(mode="json", by_alias=True, exclude_none=True)
    assert mcp_types.ListToolsResult.model_validate(listing).tools == tools
    by_name = {t.name: t for t in tools}
    expected = {t.name: dict(t.contract.schema) for t in catalog_tools(workspace, ("read_file", "inspect_exports"))}
    assert {n: t.input_schema for n, t in by_name.items()} == expected
    assert by_name["read_file"].input_schema == READ_FILE_SCHEMA
    assert listing["tools"][0]["inputSchema"]["additionalProperties"] is False
    assert by_name["read_file"].annotations.read_only_hint is True


def test_a_good_read_succeeds_with_its_evidence(served):
    server, _, deep = served
    data = wire(server.call("read_file", {"path": "src/config.ts"}))
    assert data["isError"] is False
    assert data["structuredContent"]["status"] == "succeeded"
    output = data["structuredContent"]["output"]
    assert output["content"] == "export const port = 8080;\n"
    assert output["evidence"]["size"] == len(output["content"])
    assert json.loads(data["content"][0]["text"])["content"] == output["content"]
    assert_no_server_path(data, deep)


@pytest.mark.parametrize("path, rung", [
    ("../secret.txt", "rung 1"),
    ("src/../../secret.txt", "rung 1"),
    ("/etc/passwd", "rung 1"),
    ("link.txt", "rung 2"),
])
def test_hostile_paths_are_refused_by_the_path_test(served, path, rung):
    server, _, deep = served
    data = wire(server.call("read_file", {"path": path}))
    assert data["isError"] is True
    result = data["structuredContent"]
    assert (result["status"], result["failure_class"], result["reason"]) == ("rejected", "authorization",
                                                                              "path_refused")
    error = result["errors"][0]
    assert (error["code"], error["pointer"], error["layer"]) == ("path_refused", "$.path", "permission")
    assert rung in error["message"]
    assert data["content"][0]["text"].startswith("rejected: path_refused at $.path")
    assert_no_server_path(data, deep)


@pytest.mark.parametrize("arguments, code, pointer", [
    ({}, "missing_required", "$.path"),
    (None, "missing_required", "$.path"),
    ({"path": ["src/config.ts"]}, "wrong_type", "$.path"),
    ({"path": "src/config.ts", "mode": "binary"}, "enum", "$.mode"),
    ({"path": "src/config.ts", "owner": "root"}, "unexpected_property", "$.owner"),
    ({"path": "no/such/file.ts"}, "precondition_failed", "$.path"),
    ({"path": "src"}, "precondition_failed", "$.path"),
])
def test_bad_arguments_are_structured_refusals(served, arguments, code, pointer):
    server, _, deep = served
    data = wire(server.call("read_file", arguments))
    assert data["isError"] is True
    error = data["structuredContent"]["errors"][0]
    assert (error["code"], error["pointer"]) == (code, pointer)
    assert code in data["content"][0]["text"]
    assert_no_server_path(data, deep)


def test_an_unknown_tool_names_the_nearest_declared_ones(served):
    server, _, deep = served
    data = wire(server.call("read_fil", {"path": "src/config.ts"}))
    assert data["isError"] is True
    error = data["structuredContent"]["errors"][0]
    assert error["code"] == "unknown_tool"
    assert "read_file" in error["hint"]
    assert sorted(error["expected"]) == ["inspect_exports", "read_file"]
    assert_no_server_path(data, deep)


def test_a_handler_that_raises_answers_a_generic_error(tmp_path):
    class Broken(Host):
        def execute(self, call, verdict=None):
            raise RuntimeError(f"boom in {tmp_path}")

    answer = answer_call(Broken({}), "read_file", {"path": "a"}, "mcp_1", workspace_roots(tmp_path))
    data = wire(answer)
    assert data["isError"] is True and data["structuredContent"]["reason"] == "execution_failed"
    assert str(tmp_path) not in json.dumps(data) and "boom" not in json.dumps(data)


def test_raw_json_rpc_messages_are_valid_mcp_types(served):
    """The bytes on the wire, without the client library in between: every response parses as mcp.types."""
    _, workspace, deep = served
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read_file",
                                                                          "arguments": {"path": "src/config.ts"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "read_file",
                                                                          "arguments": {"path": "../secret.txt"}}},
    ]
    answers, stderr = {}, ""
    with subprocess.Popen(course_server_command(workspace), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=ROOT) as process:
        try:
            for message in requests:
                process.stdin.write(json.dumps(message) + "\n")
                process.stdin.flush()
                if "id" in message:
                    answer = json.loads(process.stdout.readline())
                    answers[answer["id"]] = answer
            process.stdin.close()
            stderr = process.stderr.read()
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
    assert sorted(answers) == [1, 2, 3, 4]
    mcp_types.InitializeResult.model_validate(answers[1]["result"])
    assert [t.name for t in mcp_types.ListToolsResult.model_validate(answers[2]["result"]).tools] == ["read_file"]
    good, bad = (mcp_types.CallToolResult.model_validate(answers[i]["result"]) for i in (3, 4))
    assert (good.is_error, bad.is_error) == (False, True)
    assert answers[4]["result"]["isError"] is True and "structuredContent" in answers[4]["result"]
    assert_no_server_path(answers[4], deep)
    announced, *rest = stderr.splitlines()   # the one line saying what is served where
    assert announced.startswith("toolcontract-course: serving read_file") and str(deep) in announced
    assert str(deep) not in json.dumps(answers) + "\n".join(rest)


@pytest.mark.parametrize("args", [["serve", "--workspace", "/nonexistent/folder/for/mcp"],
                                  ["serve", "--workspace", ".", "--tools", "rm_rf"]])
def test_the_command_refuses_bad_options_in_one_line(args):
    done = subprocess.run([sys.executable, "-m", "toolkit.mcp", *args], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)
    assert done.returncode == 2
    assert done.stderr.startswith("error:") and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_catalog_tools_refuses_unknown_names(tmp_path):
    with pytest.raises(ValueError, match="read_file"):
        catalog_tools(tmp_path, ["read_file", "format_disk"])


def test_the_registration_json_starts_the_server(tmp_path):
    """The snippet a client is given, taken literally: its command and args serve read_file over the workspace."""
    from toolkit.mcp import registration

    (tmp_path / "a.txt").write_text("from the snippet\n", encoding="utf-8")
    config = json.loads(json.dumps(registration(tmp_path, python=sys.executable)))
    entry = config["mcpServers"]["course-files"]
    with McpConnection.stdio([entry["command"], *entry["args"]], cwd=str(ROOT)) as server:
        assert [t.name for t in server.tools()] == ["read_file"]
        answer = server.call("read_file", {"path": "a.txt"})
        assert answer.structured_content["output"]["content"] == "from the snippet\n"
    wider = registration(tmp_path, ("read_file", "edit_file"))["mcpServers"]["course-files"]
    assert wider["command"] == "python" and wider["args"][-2:] == ["--tools", "read_file,edit_file"]


def test_importing_the_toolkit_loads_no_mcp_sdk():
    """The SDK loads when a server or a connection is made, not at ``import toolkit`` (nor ``import toolkit.mcp``)."""
    code = ("import json, sys, toolkit, toolkit.mcp\n"
            "from toolkit.mcp import McpHost, Trust\n"
            "from course.worlds import naive_vs_contract\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'anyio'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_a_read_is_returned_as_read_and_the_log_stays_bounded(tmp_path):
    """A file that mentions the workspace's own path is data: it comes back unchanged, its evidence intact."""
    from toolkit.mcp import LOG_KEEP

    text = f"built in {tmp_path}\n"
    (tmp_path / "note.txt").write_text(text, encoding="utf-8")
    host = Host.of(catalog_tools(tmp_path))
    answer = answer_call(host, "read_file", {"path": "note.txt"}, "mcp_1", workspace_roots(tmp_path))
    assert answer.structured_content["output"]["content"] == text and not answer.is_error
    for i in range(LOG_KEEP + 5):
        answer_call(host, "read_file", {"path": "../x"}, f"mcp_{i}", workspace_roots(tmp_path))
    assert len(host.log) == LOG_KEEP
    assert all(a.result.reason == "path_refused" for a in host.log)
    missing = answer_call(host, "read_file", {"path": "missing.txt"}, "mcp_m", workspace_roots(tmp_path))
    assert missing.is_error and str(tmp_path) not in json.dumps(missing.structured_content)


def test_a_served_tool_with_a_permission_runs_for_the_client(served):
    """--tools inspect_exports grants fs.read to the client; the call still meets every test."""
    server, _, deep = served
    good = wire(server.call("inspect_exports", {"module": "tools"}))
    assert good["isError"] is False and "load" in json.dumps(good["structuredContent"]["output"])
    bad = wire(server.call("inspect_exports", {"module": "../tools"}))
    assert bad["isError"] is True and bad["structuredContent"]["errors"][0]["code"] == "pattern"
    assert_no_server_path(bad, deep)


def test_serving_edit_file_grants_only_its_scope(tmp_path):
    from toolkit.mcp import serving_host

    host = serving_host(tmp_path, ["read_file", "edit_file"])
    assert host.caller.scopes == {"fs.write"}
    assert serving_host(tmp_path).caller.scopes == frozenset()
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    edited = wire(answer_call(host, "edit_file", {"file_path": "a.py", "old_text": "x = 1", "new_text": "x = 2"},
                              "mcp_1", workspace_roots(tmp_path)))
    assert edited["isError"] is False and (tmp_path / "a.py").read_text(encoding="utf-8") == "x = 2\n"
    outside = wire(answer_call(host, "edit_file", {"file_path": "../a.py", "old_text": "x", "new_text": "y"},
                               "mcp_2", workspace_roots(tmp_path)))
    assert outside["isError"] is True and str(tmp_path) not in json.dumps(outside)


def test_the_served_annotations_are_the_vendor_tables(tmp_path):
    """Every hint of every catalog tool, as the official client lists it, is the one ``mcp_annotations`` gives."""
    from toolkit.mcp import CATALOG
    from toolkit.wire import mcp_annotations, mcp_tool

    before = children()
    with McpConnection.stdio(course_server_command(tmp_path, CATALOG), cwd=str(ROOT)) as server:
        listed = {t.name: t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in server.tools()}
    assert children() == before
    contracts = {t.name: t.contract for t in catalog_tools(tmp_path, CATALOG)}
    assert sorted(listed) == sorted(contracts) == sorted(CATALOG)
    for name, contract in contracts.items():
        assert listed[name].get("annotations", {}) == mcp_annotations(contract) == mcp_tool(contract)["annotations"]
    assert listed["edit_file"]["annotations"]["readOnlyHint"] is False
