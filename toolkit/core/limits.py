"""Chapter 01: how much the host reads from one request before it refuses (one table of caps).

A request is text a model wrote; the host never lets its size decide how much
memory or time a check costs. Every cap the toolkit applies to arguments lives here.
"""
#: The largest argument document accepted, in bytes of JSON text.
MAX_ARGUMENT_BYTES = 256 * 1024
#: The deepest nesting of objects and arrays accepted (and walked when redacting).
MAX_DEPTH = 32

__all__ = ["MAX_ARGUMENT_BYTES", "MAX_DEPTH"]
