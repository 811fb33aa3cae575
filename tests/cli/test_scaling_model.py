"""bench/scaling_model.py, the model docs/design-notes.md argues from ("Four GPUs and the
host's memory bandwidth"): its tiles phase and efficiency behave as its rules say."""
import importlib.util
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

MODEL = SOURCE_DIR / "bench" / "scaling_model.py"


@pytest.fixture(scope="module")
def model():
    spec = importlib.util.spec_from_file_location("scaling_model", MODEL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def args(model, *argv):
    return model.parser().parse_args([str(a) for a in argv])


def test_one_device_unbounded_is_the_sum_of_its_tiles(model):
    span, idle = model.simulate(12, 0.768, 1, 1e12, 5.0, 100.0)
    assert span == pytest.approx(12 * 13 // 2 * 5.0) and idle[0] == pytest.approx(0.0, abs=1e-6)


def test_the_host_rate_bounds_the_ramp(model):
    tiles = 33 * 34 // 2
    free, _ = model.simulate(33, 0.768, 4, 1e12, 4.9, 100.0)
    bound, idle = model.simulate(33, 0.768, 4, 60.0, 4.9, 100.0)
    # Unbounded, only the queue's end is uneven: within a few tiles of an even share.
    assert tiles * 4.9 / 4 <= free <= tiles * 4.9 / 4 + 4 * 4.9
    # Every panel crosses from the host first: the devices wait, and at least for the first
    # panel each needs (768 MB at a quarter of 60 GB/s).
    assert bound > free and min(idle) >= 0.768 / 15.0 * 1000.0 * 0.99
    faster, _ = model.simulate(33, 0.768, 4, 88.0, 4.9, 100.0)
    assert free < faster < bound


def test_tiles_on_part_of_k_shorten_the_ramp(model):
    whole, _ = model.simulate(33, 0.768, 4, 60.0, 4.9, 100.0)
    split, _ = model.simulate(33, 0.768, 4, 60.0, 4.9, 100.0, split=(20, 8))
    free, _ = model.simulate(33, 0.768, 4, 1e12, 4.9, 100.0, split=(20, 8))
    assert free <= split < whole


def test_partial_counts_cost_device_memory_traffic(model):
    free, _ = model.simulate(33, 0.768, 4, 60.0, 4.9, 100.0, split=(25, 4))
    paid, _ = model.simulate(33, 0.768, 4, 60.0, 4.9, 100.0, split=(25, 4), acc_ms=0.05)
    # 325 window tiles, each 6 passes (write, two middle slices reading and writing, read):
    # at most all of it on the slowest device, at least a quarter of it there.
    assert free + 325 * 6 * 0.05 / 4 * 0.5 <= paid <= free + 325 * 6 * 0.05
    # One device runs whole tiles: the efficiency's one-device job is the unsplit one.
    whole, _ = model.simulate(33, 0.768, 1, 25.0, 4.9, 100.0)
    a = args(model, "--tile-ms", 4.9, "--setup-ms", 9, 60, "--tail-ms", 10, 10, "--split", 25, 4)
    assert model.efficiency(a, (25, 4))[0] == pytest.approx(9 + whole + 10)


def test_efficiency_rises_with_a_shorter_set_up_and_the_split(model):
    base = model.efficiency(args(model, "--tile-ms", 4.9, "--setup-ms", 9, 60), (0, 1))
    short = model.efficiency(args(model, "--tile-ms", 4.9, "--setup-ms", 9, 10), (0, 1))
    both = model.efficiency(args(model, "--tile-ms", 4.9, "--setup-ms", 9, 10), (20, 8))
    one_job, many_job, eff = base
    assert eff == pytest.approx(one_job / (4 * many_job))
    assert 0 < base[2] < short[2] < both[2] <= 1.0
    # One device alone gets no faster from more devices' set-up.
    assert short[0] == pytest.approx(base[0])


def test_command_line_prints_the_efficiency():
    out = subprocess.run([sys.executable, str(MODEL), "--panels", "12", "--split", "6", "4"], capture_output=True,
                         text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0].startswith("78 tiles of 5.7 ms on 4 devices")
    assert lines[-1].startswith("job: ") and "efficiency" in lines[-1] and lines[-1].endswith("%")
