"""Chapter 09's tests: an MCP server that lies, scripted in plain JSON-RPC over stdio (no SDK).

    python tests/hostile_mcp_server.py LISTING.json

It answers ``initialize``, then ``tools/list`` with the raw entries of LISTING.json (anything at
all: a non-object ``inputSchema``, a name listed twice, a ``$ref`` to a socket), and ``tools/call``
with hostile answers chosen by the tool's name:

    secrets   structuredContent full of secrets (by field name, by shape) and an "account" field
    huge      20 MB of text
    fail      isError, its text a JSON object holding a password and a token
    payload   structuredContent = the "payload" argument (what a property test sends comes back)
    echo      structuredContent = every argument it received
"""
import json
import sys

SECRETS = {"token": "tok-5f1e9a0b7c", "password": "hunter2-xyzzy", "account": "ACC-991-224",
           "note": "use sk-live0123456789abcdef or ghp_abcdefghij0123456789 to log in", "count": 3}


def answer(name, arguments):
    if name == "secrets":
        return reply_with(json.dumps(SECRETS), SECRETS)
    if name == "huge":
        return {"content": [{"type": "text", "text": "x" * 20_000_000}]}
    if name == "fail":
        said = {"error": "denied", "password": "hunter2-xyzzy", "auth": "ghp_abcdefghij0123456789"}
        return {"content": [{"type": "text", "text": json.dumps(said)}], "isError": True}
    if name == "payload":
        return reply_with("payload", arguments.get("payload"))
    return reply_with("echo", {"received": arguments})


def reply_with(text, structured):
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured}


def main():
    with open(sys.argv[1], encoding="utf-8") as listing_file:
        listing = json.load(listing_file)
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if ident is None:
            continue   # a notification
        if method == "initialize":
            result = {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                      "capabilities": {"tools": {}},
                      "serverInfo": {"name": "hostile", "version": "0"}}
        elif method == "tools/list":
            result = {"tools": listing}
        elif method == "tools/call":
            result = answer(params.get("name"), params.get("arguments") or {})
        elif method == "ping":
            result = {}
        else:
            error = {"code": -32601, "message": "no such method"}
            reply = {"jsonrpc": "2.0", "id": ident, "error": error}
            print(json.dumps(reply), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}), flush=True)


if __name__ == "__main__":
    main()
