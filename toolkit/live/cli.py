"""Chapter 09: the terminal command: one task, the course's read_file over a folder, a model on the other side.

    python -m toolkit.live --vendor openai|anthropic --base-url URL --model NAME [--api-key KEY] [--stream]
                           --workspace DIR --task TEXT [--replay NAME] [--max-rounds N]

For every round it prints each proposed call (``id name(arguments)``, the
arguments redacted), its verdict and its result status, then the model's
final answer. ``--replay NAME`` serves a recording through the SDK's mock
transport instead of an endpoint (no key, no network; the recording's own
task is used when ``--task`` is not given); the host's reads are real, but the
final words are the recording's, so they are printed as a recorded answer.

Exit status (``LiveRun.exit_status``): 0 when the model answered after calling
tools, 1 when the round budget ran out, 2 on a configuration error (a missing
key, an unreachable endpoint, a folder that does not exist; one line on
stderr), 3 when the model answered without calling any tool (printed as "no
tool was called; nothing was read"), 4 when the host stopped reading a reply
(past a cap or the reply deadline; printed as a ``stopped:`` line).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from toolkit.kernel import make_read_file
from toolkit.kernel import Host
from toolkit.live import chat_for
from toolkit.live import LIVE_VENDORS, LiveConfigError, endpoint_from, make_client
from toolkit.live import recording, recording_names, replay_server
from toolkit.live import LiveRunError, run_task


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line and exit 2, like every other configuration error."""

    def error(self, message: str) -> None:   # type: ignore[override]
        raise LiveConfigError(message)


def command_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m toolkit.live", description="Run one task against a model, through the "
                     "course's contracts.")
    parser.add_argument("--vendor", choices=LIVE_VENDORS, required=True)
    parser.add_argument("--base-url", default=None, help="e.g. http://127.0.0.1:11434/v1 for a local server")
    parser.add_argument("--model", default="recorded-model")
    parser.add_argument("--api-key", default=None, help="else OPENAI_API_KEY / ANTHROPIC_API_KEY")
    parser.add_argument("--stream", action="store_true", help="stream; the course's assembler reads the events")
    parser.add_argument("--workspace", required=True, help="the folder read_file may read")
    parser.add_argument("--task", default=None)
    parser.add_argument("--replay", default=None, help=f"one of: {', '.join(recording_names())}")
    parser.add_argument("--max-rounds", type=int, default=8)
    return parser


def live_command(argv: Sequence[str] | None = None, out=None, err=None) -> int:
    """Run the command; returns the exit status (see the module docstring)."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        args = command_parser().parse_args(argv)
        if not Path(args.workspace).is_dir():
            raise LiveConfigError("--workspace must name an existing folder")
        if args.max_rounds < 1:
            raise LiveConfigError("--max-rounds must be at least 1")
        if args.replay is not None:
            task = args.task or recording(args.replay, args.vendor)["task"]
            client = replay_server(args.replay, args.vendor).client(args.model)
            print(f"replaying the recording {args.replay!r} ({args.vendor} wire format, written by hand)", file=out)
        else:
            if not args.task:
                raise LiveConfigError("no task: pass --task TEXT")
            task = args.task
            client = make_client(endpoint_from(args.vendor, args.model, args.base_url, args.api_key))
        host = Host.of([make_read_file(args.workspace)])
        chat = chat_for(args.vendor, client, args.model, [t.contract for t in host.tools.values()], task,
                        stream=args.stream)
        try:
            run = run_task(chat, host, max_rounds=args.max_rounds,
                           on_round=lambda r: print(*r.lines(), sep="\n", file=out))
        finally:
            client.close()            # the SDK client's HTTP connections
    except (LiveConfigError, LiveRunError) as problem:
        print(f"error: {problem}", file=err)
        return 2
    run.recorded = args.replay is not None
    print(*run.outcome(), sep="\n", file=out)
    return run.exit_status


__all__ = ["command_parser", "live_command"]
