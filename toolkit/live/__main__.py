"""Chapter 09: ``python -m toolkit.live``: one task against a model (see ``toolkit.live.cli``)."""
import sys

from toolkit.live import live_command

__all__: list[str] = []   # a command, not a library: nothing to import from here

if __name__ == "__main__":
    sys.exit(live_command())
