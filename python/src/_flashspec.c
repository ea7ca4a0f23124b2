/* flashspec._flashspec: the CPython binding of include/flashspec.h.
 *
 * The Python layer (flashspec/_ops.py) validates torch tensors and passes
 * plain integers: data pointers (tensor.data_ptr(), 0 for NULL), sizes and
 * enum values.  Every fs_* struct is built here, in C, from those integers by
 * field name, so no struct layout is written down anywhere but the header: a
 * field added to the header cannot drift from the binding, and one renamed or
 * retyped fails to compile.  Enum values are exported from the header too.
 *
 * Sampling parameters arrive as a dict {field name: pointer}; fields not in
 * the dict are NULL, and names the binding does not know are an error (so a
 * Python layer newer than this build cannot have one silently ignored).
 * Adding an optional fs_sampling field is one entry in k_sampling_fields and
 * one line in sampling_from_dict.
 *
 * Ops return the fs_status (FS_OK, or FS_ERR_INVALID_ROWS from a CPU context
 * whose out_row_status marks some rows); any other status raises the error
 * class registered by _set_error_class(cls) as cls(status, message), the
 * message being fs_context_last_error().  Ops run with the GIL released; the
 * Python layer serializes calls on one context (its stream and last error
 * are per context). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "flashspec.h"
#include "philox.h" /* FS_MAX_POSITION: the bound on max_drafts */

#define CTX_CAPSULE "flashspec.fs_context"

static PyObject *g_error_class; /* set by _set_error_class; RuntimeError until then */

/* ---- helpers ----------------------------------------------------------- */

static const char *status_name(int status)
{
    switch (status) {
    case FS_OK: return "FS_OK";
    case FS_ERR_NULL_POINTER: return "FS_ERR_NULL_POINTER";
    case FS_ERR_INVALID_SIZE: return "FS_ERR_INVALID_SIZE";
    case FS_ERR_INVALID_ARGUMENT: return "FS_ERR_INVALID_ARGUMENT";
    case FS_ERR_WORKSPACE_TOO_SMALL: return "FS_ERR_WORKSPACE_TOO_SMALL";
    case FS_ERR_INVALID_ROWS: return "FS_ERR_INVALID_ROWS";
    case FS_ERR_UNSUPPORTED: return "FS_ERR_UNSUPPORTED";
    case FS_ERR_NO_DEVICE: return "FS_ERR_NO_DEVICE";
    case FS_ERR_CUDA: return "FS_ERR_CUDA";
    case FS_ERR_NCCL: return "FS_ERR_NCCL";
    case FS_ERR_OUT_OF_MEMORY: return "FS_ERR_OUT_OF_MEMORY";
    }
    return "FS_ERR_UNKNOWN";
}

