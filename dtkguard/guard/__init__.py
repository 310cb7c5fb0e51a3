"""dtkpip and the pip/uv guard: plan, judge, veto or run; guard install/status/remove."""
