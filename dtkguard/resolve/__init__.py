"""Resolution under a policy: resolvelib provider, candidate sources, conflict explanation."""
