"""conftest.py's rule, run on a scratch suite: under CAKE_REQUIRE_ALL=1 only skips CI cannot
satisfy stay skips; without it every skip is a skip."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

SUITE = '''
import pytest

def test_passes():
    pass

def test_needs_a_tool():
    pytest.skip("no such tool")

def test_needs_a_gpu():
    pytest.skip("needs a GPU: none here")

@pytest.fixture
def no_driver():
    pytest.skip("needs a machine without a CUDA driver: one is present")

def test_in_a_fixture(no_driver):
    pass

@pytest.mark.xfail(reason="known")
def test_expected_failure():
    assert False
'''

MODULE_SKIP = '''
import pytest
pytest.importorskip("no_such_module_for_cake_tests")
'''


def run(tmp_path, require_all, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    shutil.copy(os.path.join(HERE, "conftest.py"), tmp_path / "conftest.py")
    env = dict(os.environ)
    env.pop("CAKE_REQUIRE_ALL", None)
    if require_all:
        env["CAKE_REQUIRE_ALL"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           str(tmp_path)], capture_output=True, text=True, env=env, cwd=str(tmp_path))


def test_without_require_all_skips_are_skips(tmp_path):
    r = run(tmp_path, False, {"test_suite.py": SUITE})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed, 3 skipped, 1 xfailed" in r.stdout, r.stdout
    assert "no such tool" in r.stdout  # -rs prints the reasons


def test_require_all_fails_only_skips_ci_could_satisfy(tmp_path):
    r = run(tmp_path, True, {"test_suite.py": SUITE})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 failed, 1 passed, 2 skipped, 1 xfailed" in r.stdout, r.stdout
    assert "skipped under CAKE_REQUIRE_ALL=1: no such tool" in r.stdout, r.stdout
    assert "_ test_needs_a_tool _" in r.stdout, r.stdout


def test_require_all_fails_a_module_level_skip(tmp_path):
    files = {"test_missing.py": MODULE_SKIP, "test_suite.py": SUITE}
    r = run(tmp_path, True, files)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "skipped under CAKE_REQUIRE_ALL=1: could not import 'no_such_module_for_cake_tests'" \
        in r.stdout, r.stdout
    r = run(tmp_path, False, files)
    assert r.returncode == 0 and "1 passed, 4 skipped" in r.stdout, r.stdout
