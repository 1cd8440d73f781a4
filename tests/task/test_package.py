import os
import subprocess
import sys
from pathlib import Path

import kernelarc.task as task_pkg

SRC = Path(__file__).resolve().parents[2] / "src"


def test_every_exported_name_resolves():
    for name in task_pkg.__all__:
        assert getattr(task_pkg, name) is not None, name


def test_package_imports_without_torch():
    code = "import sys, kernelarc.task; assert 'torch' not in sys.modules, 'torch imported'"
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_task_imports_no_other_kernelarc_package():
    allowed = {"kernelarc.task", "kernelarc.errors"}
    for file in (SRC / "kernelarc" / "task").glob("*.py"):
        for line in file.read_text().splitlines():
            words = line.split()
            if words[:1] in (["import"], ["from"]) and words[1].startswith("kernelarc"):
                assert any(words[1] == a or words[1].startswith(a + ".") for a in allowed), f"{file.name}: {line}"
