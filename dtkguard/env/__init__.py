"""Read-only views of Python environments: site-packages, interpreters, image roots, /proc."""
