"""Audits: drift against a lock, RECORD verification, processes, containers, device facts."""
