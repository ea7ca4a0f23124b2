"""flashspec: LM-head projection, exact sampling, greedy-draft argmax and
speculative verify in one pass over the vocabulary, on torch tensors.

Ops (device taken from the tensors; CUDA ops run on the current stream, never
synchronize the host, and can be captured in a CUDA graph):

    sample(hidden, weight, temperature, seed, offset=None, logit_bias=None,
           allowed=None, return_logprobs=False, top_k=None, top_p=None,
           min_p=None, return_filter_fallback=False)     -> SampleOutput
    sample_logits(logits, temperature, seed, ...)          -> SampleOutput
    draft_argmax(hidden, weight, return_logits=False)      -> ArgmaxOutput
    draft_argmax_logits(logits, return_logits=False)       -> ArgmaxOutput
    verify(target_hidden, weight, draft_tokens, cu_num_draft_tokens,
           temperature, seed, offset=None, ...)            -> VerifyOutput
    verify_logits(target_logits, draft_tokens, cu_num_draft_tokens, ...)
    verify_tree(target_hidden, weight, tokens, parents, cu_num_nodes,
                temperature, seed, offset=None, ...)       -> VerifyTreeOutput
    verify_tree_logits(target_logits, tokens, parents, cu_num_nodes, ...)

flashspec.vllm has a drop-in for vLLM v1's rejection sampler.  See
python/README.md for the conventions (dtypes, contiguity, errors).
"""
import os as _os

try:
    from . import _flashspec as _C
except ImportError as _e:  # pragma: no cover
    raise ImportError(
        f"flashspec: the compiled extension is missing from {_os.path.dirname(__file__)} ({_e}). "
        "Install the package (pip install ./python); when running from the repository, make "
        "sure the source folder python/ is not on sys.path ahead of the installed package "
        "(e.g. run `pytest python/tests`, not `python -m pytest` from inside python/)") from _e
from ._ops import (  # noqa: F401
    ArgmaxOutput,
    FlashspecError,
    FlashspecRowError,
    SampleOutput,
    VerifyOutput,
    VerifyTreeOutput,
    check_row_status,
    clear_workspace_cache,
    draft_argmax,
    draft_argmax_logits,
    pack_allowed,
    row_status_string,
    sample,
    sample_logits,
    verify,
    verify_logits,
    verify_tree,
    verify_tree_logits,
)

__version__ = "0.1.0"

_lib_version, _header_version = _C.version()
if _lib_version != _header_version:
    raise ImportError(
        f"flashspec: the extension was compiled against flashspec.h version {_header_version} "
        f"but loaded libflashspec version {_lib_version}; reinstall the package")

#: fs_row_status values (row_status tensors); row_status_string() describes them.
ROW_OK = _C.ROW_OK
ROW_BAD_TEMPERATURE = _C.ROW_BAD_TEMPERATURE
ROW_BAD_DRAFT = _C.ROW_BAD_DRAFT
ROW_BAD_OFFSETS = _C.ROW_BAD_OFFSETS
ROW_NONFINITE = _C.ROW_NONFINITE
ROW_ALL_MASKED = _C.ROW_ALL_MASKED
ROW_BAD_TREE = _C.ROW_BAD_TREE
ROW_BAD_FILTER = _C.ROW_BAD_FILTER
#: the most children a tree-verify node may have (max_children's bound)
TREE_MAX_CHILDREN = _C.TREE_MAX_CHILDREN
#: temperatures below this sample greedily
MIN_TEMPERATURE = _C.MIN_TEMPERATURE


def built_with_cuda() -> bool:
    """True when this build of the library has the CUDA backend."""
    return bool(_C.BUILT_WITH_CUDA)


def cuda_available() -> bool:
    """True when the library has the CUDA backend and sees a GPU."""
    return bool(_C.cuda_available())


def library_path() -> str:
    """Path of the libflashspec shared library shipped in this package."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    for name in sorted(_os.listdir(here)):
        if name.startswith("libflashspec") and (".so" in name or name.endswith(".dylib")):
            return _os.path.join(here, name)
    raise FileNotFoundError(f"libflashspec not found in {here}")

