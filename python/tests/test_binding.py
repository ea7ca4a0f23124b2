"""The binding itself: the extension and libflashspec come from one build,
enum values come from the header, library errors carry the library's
message, and the sampling-parameter dict rejects names it does not know."""
import os

import pytest
import torch

import flashspec
from flashspec import _flashspec as C


def test_extension_and_library_agree():
    lib, header = C.version()
    assert lib == header == 100  # FS_VERSION 0.1.0
    path = flashspec.library_path()
    assert os.path.isfile(path)
    assert os.path.dirname(path) == os.path.dirname(C.__file__)


def test_enum_values_from_header():
    # The Python layer uses these names only; their values are the header's.
    assert (C.DTYPE_F32, C.DTYPE_F16, C.DTYPE_BF16) == (0, 1, 2)
    assert C.ERR_INVALID_ROWS == 5 and C.ROW_BAD_DRAFT == 2
    assert flashspec.ROW_ALL_MASKED == C.ROW_ALL_MASKED
    assert C.status_name(C.ERR_INVALID_SIZE) == "FS_ERR_INVALID_SIZE"
    assert "size" in C.status_string(C.ERR_INVALID_SIZE)
    assert "temperature" in flashspec.row_status_string(flashspec.ROW_BAD_TEMPERATURE)
    assert flashspec.MIN_TEMPERATURE == pytest.approx(1e-5)
    assert (C.ROW_BAD_TREE, C.ROW_BAD_FILTER, C.TREE_MAX_CHILDREN) == (6, 7, 16)
    assert flashspec.ROW_BAD_FILTER == C.ROW_BAD_FILTER
    assert flashspec.ROW_BAD_TREE == C.ROW_BAD_TREE
    assert "top_p" in flashspec.row_status_string(flashspec.ROW_BAD_FILTER)


def test_library_error_carries_message():
    ctx = C.context_create(C.DEVICE_CPU, 0)
    with pytest.raises(flashspec.FlashspecError) as e:
        C.sample_workspace_size(ctx, 0, 100)
    assert e.value.status == C.ERR_INVALID_SIZE
    assert e.value.status_name == "FS_ERR_INVALID_SIZE"
    assert "rows 0" in e.value.message and "FS_ERR_INVALID_SIZE" in str(e.value)
    assert C.context_last_error(ctx) == e.value.message


def test_unknown_sampling_field_rejected():
    ctx = C.context_create(C.DEVICE_CPU, 0)
    logits = torch.zeros(1, 4)
    out = torch.empty(1, dtype=torch.int32)
    with pytest.raises(TypeError, match="unknown field"):
        C.sample_logits(ctx, logits.data_ptr(), C.DTYPE_F32, 1, 4,
                        {"temperature": 0, "seed": 0, "top_q": 0}, 0, 0,
                        out.data_ptr(), 0, out.data_ptr())


def test_null_pointer_reported_by_library():
    ctx = C.context_create(C.DEVICE_CPU, 0)
    logits = torch.zeros(1, 4)
    out = torch.empty(1, dtype=torch.int32)
    ws = torch.empty(C.sample_workspace_size(ctx, 1, 4), dtype=torch.uint8)
    with pytest.raises(flashspec.FlashspecError, match="temperature is NULL"):
        C.sample_logits(ctx, logits.data_ptr(), C.DTYPE_F32, 1, 4, {"seed": 0}, ws.data_ptr(),
                        ws.numel(), out.data_ptr(), 0, out.data_ptr())


@pytest.mark.skipif(flashspec.built_with_cuda(), reason="CPU-only build behaviour")
def test_cpu_only_build_refuses_cuda_context():
    with pytest.raises(flashspec.FlashspecError) as e:
        C.context_create(C.DEVICE_CUDA, 0)
    assert e.value.status == C.ERR_UNSUPPORTED
    assert "without CUDA" in e.value.message or "no CUDA backend" in e.value.message


def test_error_pickles():
    import pickle
    err = flashspec.FlashspecError(C.ERR_CUDA, "boom")
    back = pickle.loads(pickle.dumps(err))
    assert back.status == C.ERR_CUDA and back.message == "boom"
