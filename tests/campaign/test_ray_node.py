"""What travels to a Ray node: a task's files as bytes, unpacked into a private folder there."""

from __future__ import annotations

import pytest

from kernelarc.campaign.ray_node import TaskPayload
from kernelarc.task.loader import load_task

from campaign.runs import REPO, RMSNORM

RELU = REPO / "examples" / "kernelbench" / "relu_small.py"


@pytest.mark.parametrize("path", [RELU, RMSNORM], ids=["kernelbench", "sol"])
def test_a_task_unpacked_elsewhere_is_the_same_task(path, tmp_path):
    task = load_task(path)
    payload = TaskPayload.of(task)

    moved = payload.unpack(tmp_path)

    assert moved.path.parent == tmp_path if path.is_file() else moved.path == tmp_path
    assert moved.model_copy(update={"path": task.path}) == task
    assert load_task(moved.path).model_copy(update={"path": task.path}) == task  # the files alone make it again


def test_the_sol_payload_holds_the_problem_files_and_no_others():
    assert sorted(TaskPayload.of(load_task(RMSNORM)).files) == ["definition.json", "workload.jsonl"]


def test_a_file_name_leading_outside_the_folder_is_refused(tmp_path):
    payload = TaskPayload(load_task(RELU), {"../escape.py": b"x = 1\n"})
    with pytest.raises(ValueError, match="outside"):
        payload.unpack(tmp_path / "root")
    assert not (tmp_path / "escape.py").exists()
