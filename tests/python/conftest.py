"""The binding tests follow the CLI tests' rule (tests/cli/conftest.py): a run whose every test
was skipped (no GPU, no numba) exits 77, which ctest reports as Skipped, never as passed."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("outcore_cli_conftest", Path(__file__).resolve().parents[1] / "cli" / "conftest.py")
_cli_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cli_conftest)

pytest_sessionfinish = _cli_conftest.pytest_sessionfinish
min_score_reference = _cli_conftest.min_score_reference  # the top-k reference both suites compare with
