"""What the chapters advise (chapters 02-06): the usual causes of refusals, the safeguards a task
needs.

Each name below is defined in the module it is listed under; that module loads on first use."""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "causes": ("Cause", "cause_of", "CAUSES", "GENERAL"),
    "safeguards": ("lean_path", "required_safeguards", "SAFEGUARDS", "TaskProperties", "WHEN_TO_USE"),
})
