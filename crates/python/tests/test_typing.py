"""The package's types: typing_usage.py checked by mypy --strict against
the annotations and stubs, and run; the stubs checked against the native
module by stubtest."""

import os
import pathlib
import subprocess
import sys

from django.test import override_settings

import test_django  # noqa: F401 - configures Django for typing_usage.django
import typing_usage

HERE = pathlib.Path(__file__).resolve().parent
PYPROJECT = HERE.parent / "pyproject.toml"


def run(args, **kwargs) -> str:
    done = subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, cwd=HERE.parent, **kwargs
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_typing_usage_runs(tmp_path, sha1_index):
    typing_usage.pwned(tmp_path)
    typing_usage.bencode(tmp_path)
    typing_usage.blocks(HERE / "data", tmp_path)
    typing_usage.torrent((HERE.parents[1] / "bencode" / "tests" / "data" / "sample.torrent").read_bytes())
    with override_settings(SEEKLESS_PWNED={"INDEX": str(sha1_index)}):
        typing_usage.django()


def test_mypy_strict_accepts_the_usage_and_refuses_the_misuses():
    # strict includes warn_unused_ignores: each misuse marked with an
    # ignore must still be an error.
    # The package's own sources are checked with it.
    sources = [str(HERE / "typing_usage.py"), str(HERE.parent / "python" / "seekless")]
    out = run(["mypy", "--config-file", str(PYPROJECT), "--strict", *sources])
    assert "Success" in out


def test_stubs_match_the_native_module(tmp_path):
    # seekless.django reads Django's settings when inspected.
    (tmp_path / "stubtest_settings.py").write_text("USE_I18N = False\n")
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="stubtest_settings", PYTHONPATH=str(tmp_path))
    out = run(["mypy.stubtest", "seekless", "--mypy-config-file", str(PYPROJECT)], env=env)
    assert "Success" in out
