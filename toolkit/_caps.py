"""Chapter 01: how much the host reads from one request before it refuses (one table of caps).

A request is text a model wrote; the host never lets its size decide how much
memory or time a check costs. Every cap the toolkit applies to what a model or a
stream sends, or to a file a tool reads, lives here, so a refusal can name its cap and a test can assert it.
"""
#: The largest argument document accepted, in bytes of JSON text.
MAX_ARGUMENT_BYTES = 256 * 1024
#: The deepest nesting of objects and arrays accepted (and walked when redacting).
MAX_DEPTH = 32
#: The longest tool name looked at; a longer one is refused without being matched or echoed whole.
MAX_NAME_CHARS = 128
#: The longest call id accepted from a model.
MAX_CALL_ID_CHARS = 128
#: The most tool calls one round (or one stream) may hold open at once.
MAX_OPEN_CALLS = 128
#: The most structured errors reported for one call; the rest are counted, not listed.
MAX_ERRORS_PER_CALL = 16
#: The largest single streamed event (one SSE event's data, one chunk), in bytes.
MAX_EVENT_BYTES = 1024 * 1024
#: The most characters of a value echoed back in an error's ``received``.
MAX_ECHO_CHARS = 80
#: The largest file a file tool reads, in bytes: read_file, edit_file and the exports reader alike.
MAX_FILE_BYTES = 1_000_000
#: The longest path rung 1 of the read_file ladder accepts (UTF-8 bytes), and the longest single name in it.
MAX_PATH_BYTES = 1024
MAX_NAME_BYTES = 255
#: The most characters of arguments a printed call line shows (``name({...}) #call_id``).
MAX_CALL_LINE_CHARS = 80
#: The most characters of a record's one-line argument summary (execution records, audit rows, live rounds).
MAX_SUMMARY_CHARS = 120
#: The longest tool description kept from an MCP server's tools/list (it is shown to a model).
MAX_DESCRIPTION_CHARS = 1000
#: The most characters of an MCP server's own error text a failed call repeats (its only account).
MAX_SERVER_ERROR_CHARS = 200
#: The longest idempotency key accepted (keys are names, not payloads).
MAX_KEY_LENGTH = 200
#: The most secret values one streamed preview remembers; past it the preview shows no more text.
MAX_SECRETS_REMEMBERED = 64
#: The largest answer taken from an MCP server's tools/call, in bytes of its payload (structured
#: content as JSON, else its text): room for the largest file a file tool reads, JSON-escaped.
MAX_ANSWER_BYTES = 2 * MAX_FILE_BYTES
#: The largest inputSchema adopted from an MCP server, as JSON (checking one costs about its size).
MAX_SCHEMA_BYTES = 64 * 1024
#: The most pages of an MCP server's tools/list read (a server that pages forever is cut off there).
MAX_PAGES = 100
#: The most attempts an MCP server's host keeps in its log (the oldest are dropped first).
LOG_KEEP = 1000
#: What ends a text the host cut: the one cut marker.
CUT_MARK = "..."
#: The longest Retry-After (seconds) the host honours; an endpoint asking for more is an escalation, not a wait.
MAX_RETRY_AFTER = 60.0
#: What one model reply may send, streamed or not, before the host stops reading (chapter 09): its
#: text, its calls' argument bytes together, its seconds, a whole body (room for both in UTF-8).
MAX_REPLY_TEXT_CHARS = 1_000_000
MAX_REPLY_ARGUMENT_BYTES = 4 * MAX_ARGUMENT_BYTES
REPLY_DEADLINE = 300.0
MAX_REPLY_BODY_BYTES = 4 * (MAX_REPLY_TEXT_CHARS + MAX_REPLY_ARGUMENT_BYTES)

