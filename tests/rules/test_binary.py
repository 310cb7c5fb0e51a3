"""cuda-binary, foreign-hip, binary-unreadable through the commands users type (`check`,
`audit`, `doctor`, `policy check`), on dists that ship real shared objects built by gcc, with
the policy's [binary] lists, their validation and the policy's exceptions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dtkguard.policy.compiled import CUDA_LIBRARIES, DTK_RUNTIME, HIP_RUNTIMES
from dtkguard.policy.locate import bundled_dir
from tests.support.cli import dtkguard
from tests.support.elf import AMDHIP, CUDART, GALAXYHIP, build_shared, hostile_elves, write_elf
from tests.support.policies import compile_policy
from tests.support.sitetree import add_dist

EXT = "_C.cpython-310-x86_64-linux-gnu.so"


@pytest.fixture(scope="module")
def so(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("so")
    return {
        "cuda": build_shared(tmp / "cuda.so", (CUDART,)).read_bytes(),
        "dtk": build_shared(tmp / "dtk.so", (GALAXYHIP,)).read_bytes(),
        "rocm": build_shared(tmp / "rocm.so", (AMDHIP,)).read_bytes(),
        "both": build_shared(tmp / "both.so", (AMDHIP, GALAXYHIP)).read_bytes(),
        "plain": build_shared(tmp / "plain.so").read_bytes(),
        "cudart": build_shared(tmp / "libcudart.so.12", soname=CUDART).read_bytes(),
    }


def _check(*args: str | Path) -> tuple[int, list[dict]]:
    proc = dtkguard("check", *args, "--format", "json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def _rules(found: list[dict]) -> set[tuple[str, str]]:
    return {(f["rule"], f["subject"]) for f in found}


def test_a_cuda_build_of_any_name_is_found_by_what_it_links(tmp_path, so):
    site = tmp_path / "site"
    add_dist(site, "mamba-ssm", "2.2.2", files={f"mamba_ssm/{EXT}": so["cuda"]})
    add_dist(site, "private-fork", "0.1", files={"fork.libs/libcudart-1a2b3c4d.so.12": so["cuda"]})
    add_dist(site, "bundles-cudart", "1.0", files={"bundles/lib/libcudart.so.12": so["cudart"]})
    add_dist(site, "dtk-ext", "1.0", files={f"dtk_ext/{EXT}": so["dtk"]})
    add_dist(site, "cpu-ext", "1.0", files={f"cpu_ext/{EXT}": so["plain"], "cpu_ext/x.so": "txt"})
    code, found = _check("--path", site)
    assert code == 1
    assert _rules(found) == {
        ("cuda-binary", "mamba-ssm"),
        ("cuda-binary", "private-fork"),
        ("cuda-binary", "bundles-cudart"),
    }
    first = next(f for f in found if f["subject"] == "mamba-ssm")
    assert first["severity"] == "high" and first["evidence"]["cuda"] == [CUDART]
    assert first["location"] == str(site / "mamba_ssm" / EXT)
    assert CUDART in first["message"] and "mamba-ssm" in first["message"]


def test_a_rocm_build_is_foreign_hip_and_a_dtk_one_is_not(tmp_path, so):
    site = tmp_path / "site"
    add_dist(site, "rocm-ext", "1.0", files={f"rocm_ext/{EXT}": so["rocm"]})
    add_dist(site, "both-ext", "1.0", files={f"both_ext/{EXT}": so["both"]})
    code, found = _check("--path", site)
    assert code == 0  # medium is below the default --fail-on high
    assert _rules(found) == {("foreign-hip", "rocm-ext")}
    assert found[0]["severity"] == "medium" and found[0]["evidence"]["hip"] == [AMDHIP]
    assert _check("--path", site, "--fail-on", "medium")[0] == 1


def test_32_bit_and_big_endian_files_are_judged(tmp_path):
    site = tmp_path / "site"
    files = {
        f"p{bits}{e}/x.so": write_elf((CUDART,), bits=bits, endian=endian)
        for bits in (32, 64)
        for e, endian in (("l", "<"), ("b", ">"))
    }
    add_dist(site, "odd-arches", "1.0", files=files)
    code, found = _check("--path", site)
    assert code == 1 and len([f for f in found if f["rule"] == "cuda-binary"]) == 4


@pytest.mark.parametrize("name", sorted(hostile_elves()))
def test_hostile_binaries_are_a_finding_never_a_traceback(tmp_path, name):
    site = tmp_path / "site"
    add_dist(site, "hostile", "1.0", files={"hostile/_C.so": hostile_elves()[name]})
    code, found = _check("--path", site)
    assert code == 0
    [f] = found
    assert f["rule"] == "binary-unreadable" and f["severity"] == "medium"
    assert f["evidence"]["error"] and "\n" not in f["message"]


def test_audit_judges_binaries_too(tmp_path, so):
    site = tmp_path / "site"
    add_dist(site, "flash-attn", "2.6.3", files={f"flash_attn_2_cuda{EXT[2:]}": so["cuda"]})
    proc = dtkguard("audit", "--path", site, "--verify-files", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    assert ("cuda-binary", "flash-attn") in _rules(json.loads(proc.stdout)["findings"])


def test_an_exception_waives_a_binary_finding_as_for_every_rule(tmp_path, so):
    site = tmp_path / "site"
    add_dist(site, "compat-shim", "1.0", files={f"compat_shim/{EXT}": so["cuda"]})
    policy = tmp_path / "site.toml"
    policy.write_text(
        '[policy]\nextends = ["dtk-25.04.1"]\n\n[[exceptions]]\nrule = "cuda-binary"\n'
        'package = "compat-shim"\nreason = "links a CUDA-named compatibility stub"\n'
        'expires = "2099-01-01"\n'
    )
    assert _check("--path", site, "--policy", policy) == (0, [])
    expired = policy.read_text().replace("2099-01-01", "2020-01-01")
    policy.write_text(expired)
    code, found = _check("--path", site, "--policy", policy)
    assert code == 1 and ("cuda-binary", "compat-shim") in _rules(found)


def test_the_lists_are_policy_data_a_child_policy_replaces(tmp_path, so):
    site = tmp_path / "site"
    add_dist(site, "mamba-ssm", "2.2.2", files={f"mamba_ssm/{EXT}": so["cuda"]})
    add_dist(site, "dtk-ext", "1.0", files={f"dtk_ext/{EXT}": so["dtk"]})
    policy = tmp_path / "site.toml"
    policy.write_text(
        '[policy]\nextends = ["dtk-25.04.1"]\n\n[binary]\ndeny-needed = ["libgalaxyhip.so*"]\n'
    )
    _, found = _check("--path", site, "--policy", policy)
    assert _rules(found) == {("cuda-binary", "dtk-ext")}
    compiled = compile_policy(policy)
    assert compiled.binary.gpu_runtime == DTK_RUNTIME  # the other keys stay the parent's


@pytest.mark.parametrize(
    "library",
    [
        "libnvrtc.alt.so.12",
        "libnvrtc-builtins.so.12.4",
        "libnvblas.so.12",
        "libnvvm.so.4",
        "libcutensor.so.2",
        "libcutensorMg.so.2",
        "libnvinfer.so.10",
        "libnvinfer_plugin.so.10",
    ],
)
def test_every_cuda_library_of_the_bundled_policy_is_named(tmp_path, library):
    """CUDA toolkit libraries beyond the runtime (NVRTC's alternative build, NVBLAS, NVVM,
    cuTENSOR, TensorRT) cannot load on a DCU either: a real ELF that needs one is named."""
    lib = build_shared(tmp_path / "ext.so", (library,))
    site = tmp_path / "site"
    add_dist(site, "needs-it", "1.0", files={f"needs_it/{EXT}": lib.read_bytes()})
    code, found = _check("--path", site)
    assert code == 1 and _rules(found) == {("cuda-binary", "needs-it")}
    assert found[0]["evidence"]["cuda"] == [library]


def test_the_bundled_policy_states_the_defaults(tmp_path):
    compiled = compile_policy(bundled_dir() / "dtk-25.04.1.toml")
    assert compiled.binary.deny_needed == CUDA_LIBRARIES
    assert compiled.binary.gpu_runtime == DTK_RUNTIME == ("libgalaxyhip.so*",)
    assert compiled.binary.hip_runtime == HIP_RUNTIMES


@pytest.mark.parametrize(
    ("text", "where", "field"),
    [
        ('[binary]\ndeny-needed = ["lib/cudart.so*"]\n', "2:", "binary.deny-needed[0]"),
        ('[binary]\ngpu-runtime = [""]\n', "2:", "binary.gpu-runtime[0]"),
        ("[binary]\nhip-runtime = 3\n", "2:", "binary.hip-runtime"),
        ('[binary]\ndeny-cuda = ["x"]\n', "2:", "binary.deny-cuda"),
    ],
)
def test_bad_binary_lists_are_file_line_col_field_exit_2(tmp_path, text, where, field):
    policy = tmp_path / "bad.toml"
    policy.write_text('[policy]\nname = "bad"\n' + text)
    proc = dtkguard("policy", "check", policy)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"dtkguard: error: {policy}:{int(where[:-1]) + 2}:")
    assert f" {field}: " in line


def test_doctor_shows_the_runtime_each_vendor_build_links(tmp_path, so):
    site = tmp_path / "site"
    add_dist(site, "torch", "2.4.1+das.opt1.dtk25041", files={
        "torch/lib/libtorch_hip.so": so["dtk"], f"torch/{EXT}": so["dtk"],
        "torch/version.py": "cuda = None\nhip = '6.2'\n",
    })  # fmt: skip
    add_dist(site, "vllm", "0.8.5.post1+das.opt1.dtk25041", files={f"vllm/{EXT}": so["cuda"]})
    proc = dtkguard("doctor", "--path", site, "--format", "json")
    runtime = json.loads(proc.stdout)["facts"]["doctor"]["runtime"]
    assert runtime["torch"]["runtime"] == "dtk" and runtime["torch"]["binaries"] == 2
    assert runtime["vllm"]["runtime"] == "cuda" and runtime["vllm"]["libraries"] == [CUDART]
    screen = dtkguard("doctor", "--path", site).stdout
    assert "torch DTK HIP (2 binaries: libgalaxyhip.so.5)" in screen
    assert "vllm CUDA (1 binaries: libcudart.so.12)" in " ".join(screen.split())


def test_a_kept_record_is_read_again_when_it_changes_and_its_files_every_time(tmp_path, so):
    """check keeps each RECORD's native rows by the RECORD's stat (`binaries.known_rows`): the
    files those rows name are judged on every run, and a RECORD that changes is read again."""
    import time

    from dtkguard.util.racy import RACY_NS

    cache = tmp_path / "cache"
    env = {"DTKGUARD_CACHE_DIR": str(cache)}
    site = tmp_path / "site"
    dist_info = add_dist(site, "cpu-ext", "1.0", files={f"cpu_ext/{EXT}": so["plain"]})
    time.sleep(RACY_NS / 1e9 + 0.1)  # older than a timestamp's granularity: its rows are kept
    proc = dtkguard("check", "--path", site, "--format", "json", env=env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["findings"] == []
    [kept] = (cache / "shared-rows").iterdir()
    entries = json.loads(kept.read_text())
    record = str(dist_info / "RECORD")
    assert entries[record][1] == [f"cpu_ext/{EXT}"]
    assert entries[record][0][1] == (dist_info / "RECORD").stat().st_ino
    # the file behind a kept row: judged again (the rows are kept, not the verdicts)
    (site / "cpu_ext" / EXT).write_bytes(so["cuda"])
    proc = dtkguard("check", "--path", site, "--format", "json", env=env)
    assert _rules(json.loads(proc.stdout)["findings"]) == {("cuda-binary", "cpu-ext")}
    (site / "cpu_ext" / EXT).write_bytes(so["plain"])
    # a row added to the RECORD: its stat changed, so it is read again at once
    (site / "cpu_ext" / "libs").mkdir()
    (site / "cpu_ext" / "libs" / "libcudart-1a2b.so.12").write_bytes(so["cuda"])
    with (dist_info / "RECORD").open("a") as fh:
        fh.write("cpu_ext/libs/libcudart-1a2b.so.12,,\n")
    proc = dtkguard("check", "--path", site, "--format", "json", env=env)
    assert _rules(json.loads(proc.stdout)["findings"]) == {("cuda-binary", "cpu-ext")}
