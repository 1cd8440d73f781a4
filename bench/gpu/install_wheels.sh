# Sourced by the bench/gpu scripts on a GPU machine: install the Python packages its image lacks from
# the carried .whl/ folder into /tmp/site and put them (and src/) on PYTHONPATH. Does nothing without
# .whl/ or a GPU (the CPU tests of those scripts run with the project's own environment).
# pyelftools and cupti-python (SOL-ExecBench's evaluator, bench/gpu/official_agreement.sh) likewise.
# The nvidia-cutlass wheel (cutlass_gemm's headers) is installed when present: gpu-wheels drops
# nvidia_* wheels, so copy it into .whl/ by hand.
if [ -d .whl ] && command -v nvidia-smi >/dev/null; then
  ${PYTHON:-python3} -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/pydantic*.whl .whl/annotated_types*.whl .whl/typing_*.whl .whl/platformdirs*.whl \
    $(ls .whl/nvidia_cutlass*.whl .whl/pyelftools*.whl .whl/cupti_python*.whl 2>/dev/null)
  export PYTHONPATH=/tmp/site:$PWD/src
fi