/* Raise the registered error class as cls(status, message); returns NULL. */
static PyObject *raise_status(int status, const char *message)
{
    PyObject *cls = g_error_class ? g_error_class : PyExc_RuntimeError;
    if (!message || !message[0])
        message = fs_status_string((fs_status)status);
    PyObject *exc = PyObject_CallFunction(cls, "is", status, message);
    if (exc) {
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

static fs_context *get_ctx(PyObject *capsule)
{
    return (fs_context *)PyCapsule_GetPointer(capsule, CTX_CAPSULE);
}

static void *as_ptr(unsigned long long v)
{
    return (void *)(uintptr_t)v;
}

/* (weight, vocab_size, hidden_dim, dtype) -> fs_lm_head */
static int parse_head(PyObject *t, fs_lm_head *h)
{
    unsigned long long weight;
    long long vocab, dim;
    int dtype;
    if (!PyArg_ParseTuple(t, "KLLi;head must be (weight_ptr, vocab_size, hidden_dim, dtype)",
                          &weight, &vocab, &dim, &dtype))
        return -1;
    memset(h, 0, sizeof *h);
    h->weight = as_ptr(weight);
    h->vocab_size = vocab;
    h->hidden_dim = dim;
    h->dtype = (fs_dtype)dtype;
    return 0;
}

/* (num_requests, num_draft_tokens, max_drafts, draft_tokens_ptr,
 *  draft_offsets_ptr) -> fs_drafts */
static int parse_drafts(PyObject *t, fs_drafts *d)
{
    long long requests, ntok, max_drafts;
    unsigned long long tokens, offsets;
    if (!PyArg_ParseTuple(t,
                          "LLLKK;drafts must be (num_requests, num_draft_tokens, max_drafts, "
                          "draft_tokens_ptr, draft_offsets_ptr)",
                          &requests, &ntok, &max_drafts, &tokens, &offsets))
        return -1;
    memset(d, 0, sizeof *d);
    d->num_requests = requests;
    d->num_draft_tokens = ntok;
    d->max_drafts = max_drafts;
    d->draft_tokens = (const int32_t *)as_ptr(tokens);
    d->draft_offsets = (const int32_t *)as_ptr(offsets);
    return 0;
}

/* (num_requests, num_nodes, max_depth, max_children, tokens_ptr, parents_ptr,
 *  node_offsets_ptr) -> fs_draft_tree */
static int parse_tree(PyObject *t, fs_draft_tree *d)
{
    long long requests, nodes, max_depth, max_children;
    unsigned long long tokens, parents, offsets;
    if (!PyArg_ParseTuple(t,
                          "LLLLKKK;tree must be (num_requests, num_nodes, max_depth, "
                          "max_children, tokens_ptr, parents_ptr, node_offsets_ptr)",
                          &requests, &nodes, &max_depth, &max_children, &tokens, &parents,
                          &offsets))
        return -1;
    memset(d, 0, sizeof *d);
    d->num_requests = requests;
    d->num_nodes = nodes;
    d->max_depth = max_depth;
    d->max_children = max_children;
    d->tokens = (const int32_t *)as_ptr(tokens);
    d->parents = (const int32_t *)as_ptr(parents);
    d->node_offsets = (const int32_t *)as_ptr(offsets);
    return 0;
}

/* The fs_sampling fields the binding knows, all pointers. */
static const char *const k_sampling_fields[] = {
    "temperature", "seed",  "offset", "logit_bias",         "allowed",
    "top_k",       "top_p", "min_p",  "out_filter_fallback",
};
#define N_SAMPLING_FIELDS (sizeof k_sampling_fields / sizeof k_sampling_fields[0])

/* dict[str, int pointer] -> fs_sampling; absent fields are NULL. */
static int sampling_from_dict(PyObject *dict, fs_sampling *p)
{
    if (!PyDict_Check(dict)) {
        PyErr_SetString(PyExc_TypeError, "sampling parameters must be a dict");
        return -1;
    }
    void *v[N_SAMPLING_FIELDS];
    for (size_t i = 0; i < N_SAMPLING_FIELDS; ++i) {
        v[i] = NULL;
        PyObject *o = PyDict_GetItemString(dict, k_sampling_fields[i]); /* borrowed */
        if (o && o != Py_None) {
            unsigned long long u = PyLong_AsUnsignedLongLong(o);
            if (u == (unsigned long long)-1 && PyErr_Occurred())
                return -1;
            v[i] = as_ptr(u);
        }
    }
    if ((size_t)PyDict_Size(dict) > N_SAMPLING_FIELDS || PyDict_Size(dict) < 0)
        goto unknown;
    {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(dict, &pos, &key, &value)) {
            const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
            int known = 0;
            for (size_t i = 0; k && i < N_SAMPLING_FIELDS; ++i)
                known |= strcmp(k, k_sampling_fields[i]) == 0;
            if (!known)
                goto unknown;
        }
    }
    memset(p, 0, sizeof *p); /* fields this binding does not know stay NULL */
    p->temperature = (const float *)v[0];
    p->seed = (const uint64_t *)v[1];
    p->offset = (const uint64_t *)v[2];
    p->logit_bias = (const float *)v[3];
    p->allowed = (const uint32_t *)v[4];
    p->top_k = (const int32_t *)v[5];
    p->top_p = (const float *)v[6];
    p->min_p = (const float *)v[7];
    p->out_filter_fallback = (int32_t *)v[8];
    return 0;
unknown:
    PyErr_Format(PyExc_TypeError,
                 "sampling parameters: unknown field in %R (this build of flashspec knows "
                 "temperature, seed, offset, logit_bias, allowed, top_k, top_p, min_p, "
                 "out_filter_fallback)",
                 dict);
    return -1;
}

/* Status of an op: FS_OK and FS_ERR_INVALID_ROWS return it, others raise. */
static PyObject *op_result(fs_context *ctx, fs_status st)
{
    if (st == FS_OK || st == FS_ERR_INVALID_ROWS)
        return PyLong_FromLong((long)st);
    return raise_status((int)st, fs_context_last_error(ctx));
}

/* ---- module functions -------------------------------------------------- */

static PyObject *py_set_error_class(PyObject *self, PyObject *cls)
{
    (void)self;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, (PyTypeObject *)PyExc_Exception)) {
        PyErr_SetString(PyExc_TypeError, "_set_error_class: need an Exception subclass");
        return NULL;
    }
    Py_INCREF(cls);
    Py_XSETREF(g_error_class, cls);
    Py_RETURN_NONE;
}

