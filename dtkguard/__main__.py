"""`python -m dtkguard`."""

from dtkguard.util.exit import console_start, exit_now

console_start()
from dtkguard.cli import main  # noqa: E402 (after the collector is paused for the start)

exit_now(main())
