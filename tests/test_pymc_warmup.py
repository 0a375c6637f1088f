"""``ppdinfer warmup`` (issue 34, part 3): the PyMC layer's kernels compiled into numba's cache ahead of the
first fit, one specialisation each, never twice."""

from __future__ import annotations

from ppdinfer.cli import main
from ppdinfer.kernels import augmentation
from ppdinfer.pymc import warm_up


def test_warmup_command_compiles_the_augmentation_kernel_once(capsys):
    assert main(["warmup"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ppdinfer warmup: ") and "augmentation_sweeps (1)" in out
    report = warm_up()  # again in this process: the one specialisation serves, nothing new is compiled
    assert report["kernels"]["augmentation_sweeps"] == 1 == len(augmentation.augmentation_sweeps.signatures)
    assert report["seconds"] < 15