static PyObject *py_version(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    return Py_BuildValue("(ii)", fs_version(), (int)FS_VERSION);
}

static PyObject *py_cuda_available(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    return PyBool_FromLong(fs_cuda_available());
}

static PyObject *py_status_string(PyObject *self, PyObject *arg)
{
    (void)self;
    long s = PyLong_AsLong(arg);
    if (s == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(fs_status_string((fs_status)s));
}

static PyObject *py_status_name(PyObject *self, PyObject *arg)
{
    (void)self;
    long s = PyLong_AsLong(arg);
    if (s == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(status_name((int)s));
}

static PyObject *py_row_status_string(PyObject *self, PyObject *arg)
{
    (void)self;
    long s = PyLong_AsLong(arg);
    if (s == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(fs_row_status_string((int32_t)s));
}

static void ctx_capsule_destroy(PyObject *capsule)
{
    fs_context *ctx = get_ctx(capsule);
    if (ctx)
        fs_context_destroy(ctx);
}

static PyObject *py_context_create(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, ordinal;
    if (!PyArg_ParseTuple(args, "ii:context_create", &kind, &ordinal))
        return NULL;
    fs_context *ctx = NULL;
    fs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = fs_context_create(&ctx, (fs_device_kind)kind, ordinal);
    Py_END_ALLOW_THREADS
    if (st != FS_OK) {
        char msg[256];
        if (st == FS_ERR_UNSUPPORTED && kind == FS_DEVICE_CUDA)
            snprintf(msg, sizeof msg,
                     "fs_context_create: this build of flashspec has no CUDA backend (it was "
                     "built without nvcc, or with FLASHSPEC_CUDA=OFF)");
        else
            snprintf(msg, sizeof msg, "fs_context_create(%s, %d): %s",
                     kind == FS_DEVICE_CUDA ? "CUDA" : "CPU", ordinal,
                     fs_status_string(st));
        return raise_status((int)st, msg);
    }
    PyObject *cap = PyCapsule_New(ctx, CTX_CAPSULE, ctx_capsule_destroy);
    if (!cap)
        fs_context_destroy(ctx);
    return cap;
}

static PyObject *py_context_set_stream(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap;
    unsigned long long stream;
    if (!PyArg_ParseTuple(args, "OK:context_set_stream", &cap, &stream))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    if (!ctx)
        return NULL;
    fs_status st = fs_context_set_stream(ctx, as_ptr(stream));
    if (st != FS_OK)
        return raise_status((int)st, fs_context_last_error(ctx));
    Py_RETURN_NONE;
}

static PyObject *py_context_last_error(PyObject *self, PyObject *cap)
{
    (void)self;
    fs_context *ctx = get_ctx(cap);
    if (!ctx)
        return NULL;
    return PyUnicode_FromString(fs_context_last_error(ctx));
}

/* Workspace queries: (ctx, rows, vocab) and (ctx, requests, drafts, vocab). */
static PyObject *workspace_result(fs_context *ctx, fs_status st, size_t bytes)
{
    if (st != FS_OK)
        return raise_status((int)st, fs_context_last_error(ctx));
    return PyLong_FromSize_t(bytes);
}

static PyObject *py_sample_workspace_size(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap;
    long long rows, vocab;
    if (!PyArg_ParseTuple(args, "OLL:sample_workspace_size", &cap, &rows, &vocab))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    if (!ctx)
        return NULL;
    size_t bytes = 0;
    fs_status st = fs_sample_workspace_size(ctx, rows, vocab, &bytes);
    return workspace_result(ctx, st, bytes);
}

static PyObject *py_draft_argmax_workspace_size(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap;
    long long rows, vocab;
    if (!PyArg_ParseTuple(args, "OLL:draft_argmax_workspace_size", &cap, &rows, &vocab))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    if (!ctx)
        return NULL;
    size_t bytes = 0;
    fs_status st = fs_draft_argmax_workspace_size(ctx, rows, vocab, &bytes);
    return workspace_result(ctx, st, bytes);
}

static PyObject *py_verify_workspace_size(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap;
    long long requests, ntok, vocab;
    if (!PyArg_ParseTuple(args, "OLLL:verify_workspace_size", &cap, &requests, &ntok, &vocab))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    if (!ctx)
        return NULL;
    size_t bytes = 0;
    fs_status st = fs_verify_workspace_size(ctx, requests, ntok, vocab, &bytes);
    return workspace_result(ctx, st, bytes);
}

static PyObject *py_verify_tree_workspace_size(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap;
    long long requests, nodes, vocab;
    if (!PyArg_ParseTuple(args, "OLLL:verify_tree_workspace_size", &cap, &requests, &nodes,
                          &vocab))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    if (!ctx)
        return NULL;
    size_t bytes = 0;
    fs_status st = fs_verify_tree_workspace_size(ctx, requests, nodes, vocab, &bytes);
    return workspace_result(ctx, st, bytes);
}

/* sample(ctx, head, hidden, rows, params, ws, ws_bytes, out_tokens,
 *        out_logprobs, out_row_status) -> status */
static PyObject *py_sample(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *head_t, *params_d;
    unsigned long long hidden, ws, tokens, logprobs, status;
    long long rows;
    Py_ssize_t ws_bytes;
    if (!PyArg_ParseTuple(args, "OOKLOKnKKK:sample", &cap, &head_t, &hidden, &rows, &params_d,
                          &ws, &ws_bytes, &tokens, &logprobs, &status))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    fs_lm_head head;
    fs_sampling p;
    if (!ctx || parse_head(head_t, &head) || sampling_from_dict(params_d, &p))
        return NULL;
    fs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = fs_sample(ctx, &head, as_ptr(hidden), rows, &p, as_ptr(ws), (size_t)ws_bytes,
                   (int32_t *)as_ptr(tokens), (float *)as_ptr(logprobs),
                   (int32_t *)as_ptr(status));
    Py_END_ALLOW_THREADS
    return op_result(ctx, st);
}

/* sample_logits(ctx, logits, dtype, rows, vocab, params, ws, ws_bytes,
 *               out_tokens, out_logprobs, out_row_status) -> status */
static PyObject *py_sample_logits(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *params_d;
    unsigned long long logits, ws, tokens, logprobs, status;
    long long rows, vocab;
    int dtype;
    Py_ssize_t ws_bytes;
    if (!PyArg_ParseTuple(args, "OKiLLOKnKKK:sample_logits", &cap, &logits, &dtype, &rows,
                          &vocab, &params_d, &ws, &ws_bytes, &tokens, &logprobs, &status))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    fs_sampling p;
    if (!ctx || sampling_from_dict(params_d, &p))
        return NULL;
    fs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = fs_sample_logits(ctx, as_ptr(logits), (fs_dtype)dtype, rows, vocab, &p, as_ptr(ws),
                          (size_t)ws_bytes, (int32_t *)as_ptr(tokens), (float *)as_ptr(logprobs),
                          (int32_t *)as_ptr(status));
    Py_END_ALLOW_THREADS
    return op_result(ctx, st);
}

/* draft_argmax(ctx, head, hidden, rows, ws, ws_bytes, out_tokens, out_logits,
 *              out_row_status) -> status */
static PyObject *py_draft_argmax(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *head_t;
    unsigned long long hidden, ws, tokens, logits, status;
    long long rows;
    Py_ssize_t ws_bytes;
    if (!PyArg_ParseTuple(args, "OOKLKnKKK:draft_argmax", &cap, &head_t, &hidden, &rows, &ws,
                          &ws_bytes, &tokens, &logits, &status))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    fs_lm_head head;
    if (!ctx || parse_head(head_t, &head))
        return NULL;
    fs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = fs_draft_argmax(ctx, &head, as_ptr(hidden), rows, as_ptr(ws), (size_t)ws_bytes,
                         (int32_t *)as_ptr(tokens), (float *)as_ptr(logits),
                         (int32_t *)as_ptr(status));
    Py_END_ALLOW_THREADS
    return op_result(ctx, st);
}

/* draft_argmax_logits(ctx, logits, dtype, rows, vocab, ws, ws_bytes,
 *                     out_tokens, out_logits, out_row_status) -> status */
static PyObject *py_draft_argmax_logits(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap;
    unsigned long long logits, ws, tokens, out_logits, status;
    long long rows, vocab;
    int dtype;
    Py_ssize_t ws_bytes;
    if (!PyArg_ParseTuple(args, "OKiLLKnKKK:draft_argmax_logits", &cap, &logits, &dtype, &rows,
                          &vocab, &ws, &ws_bytes, &tokens, &out_logits, &status))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    if (!ctx)
        return NULL;
    fs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = fs_draft_argmax_logits(ctx, as_ptr(logits), (fs_dtype)dtype, rows, vocab, as_ptr(ws),
                                (size_t)ws_bytes, (int32_t *)as_ptr(tokens),
                                (float *)as_ptr(out_logits), (int32_t *)as_ptr(status));
    Py_END_ALLOW_THREADS
    return op_result(ctx, st);
}

/* verify(ctx, head, target_hidden, drafts, params, ws, ws_bytes, out_tokens,
 *        out_num_emitted, out_logprobs, out_row_status) -> status */
static PyObject *py_verify(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *head_t, *drafts_t, *params_d;
    unsigned long long hidden, ws, tokens, emitted, logprobs, status;
    Py_ssize_t ws_bytes;
    if (!PyArg_ParseTuple(args, "OOKOOKnKKKK:verify", &cap, &head_t, &hidden, &drafts_t,
                          &params_d, &ws, &ws_bytes, &tokens, &emitted, &logprobs, &status))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    fs_lm_head head;
    fs_drafts d;
    fs_sampling p;
    if (!ctx || parse_head(head_t, &head) || parse_drafts(drafts_t, &d) ||
        sampling_from_dict(params_d, &p))
        return NULL;
    fs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = fs_verify(ctx, &head, as_ptr(hidden), &d, &p, as_ptr(ws), (size_t)ws_bytes,
                   (int32_t *)as_ptr(tokens), (int32_t *)as_ptr(emitted),
                   (float *)as_ptr(logprobs), (int32_t *)as_ptr(status));
    Py_END_ALLOW_THREADS
    return op_result(ctx, st);
}

/* verify_logits(ctx, logits, dtype, vocab, drafts, params, ws, ws_bytes,
 *               out_tokens, out_num_emitted, out_logprobs, out_row_status) */
static PyObject *py_verify_logits(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *drafts_t, *params_d;
    unsigned long long logits, ws, tokens, emitted, logprobs, status;
    long long vocab;
    int dtype;
    Py_ssize_t ws_bytes;
    if (!PyArg_ParseTuple(args, "OKiLOOKnKKKK:verify_logits", &cap, &logits, &dtype, &vocab,
                          &drafts_t, &params_d, &ws, &ws_bytes, &tokens, &emitted, &logprobs,
                          &status))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    fs_drafts d;
    fs_sampling p;
    if (!ctx || parse_drafts(drafts_t, &d) || sampling_from_dict(params_d, &p))
        return NULL;
    fs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = fs_verify_logits(ctx, as_ptr(logits), (fs_dtype)dtype, vocab, &d, &p, as_ptr(ws),
                          (size_t)ws_bytes, (int32_t *)as_ptr(tokens), (int32_t *)as_ptr(emitted),
                          (float *)as_ptr(logprobs), (int32_t *)as_ptr(status));
    Py_END_ALLOW_THREADS
    return op_result(ctx, st);
}

/* verify_tree(ctx, head, target_hidden, tree, params, ws, ws_bytes, out_tokens,
 *             out_path_nodes, out_num_emitted, out_logprobs, out_row_status) */
static PyObject *py_verify_tree(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *head_t, *tree_t, *params_d;
    unsigned long long hidden, ws, tokens, path, emitted, logprobs, status;
    Py_ssize_t ws_bytes;
    if (!PyArg_ParseTuple(args, "OOKOOKnKKKKK:verify_tree", &cap, &head_t, &hidden, &tree_t,
                          &params_d, &ws, &ws_bytes, &tokens, &path, &emitted, &logprobs,
                          &status))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    fs_lm_head head;
    fs_draft_tree t;
    fs_sampling p;
    if (!ctx || parse_head(head_t, &head) || parse_tree(tree_t, &t) ||
        sampling_from_dict(params_d, &p))
        return NULL;
    fs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = fs_verify_tree(ctx, &head, as_ptr(hidden), &t, &p, as_ptr(ws), (size_t)ws_bytes,
                        (int32_t *)as_ptr(tokens), (int32_t *)as_ptr(path),
                        (int32_t *)as_ptr(emitted), (float *)as_ptr(logprobs),
                        (int32_t *)as_ptr(status));
    Py_END_ALLOW_THREADS
    return op_result(ctx, st);
}

/* verify_tree_logits(ctx, logits, dtype, vocab, tree, params, ws, ws_bytes,
 *                    out_tokens, out_path_nodes, out_num_emitted, out_logprobs,
 *                    out_row_status) */
static PyObject *py_verify_tree_logits(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *tree_t, *params_d;
    unsigned long long logits, ws, tokens, path, emitted, logprobs, status;
    long long vocab;
    int dtype;
    Py_ssize_t ws_bytes;
    if (!PyArg_ParseTuple(args, "OKiLOOKnKKKKK:verify_tree_logits", &cap, &logits, &dtype,
                          &vocab, &tree_t, &params_d, &ws, &ws_bytes, &tokens, &path, &emitted,
                          &logprobs, &status))
        return NULL;
    fs_context *ctx = get_ctx(cap);
    fs_draft_tree t;
    fs_sampling p;
    if (!ctx || parse_tree(tree_t, &t) || sampling_from_dict(params_d, &p))
        return NULL;
    fs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = fs_verify_tree_logits(ctx, as_ptr(logits), (fs_dtype)dtype, vocab, &t, &p, as_ptr(ws),
                               (size_t)ws_bytes, (int32_t *)as_ptr(tokens),
                               (int32_t *)as_ptr(path), (int32_t *)as_ptr(emitted),
                               (float *)as_ptr(logprobs), (int32_t *)as_ptr(status));
    Py_END_ALLOW_THREADS
    return op_result(ctx, st);
}

/* ---- module ------------------------------------------------------------ */

static PyMethodDef k_methods[] = {
    {"_set_error_class", py_set_error_class, METH_O, "Register the exception class raised."},
    {"version", py_version, METH_NOARGS,
     "(fs_version() of the loaded library, FS_VERSION of the header compiled against)"},
    {"cuda_available", py_cuda_available, METH_NOARGS, "fs_cuda_available()"},
    {"status_string", py_status_string, METH_O, "fs_status_string(status)"},
    {"status_name", py_status_name, METH_O, "the fs_status enumerator's name"},
    {"row_status_string", py_row_status_string, METH_O, "fs_row_status_string(row_status)"},
    {"context_create", py_context_create, METH_VARARGS, "fs_context_create(kind, ordinal)"},
    {"context_set_stream", py_context_set_stream, METH_VARARGS,
     "fs_context_set_stream(ctx, cuda_stream)"},
    {"context_last_error", py_context_last_error, METH_O, "fs_context_last_error(ctx)"},
    {"sample_workspace_size", py_sample_workspace_size, METH_VARARGS, NULL},
    {"draft_argmax_workspace_size", py_draft_argmax_workspace_size, METH_VARARGS, NULL},
    {"verify_workspace_size", py_verify_workspace_size, METH_VARARGS, NULL},
    {"sample", py_sample, METH_VARARGS, NULL},
    {"sample_logits", py_sample_logits, METH_VARARGS, NULL},
    {"draft_argmax", py_draft_argmax, METH_VARARGS, NULL},
    {"draft_argmax_logits", py_draft_argmax_logits, METH_VARARGS, NULL},
    {"verify", py_verify, METH_VARARGS, NULL},
    {"verify_logits", py_verify_logits, METH_VARARGS, NULL},
    {"verify_tree_workspace_size", py_verify_tree_workspace_size, METH_VARARGS, NULL},
    {"verify_tree", py_verify_tree, METH_VARARGS, NULL},
    {"verify_tree_logits", py_verify_tree_logits, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef k_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_flashspec",
    .m_doc = "Binding of the flashspec C library (include/flashspec.h); use the flashspec package.",
    .m_size = -1,
    .m_methods = k_methods,
};

PyMODINIT_FUNC PyInit__flashspec(void)
{
    PyObject *m = PyModule_Create(&k_module);
    if (!m)
        return NULL;
    struct {
        const char *name;
        long value;
    } consts[] = {
        {"OK", FS_OK},
        {"ERR_NULL_POINTER", FS_ERR_NULL_POINTER},
        {"ERR_INVALID_SIZE", FS_ERR_INVALID_SIZE},
        {"ERR_INVALID_ARGUMENT", FS_ERR_INVALID_ARGUMENT},
        {"ERR_WORKSPACE_TOO_SMALL", FS_ERR_WORKSPACE_TOO_SMALL},
        {"ERR_INVALID_ROWS", FS_ERR_INVALID_ROWS},
        {"ERR_UNSUPPORTED", FS_ERR_UNSUPPORTED},
        {"ERR_NO_DEVICE", FS_ERR_NO_DEVICE},
        {"ERR_CUDA", FS_ERR_CUDA},
        {"ERR_NCCL", FS_ERR_NCCL},
        {"ERR_OUT_OF_MEMORY", FS_ERR_OUT_OF_MEMORY},
        {"ROW_OK", FS_ROW_OK},
        {"ROW_BAD_TEMPERATURE", FS_ROW_BAD_TEMPERATURE},
        {"ROW_BAD_DRAFT", FS_ROW_BAD_DRAFT},
        {"ROW_BAD_OFFSETS", FS_ROW_BAD_OFFSETS},
        {"ROW_NONFINITE", FS_ROW_NONFINITE},
        {"ROW_ALL_MASKED", FS_ROW_ALL_MASKED},
        {"ROW_BAD_TREE", FS_ROW_BAD_TREE},
        {"ROW_BAD_FILTER", FS_ROW_BAD_FILTER},
        {"TREE_MAX_CHILDREN", FS_TREE_MAX_CHILDREN},
        {"DTYPE_F32", FS_DTYPE_F32},
        {"DTYPE_F16", FS_DTYPE_F16},
        {"DTYPE_BF16", FS_DTYPE_BF16},
        {"DEVICE_CPU", FS_DEVICE_CPU},
        {"DEVICE_CUDA", FS_DEVICE_CUDA},
        {"MAX_POSITION", (long)FS_MAX_POSITION},
#ifdef FS_HAVE_CUDA
        {"BUILT_WITH_CUDA", 1},
#else
        {"BUILT_WITH_CUDA", 0},
#endif
    };
    for (size_t i = 0; i < sizeof consts / sizeof consts[0]; ++i) {
        if (PyModule_AddIntConstant(m, consts[i].name, consts[i].value) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    if (PyModule_AddObject(m, "MIN_TEMPERATURE", PyFloat_FromDouble(FS_MIN_TEMPERATURE)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
