"""The one name dtkguard's annotations give a JSON value whose shape no type names.

Imported under ``TYPE_CHECKING`` only (it costs a run nothing).
"""

from __future__ import annotations

from typing import Any, TypeAlias

#: a JSON value as ``json.loads`` returns it, or one ``json.dumps`` is handed, whose shape no
#: TypedDict names where it is held: a record read from disk before it is checked, the compiled
#: policy's tables as the hook's modules take them, a free-form evidence map. ``dict[str, JSON]``
#: is such an object, ``list[JSON]`` such an array. It is `Any`: a reader narrows
#: (``isinstance``) what it takes out of one before it relies on it.
JSON: TypeAlias = Any
