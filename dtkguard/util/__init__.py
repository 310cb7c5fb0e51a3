"""Small helpers shared across dtkguard."""
