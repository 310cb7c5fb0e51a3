"""The transaction journal of an environment: every change, the files it removed, rollback."""
