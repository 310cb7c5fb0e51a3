"""dtkguard: keep Hygon DTK/DAS vendor builds intact in Python environments."""

import time as _time

__version__ = "0.1.0"

#: when this process imported dtkguard: reports give their elapsed time from here
STARTED = _time.monotonic()
