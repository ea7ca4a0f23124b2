"""Shared fixtures: the devices to run on (CPU always; CUDA when the library
was built with it and torch sees a GPU), and the tests' import path."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _stats, _reference

import flashspec  # noqa: E402


def cuda_ready() -> bool:
    return torch.cuda.is_available() and flashspec.cuda_available()


def cuda_skip_reason() -> str:
    if not torch.cuda.is_available():
        return "no CUDA device visible to torch"
    if not flashspec.built_with_cuda():
        return "flashspec was built without CUDA (CPU-only wheel)"
    return "flashspec sees no CUDA device"


requires_cuda = pytest.mark.skipif(not cuda_ready(), reason=cuda_skip_reason())

DEVICES = ["cpu", pytest.param("cuda", marks=[requires_cuda, pytest.mark.gpu])]


@pytest.fixture(params=DEVICES)
def device(request):
    return torch.device(request.param)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU and a CUDA build of flashspec")
