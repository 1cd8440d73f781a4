"""`kernelarc eval`: user mistakes end in one stderr line and exit 2, verdicts in exit 0 or 1, `--json` in exactly
one JSON object on stdout. In-process through `run_app`, plus one run of the installed console script."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernelarc.cli.main import run_app

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tests" / "fixtures" / "tasks"
CANDIDATES = REPO / "tests" / "fixtures" / "candidates"
EXAMPLES = REPO / "examples"
RELU = str(TASKS / "relu_tiny.py")
HONEST = str(CANDIDATES / "honest_torch.py")
FAST = ["--device", "cpu", "--rounds", "2"]

EVALUATION_KEYS = {"verdict", "status", "reason", "correct", "latency_ms", "incumbent_ms", "speedup", "sol_ms",
                   "sol_score", "timing", "device", "workloads"}
WORKLOAD_KEYS = {"status", "latency_ms", "max_abs_error", "max_rel_error"}


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = run_app(["eval", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def bad_files(tmp_path) -> dict[str, str]:
    (tmp_path / "kernel.txt").write_text("class ModelNew: pass\n")
    (tmp_path / "solution.json").write_text('{"name": "broken", ')
    return {"txt": str(tmp_path / "kernel.txt"), "json": str(tmp_path / "solution.json")}


USAGE_ERRORS = [
    pytest.param(["nope.py", HONEST], "nope.py: not found", id="missing-task"),
    pytest.param([str(TASKS / "syntax_error.py"), HONEST], "syntax_error.py:9: syntax error", id="task-syntax"),
    pytest.param([str(TASKS / "missing_model.py"), HONEST], "must define Model at top level", id="task-no-model"),
    pytest.param([str(TASKS / "bad_definition"), HONEST], "definition.json: field 'axes'", id="bad-definition"),
    pytest.param([str(TASKS), HONEST], "needs definition.json", id="dir-without-definition"),
    pytest.param([RELU, "missing.py"], "candidate missing.py does not exist", id="missing-candidate"),
    pytest.param([RELU, "{txt}"], "must be a .py module or a solution.json, got '.txt'", id="candidate-txt"),
    pytest.param([str(EXAMPLES / "sol" / "rmsnorm_small"), "{json}"], "malformed solution.json", id="bad-solution"),
    pytest.param([RELU, str(EXAMPLES / "sol" / "rmsnorm_small" / "solution.json")], "the task is a KernelBench file",
                 id="solution-for-kernelbench"),
    pytest.param([RELU, HONEST, "--device", "tpu"], "unknown device 'tpu'", id="unknown-device"),
    pytest.param([RELU, HONEST, "--device", "cuda"], "no CUDA device is available", id="cuda-without-cuda",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")),
    pytest.param([RELU, HONEST, "--bogus"], "No such option: --bogus", id="unknown-option"),
    pytest.param([RELU, HONEST, "--rounds", "0"], "Invalid value for '--rounds'", id="zero-rounds"),
    pytest.param([RELU], "Missing argument 'CANDIDATE'", id="missing-argument"),
]


@pytest.mark.parametrize(("args", "words"), USAGE_ERRORS)
def test_user_error_is_one_line_and_exit_2(capsys, bad_files, args, words):
    code, out, err = _run(capsys, *(a.format(**bad_files) for a in args))
    assert code == 2
    assert out == ""
    assert err.startswith("kernelarc: error: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert words in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_reject_exits_1_and_says_why(capsys):
    code, out, err = _run(capsys, RELU, str(CANDIDATES / "evil_wrong_dtype.py"), *FAST)
    assert code == 1 and "REJECT" not in err  # human output on stdout (issue 19: it was on stderr)
    assert "task relu_tiny (kernelbench, 1 workload(s)) on CPU (no CUDA device: timings are cpu_wall, not GPU speed)\n" in out
    assert "REJECT (INCORRECT_DTYPE) workload default, round 1: output 0 has dtype torch.float16, expected torch.float32\n" in out


@pytest.mark.slow
def test_incumbent_option_compares_against_it_and_exits_0(capsys):
    code, out, err = _run(capsys, RELU, HONEST, "--incumbent", str(CANDIDATES / "honest_triton.py"), *FAST)
    assert code == 0 and "PASSED" not in err
    # Which of KEEP, ACCEPT or REVERT is a CPU timing (a loaded CI machine once made it ACCEPT): not asserted.
    verdict_line = next(line for line in out.splitlines() if re.match(r"(KEEP|ACCEPT|REVERT) \(PASSED\) ", line))
    assert "x vs incumbent (" in verdict_line  # one line, even when stdout is not a terminal


def _assert_one_json_evaluation(out: str) -> dict:
    assert out.endswith("\n") and out.count("\n") == 1, out
    data = json.loads(out)
    assert EVALUATION_KEYS <= set(data)
    assert data["workloads"] and all(WORKLOAD_KEYS <= set(w) for w in data["workloads"])
    return data


@pytest.mark.slow
def test_json_prints_exactly_one_object(capsys):
    code, out, err = _run(capsys, RELU, HONEST, *FAST, "--seed", "3", "--json")
    data = _assert_one_json_evaluation(out)
    assert code == 0 and data["verdict"] in {"KEEP", "ACCEPT", "REVERT"}
    assert (data["status"], data["correct"], data["timing"], data["device"]) == ("PASSED", True, "cpu_wall", "cpu")
    assert data["workloads"][0]["status"] == "PASSED" and data["workloads"][0]["max_abs_error"] == 0.0
    assert err == ""


@pytest.mark.slow
def test_installed_console_script(tmp_path):
    script = Path(sys.executable).with_name("kernelarc")
    if not script.exists():
        pytest.skip("the kernelarc console script is not installed in this environment")
    result = subprocess.run([str(script), "eval", RELU, str(CANDIDATES / "evil_partial_rows.py"), *FAST, "--json"],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    data = _assert_one_json_evaluation(result.stdout)
    assert (data["verdict"], data["status"]) == ("REJECT", "INCORRECT_NUMERICAL")
    assert "Traceback" not in result.stderr


INVALID_REFERENCES = [
    pytest.param("raising_reference.py", "RuntimeError: this reference always fails", id="raises"),
    pytest.param("nan_reference.py", "has NaN/Inf", id="nan"),
    pytest.param("huge_inputs.py", "out of host memory", id="out-of-memory"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("task", "words"), INVALID_REFERENCES)
def test_a_reference_that_cannot_run_is_one_line_and_exit_2(capsys, task, words):
    code, out, err = _run(capsys, str(TASKS / task), HONEST, *FAST, "--json")
    assert code == 2 and json.loads(out)["status"] == "INVALID_REFERENCE"
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"kernelarc: error: INVALID_REFERENCE: the reference of {Path(task).stem} cannot be judged")
    assert words in err


@pytest.mark.slow
def test_timeout_sets_the_stage_deadlines_and_a_timeout_names_its_deadline(capsys):
    # 8 s: the reference's own stage gets twice that, room for a side's start-up on a loaded 2-core host (at 3 s
    # a CI-like run's reference timed out first: INVALID_REFERENCE, exit 2)
    code, out, err = _run(capsys, RELU, str(CANDIDATES / "faults" / "forward_loop.py"), *FAST, "--timeout", "8",
                          "--json")
    result = json.loads(out)
    assert code == 1 and result["status"] == "TIMEOUT", result["reason"]
    assert "the candidate timed out during first_call (8 s compile deadline; --timeout sets it)" in result["reason"]


def test_timeout_maps_onto_every_stage_deadline():
    from kernelarc.campaign import CampaignOptions
    from kernelarc.guard.settings import GuardSettings

    settings = CampaignOptions(timeout_s=7).guard_settings()
    assert (settings.compile_timeout_s, settings.run_timeout_s, settings.reference_timeout_s) == (7, 7, 14)
    assert CampaignOptions().guard_settings() == GuardSettings()


ONE_ELEMENT_OFF = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.clamp_min(x, 0.0)
        y[0, 0] = y[0, 0] + 1.0  # one of 128 elements off
        return y
'''


@pytest.mark.slow
def test_matched_ratio_lets_a_few_elements_out_of_tolerance_pass(capsys, tmp_path):
    candidate = tmp_path / "one_off.py"
    candidate.write_text(ONE_ELEMENT_OFF)
    code, out, _ = _run(capsys, RELU, str(candidate), *FAST)
    assert code == 1 and "0.781% of elements out of tolerance" in out
    code, out, _ = _run(capsys, RELU, str(candidate), *FAST, "--matched-ratio", "0.99", "--json")
    assert code == 0 and json.loads(out)["correct"]
    code, _, err = _run(capsys, RELU, str(candidate), *FAST, "--matched-ratio", "1.5")
    assert code == 2 and "--matched-ratio" in err


def test_a_reason_that_quotes_markup_is_printed_as_text(capsys, tmp_path):
    """A candidate's error message is quoted in the reason: "[/bold]" in it crashed `eval` with rich's MarkupError
    (fifth red-team pass) instead of printing the REJECT."""
    candidate = tmp_path / "raises.py"
    candidate.write_text("import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                         "        raise RuntimeError('[/bold] unbalanced [red]')\n")
    code, out, _ = _run(capsys, RELU, str(candidate), *FAST)
    assert code == 1 and "REJECT" in out and "[/bold] unbalanced [red]" in out


def test_terminal_controls_in_a_candidates_error_are_printed_as_escapes(capsys, tmp_path):
    """Sixth red-team pass: an error message holding escape sequences retitled and cleared the terminal of
    `eval` (and could have overwritten the printed verdict), in the reason and again in the log's tail."""
    candidate = tmp_path / "raises.py"
    candidate.write_text("import sys\nimport torch.nn as nn\n\nEVIL = '\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[1A\\u202eKEEP 999x'\n\n\n"
                         "class ModelNew(nn.Module):\n    def forward(self, x):\n"
                         "        print(EVIL, file=sys.stderr, flush=True)\n        raise RuntimeError(EVIL)\n")
    code, out, _ = _run(capsys, RELU, str(candidate), *FAST)
    assert code == 1 and "REJECT" in out
    assert not any(c in out for c in ("\x1b", "\x07", "\u202e")), repr(out)
    assert out.count("\\x1b]0;PWNED\\x07\\x1b[2J") >= 2, out  # in the reason and in the log's tail, written out


