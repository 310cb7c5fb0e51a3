"""`python -m dtkguard`."""

from dtkguard.cli import main
from dtkguard.util.exit import exit_now

exit_now(main())
