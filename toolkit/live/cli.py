"""Chapter 09: the terminal command: one task, the course's read_file over a folder, a model on the other side.

    python -m toolkit.live --vendor openai|anthropic|local
                           [--base-url URL --model NAME --api-key KEY]
                           [--stream] [--tool-choice auto|none|required|TOOL]
                           --workspace DIR --task TEXT [--replay NAME] [--max-rounds N]

For every round it prints each proposed call (``id name(arguments)``, the
arguments redacted), its verdict and its result status, then the model's
final answer. ``--replay NAME`` serves a recording through the SDK's mock
transport instead of an endpoint (no key, no network; the recording's own
task is used when ``--task`` is not given); the host's reads are real, but the
final words are the recording's, so they are printed as a recorded answer.
``--vendor local`` starts the packaged SmolLM2 behind llama.cpp's
OpenAI-compatible server on 127.0.0.1 (``toolkit.live.local``; no key, no
network) and talks to it through the ``openai`` SDK, as to any
OpenAI-compatible endpoint. (``python -m course.worlds.conformance`` takes the
same options and plays the course's recorded situations against the endpoint.)

Exit status (``LiveRun.exit_status``): 0 when the model answered after calling
tools, 1 when the round budget ran out, 2 on a configuration error (a missing key, an
unreachable endpoint, a folder that does not exist; one line on stderr), 3 when
the model answered without calling any tool (printed as "no tool was called;
nothing was read"), 4 when the host stopped reading a reply (past a cap or the
reply deadline; printed as a ``stopped:`` line), 130 on Ctrl-C.
"""
from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable, Sequence

from toolkit.kernel import make_read_file
from toolkit.kernel import Host
from toolkit.live import chat_for
from toolkit.live import LIVE_VENDORS, LiveConfigError, endpoint_from, make_client
from toolkit.live import recording, recording_names, replay_server
from toolkit.live import LiveRunError, run_task
from toolkit.live import for_llama_cpp, local_model, with_tool_choice


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line and exit 2, like every other configuration error."""

    def error(self, message: str) -> None:   # type: ignore[override]
        raise LiveConfigError(message)


def command_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m toolkit.live", description="Run one task against a model, through the "
                     "course's contracts.")
    parser.add_argument("--vendor", choices=(*LIVE_VENDORS, "local"), required=True,
                        help="local: the packaged model, served by llama.cpp (the model extra)")
    parser.add_argument("--base-url", default=None, help="e.g. http://127.0.0.1:11434/v1 for a local server")
    parser.add_argument("--model", default="recorded-model")
    parser.add_argument("--api-key", default=None, help="else OPENAI_API_KEY / ANTHROPIC_API_KEY")
    parser.add_argument("--stream", action="store_true", help="stream; the course's assembler reads the events")
    parser.add_argument("--tool-choice", default=None,
                        help="auto, none, required or a tool's name (local: auto)")
    parser.add_argument("--workspace", default=None, help="the folder read_file may read")
    parser.add_argument("--task", default=None)
    parser.add_argument("--replay", default=None, nargs="?", const="",
                        help=f"one of: {', '.join(recording_names())}")
    parser.add_argument("--max-rounds", type=int, default=8)
    return parser


def _valid_arguments(args: argparse.Namespace) -> argparse.Namespace:
    """The arguments, or a ``LiveConfigError`` saying which one is wrong."""
    if args.workspace is None or not Path(args.workspace).is_dir():
        raise LiveConfigError("--workspace must name an existing folder")
    if args.max_rounds < 1:
        raise LiveConfigError("--max-rounds must be at least 1")
    if args.replay is not None and (args.vendor == "local" or not args.replay):
        raise LiveConfigError("--replay takes a recording's name, and not with --vendor local")
    if args.replay is None and not args.task:
        raise LiveConfigError("no task: pass --task TEXT")
    return args


def open_clients(args: argparse.Namespace, stack: ExitStack,
                 tools_for: Callable[[str], list[str]] = lambda name: ["read_file"]
                 ) -> tuple[str, str, Callable[[str], Any]]:
    """(vendor, model, client_for): ``client_for(recording)`` is an SDK client, closed by ``stack``.

    A recording's replay when ``--replay`` is given, else the endpoint (the packaged model's,
    started on ``stack``, for ``--vendor local``), with ``--tool-choice`` over ``tools_for``.
    """
    local, vendor = args.vendor == "local", "openai" if args.vendor == "local" else args.vendor
    choice = args.tool_choice or ("auto" if local else None)   # else llama.cpp shows no tools
    endpoint = stack.enter_context(local_model()) if local else None
    model = endpoint.model if endpoint is not None else args.model

    def client_for(name: str) -> Any:
        client = replay_server(name, vendor).client(model) if args.replay is not None \
            else make_client(endpoint or endpoint_from(vendor, model, args.base_url, args.api_key))
        stack.callback(client.close)
        client = for_llama_cpp(client) if local else client
        return with_tool_choice(client, vendor, choice, tools_for(name), local=local)
    return vendor, model, client_for


def command_status(command: Callable[[], int], err) -> int:
    """``command()``'s exit status; a configuration or endpoint error is one line on ``err`` and 2,
    Ctrl-C is 130 (a local server is already stopped and reaped by then)."""
    try:
        return command()
    except (LiveConfigError, LiveRunError) as problem:
        print(f"error: {problem}", file=err)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=err)
        return 130


def live_command(argv: Sequence[str] | None = None, out=None, err=None) -> int:
    """Run the command; returns the exit status (see the module docstring)."""
    out, err = out or sys.stdout, err or sys.stderr

    def command() -> int:
        args = _valid_arguments(command_parser().parse_args(argv))
        with ExitStack() as stack:
            vendor, model, client_for = open_clients(args, stack)
            task = args.task or recording(args.replay, vendor)["task"]
            if args.replay:
                print(f"replaying the recording {args.replay!r} ({vendor} wire format, written by "
                      "hand)", file=out)
            host = Host.of([make_read_file(args.workspace)])
            chat = chat_for(vendor, client_for(args.replay or ""), model,
                            [t.contract for t in host.tools.values()], task, stream=args.stream)
            run = run_task(chat, host, max_rounds=args.max_rounds,
                           on_round=lambda r: print(*r.lines(), sep="\n", file=out))
        run.recorded = args.replay is not None
        print(*run.outcome(), sep="\n", file=out)
        return run.exit_status
    return command_status(command, err)


__all__ = ["command_parser", "command_status", "live_command", "open_clients"]