def test_an_exported_baseline_is_judged_as_in_the_campaign_and_an_edited_one_meets_the_gate(capsys, tmp_path):
    """A campaign whose torch.compile baseline won exports it as a solution.json; `eval` of that file judges it
    as the campaign did (kernelarc's own code skips the static gate), where the same code with one line
    changed is anyone's code, and the gate refuses its raising Dynamo's recompile limit."""
    from kernelarc.campaign.baselines import COMPILE, baseline_candidates
    from kernelarc.campaign.export import export_best
    from kernelarc.task.loader import load_task

    problem = EXAMPLES / "sol" / "rmsnorm_small"
    task = load_task(problem)
    [solution, _] = export_best(task, baseline_candidates(task)[COMPILE], tmp_path / "best")
    code, out, _ = _run(capsys, str(problem), str(solution), *FAST, "--json")
    result = json.loads(out)
    assert code == 0 and result["correct"] and result["status"] == "PASSED", result["reason"]

    edited = json.loads(solution.read_text())
    edited["sources"][0]["content"] += "\n# edited\nX = 1\n"
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    code, out, _ = _run(capsys, str(problem), str(tmp_path / "edited.json"), *FAST, "--json")
    result = json.loads(out)
    assert code == 1 and result["status"] == "STATIC_REJECT" and "recompile_limit" in result["reason"]
