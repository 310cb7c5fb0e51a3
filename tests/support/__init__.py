"""Shared, real test infrastructure for dtkguard (stdlib + packaging only; no dtkguard import).

Modules:
  wheels   build_wheel / build_sdist: valid, byte-deterministic wheel and sdist files
  reports  load_report("vllm085") -> [PackageMeta]; make_wheelhouse(dest, packages, vendor=...);
           DAS_25041 (the 23 vendor builds), das_25041_packages(), community_torch_241(dest)
  index    serve_index(wheel_dir) -> IndexServer (PEP 503 + 691 + 658/714 on 127.0.0.1);
           write_static_index(wheel_dir, out_dir) for file:// indexes
  venvs    hermetic_env(), make_venv(path, pip_version=...) -> Venv (.pip, .uv_pip, .run,
           .snapshot, .installed), run_uv(...)
  cache    wheel_dir(), pip_wheel(version), uv_binary(): the offline cache filled by
           ``python tests/prepare.py``

Fixtures built on these live in ``tests/conftest.py``.
"""
