#!/usr/bin/env bash
# Run the project's GPU tests (marker `gpu`) on a GPU machine whose image has no pytest.
#   ../shared/tools/gpu-wheels pytest      # here, once: pytest and its dependencies into .whl
#   bash bench/gpu/gpu_tests.sh [TEST_FILES...]   # there, carrying .whl (default: tests/guard)
set -u
source bench/gpu/install_wheels.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .whl/pytest*.whl .whl/pluggy*.whl .whl/iniconfig*.whl .whl/packaging*.whl .whl/pygments*.whl .whl/filelock*.whl
python3 -m pytest -q -p no:cacheprovider -m gpu "${@:-tests/guard}"
