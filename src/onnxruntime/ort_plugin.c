/* ort_plugin.c - the entry point of the ONNX Runtime custom-op library: RegisterCustomOps
 * adds the "pyroi" domain with one custom op per operator (ort_kernel.h's specs) to the
 * session options.
 *
 *   so.register_custom_ops_library(pyroi.onnx.custom_ops_library())
 *
 * The session config entry "pyroi.num_threads" (a whole number; default 0: pyroi's own
 * choice, the machine's cores as far as the work pays for them) sets the threads of every
 * kernel of that session: a custom op cannot read the session's intra-op thread count
 * through the C API.
 *
 * The session config entry "pyroi.override_roi_align" = "1" also registers RoiAlign in ONNX's
 * own domain (versions 10-15 and 16 on, whose defaults differ): the runtime then runs a
 * model's standard RoiAlign nodes on pyroi, unchanged, also at opset 22, for which
 * onnxruntime 1.32 has no kernel. Opt-in: ONNX Runtime's maintainers warn that custom ops in
 * the default domain can clash with its own. */
#include "ort_kernel.h"

#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#  define PYROI_ORT_EXPORT __declspec(dllexport)
#else
#  define PYROI_ORT_EXPORT __attribute__((visibility("default")))
#endif

/* The custom op of one spec for one registration (ORT calls back with the OrtCustomOp
 * pointer: the spec and thread count travel with it). */
typedef struct pyroi_ort_op {
    OrtCustomOp base; /* first: ORT's pointer is ours */
    const pyroi_ort_op_spec *spec;
    int num_threads;
} pyroi_ort_op;

/* The two RoiAlign overrides go newest first: onnxruntime 1.32 matches every opset to the
 * older one otherwise (measured; tests/test_onnxruntime_library.py pins each opset). */
static const pyroi_ort_op_spec *const OPS[] = {
    &pyroi_ort_roi_align_spec,           &pyroi_ort_max_roi_pool_spec,
    &pyroi_ort_mmcv_roi_align_spec,      &pyroi_ort_mmcv_roi_align_rotated_spec,
    &pyroi_ort_mmcv_prroi_pool_spec,     &pyroi_ort_ps_roi_align_spec,
    &pyroi_ort_ps_roi_pool_spec,         &pyroi_ort_roi_align_rotated_spec,
    &pyroi_ort_crop_and_resize_spec,
    &pyroi_ort_roi_align_16_override_spec, &pyroi_ort_roi_align_10_override_spec};

/* The domains, each holding the ops whose spec names it; the last, ONNX's own (""), only in
 * sessions that ask for the override ("pyroi.override_roi_align" = "1"). */
static const char *const DOMAINS[] = {"pyroi", "mmcv", ""};
#define DOMAIN_COUNT (sizeof(DOMAINS) / sizeof(DOMAINS[0]))
#define OP_COUNT (sizeof(OPS) / sizeof(OPS[0]))

static const pyroi_ort_op *op_of(const OrtCustomOp *op)
{
    return (const pyroi_ort_op *)op;
}

static const char *ORT_API_CALL op_name(const OrtCustomOp *op)
{
    return op_of(op)->spec->name;
}

static const char *ORT_API_CALL op_provider(const OrtCustomOp *op)
{
    (void)op;
    return "CPUExecutionProvider";
}

/* Inputs and outputs take any element type (the kernels check theirs: one float type for
 * the tensors and boxes, int64 indices), so one op serves float, double and float16. */
static ONNXTensorElementDataType ORT_API_CALL op_any_type(const OrtCustomOp *op, size_t index)
{
    (void)op;
    (void)index;
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

static size_t ORT_API_CALL op_input_count(const OrtCustomOp *op)
{
    return op_of(op)->spec->input_count;
}

static size_t ORT_API_CALL op_output_count(const OrtCustomOp *op)
{
    (void)op;
    return 1; /* the pooled tensor */
}

static OrtCustomOpInputOutputCharacteristic ORT_API_CALL op_required(const OrtCustomOp *op,
                                                                     size_t index)
{
    (void)op;
    (void)index;
    return INPUT_OUTPUT_REQUIRED;
}

static OrtMemType ORT_API_CALL op_memory(const OrtCustomOp *op, size_t index)
{
    (void)op;
    (void)index;
    return OrtMemTypeDefault;
}

static int ORT_API_CALL op_no_variadic(const OrtCustomOp *op)
{
    (void)op;
    return 0;
}

static int ORT_API_CALL op_start_version(const OrtCustomOp *op)
{
    return op_of(op)->spec->start_version;
}

static int ORT_API_CALL op_end_version(const OrtCustomOp *op)
{
    return op_of(op)->spec->end_version;
}

static size_t ORT_API_CALL op_no_pairs(int **input_index, int **output_index)
{
    *input_index = NULL;
    *output_index = NULL;
    return 0;
}

static void ORT_API_CALL op_release_pairs(int *input_index, int *output_index)
{
    (void)input_index;
    (void)output_index;
}

/* One dimension of input index (-1 when unknown or the rank is not `rank`). */
static int64_t input_dimension(const OrtShapeInferContext *context, size_t index, size_t rank,
                               size_t axis)
{
    OrtTensorTypeAndShapeInfo *info = NULL; /* the context's: the runtime frees it */
    int64_t dims[4] = {-1, -1, -1, -1};
    size_t count = 0;
    OrtStatus *status = pyroi_ort_api->ShapeInferContext_GetInputTypeShape(context, index, &info);
    if (status == NULL) {
        status = pyroi_ort_api->GetDimensionsCount(info, &count);
    }
    if (status == NULL && count == rank) {
        status = pyroi_ort_api->GetDimensions(info, dims, rank);
    }
    if (status != NULL) {
        pyroi_ort_api->ReleaseStatus(status);
        return -1;
    }
    return count == rank ? dims[axis] : -1;
}

/* Output 0: input 0's element type, shape (num_rois, C, pooled_height, pooled_width) as far
 * as the inputs' shapes and the attributes tell (the runtime needs the type of an output
 * whose inputs are typed dynamically). */
static OrtStatusPtr ORT_API_CALL op_infer_output(const OrtCustomOp *op,
                                                 OrtShapeInferContext *context)
{
    OrtTensorTypeAndShapeInfo *input = NULL, *output = NULL;
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    int64_t shape[4];
    OrtStatus *status = pyroi_ort_api->ShapeInferContext_GetInputTypeShape(context, 0, &input);
    shape[0] = input_dimension(context, 1, 2, 0); /* rois (num_rois, ...) */
    shape[1] = input_dimension(context, 0, 4, 1); /* X (N, C, H, W) */
    op_of(op)->spec->pooled_size(context, shape + 2);
    if (op_of(op)->spec->position_sensitive) {
        const int64_t bins = shape[2] > 0 && shape[3] > 0 ? shape[2] * shape[3] : -1;
        shape[1] = shape[1] >= 0 && bins > 0 && shape[1] % bins == 0 ? shape[1] / bins : -1;
    }
    if (status == NULL) {
        status = pyroi_ort_api->GetTensorElementType(input, &type);
    }
    if (status == NULL) {
        status = pyroi_ort_api->CreateTensorTypeAndShapeInfo(&output);
    }
    if (status == NULL) {
        status = pyroi_ort_api->SetTensorElementType(output, type);
    }
    if (status == NULL) {
        status = pyroi_ort_api->SetDimensions(output, shape, 4);
    }
    if (status == NULL) { /* unknown sizes are symbolic (a -1 alone reads as a size) */
        const char *names[4] = {"", "", "", ""};
        static const char *const unknown[4] = {"num_rois", "channels", "pooled_height",
                                               "pooled_width"};
        size_t axis;
        for (axis = 0; axis < 4; ++axis) {
            names[axis] = shape[axis] < 0 ? unknown[axis] : "";
        }
        status = pyroi_ort_api->SetSymbolicDimensions(output, names, 4);
    }
    if (status == NULL) {
        status = pyroi_ort_api->ShapeInferContext_SetOutputTypeShape(context, 0, output);
    }
    if (output != NULL) {
        pyroi_ort_api->ReleaseTensorTypeAndShapeInfo(output);
    }
    return status;
}

static OrtStatusPtr ORT_API_CALL op_create_kernel_v2(const OrtCustomOp *op, const OrtApi *api,
                                                     const OrtKernelInfo *info, void **kernel)
{
    pyroi_ort_kernel *k = (pyroi_ort_kernel *)calloc(1, sizeof(*k));
    OrtStatus *status;
    (void)api;
    *kernel = NULL;
    if (k == NULL) {
        return pyroi_ort_status(op_of(op)->spec->name, PYROI_E_NO_MEMORY);
    }
    k->spec = op_of(op)->spec;
    status = k->spec->create(info, op_of(op)->num_threads, k);
    if (status != NULL) {
        free(k);
        return status;
    }
    *kernel = k;
    return NULL;
}

static OrtStatusPtr ORT_API_CALL op_compute_v2(void *kernel, OrtKernelContext *context)
{
    return pyroi_ort_compute((const pyroi_ort_kernel *)kernel, context);
}

static void ORT_API_CALL op_destroy(void *kernel)
{
    free(kernel);
}

static void op_init(pyroi_ort_op *op, const pyroi_ort_op_spec *spec, int num_threads)
{
    memset(op, 0, sizeof(*op));
    op->spec = spec;
    op->num_threads = num_threads;
    /* version 16+ ops must fill every field: the runtime calls them without checks */
    op->base.version = PYROI_ORT_API_VERSION;
    op->base.GetName = op_name;
    op->base.GetExecutionProviderType = op_provider;
    op->base.GetInputType = op_any_type;
    op->base.GetInputTypeCount = op_input_count;
    op->base.GetOutputType = op_any_type;
    op->base.GetOutputTypeCount = op_output_count;
    op->base.KernelDestroy = op_destroy;
    op->base.GetInputCharacteristic = op_required;
    op->base.GetOutputCharacteristic = op_required;
    op->base.GetInputMemoryType = op_memory;
    op->base.GetVariadicInputMinArity = op_no_variadic;
    op->base.GetVariadicInputHomogeneity = op_no_variadic;
    op->base.GetVariadicOutputMinArity = op_no_variadic;
    op->base.GetVariadicOutputHomogeneity = op_no_variadic;
    op->base.CreateKernelV2 = op_create_kernel_v2;
    op->base.KernelComputeV2 = op_compute_v2;
    op->base.InferOutputShapeFn = op_infer_output;
    op->base.GetStartVersion = op_start_version;
    op->base.GetEndVersion = op_end_version;
    op->base.GetMayInplace = op_no_pairs;
    op->base.ReleaseMayInplace = op_release_pairs;
    op->base.GetAliasMap = op_no_pairs;
    op->base.ReleaseAliasMap = op_release_pairs;
}

/* The session's "pyroi.override_roi_align" entry: "1" registers pyroi's RoiAlign in ONNX's
 * own domain, where the runtime looks for custom kernels before its built-in ones; absent or
 * "0": not. */
static OrtStatus *registration_override(const OrtSessionOptions *options, int *override)
{
    char value[8];
    size_t size = sizeof(value);
    int has = 0;
    OrtStatus *status =
        pyroi_ort_api->HasSessionConfigEntry(options, "pyroi.override_roi_align", &has);
    *override = 0;
    if (status != NULL || !has) {
        return status;
    }
    status = pyroi_ort_api->GetSessionConfigEntry(options, "pyroi.override_roi_align", value,
                                                  &size);
    if (status == NULL && (strcmp(value, "0") == 0 || strcmp(value, "1") == 0)) {
        *override = value[0] == '1';
        return NULL;
    }
    if (status != NULL) {
        pyroi_ort_api->ReleaseStatus(status);
    }
    return pyroi_ort_error(ORT_INVALID_ARGUMENT, "library",
                           "session config pyroi.override_roi_align must be \"0\" or \"1\"");
}

/* The session's "pyroi.num_threads" entry: 0 when absent; an error when not a whole number
 * in [0, 1024]. */
static OrtStatus *registration_threads(const OrtSessionOptions *options, int *num_threads)
{
    char value[32];
    size_t size = sizeof(value);
    int has = 0;
    char *end;
    long parsed;
    OrtStatus *status = pyroi_ort_api->HasSessionConfigEntry(options, "pyroi.num_threads", &has);
    *num_threads = 0;
    if (status != NULL || !has) {
        return status;
    }
    status = pyroi_ort_api->GetSessionConfigEntry(options, "pyroi.num_threads", value, &size);
    if (status != NULL) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, "library",
                               "session config pyroi.num_threads is too long");
    }
    parsed = strtol(value, &end, 10);
    if (end == value || *end != '\0' || parsed < 0 || parsed > 1024) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, "library",
                               "session config pyroi.num_threads must be a whole number in "
                               "[0, 1024] (0: pyroi's choice), got \"%s\"", value);
    }
    *num_threads = (int)parsed;
    return NULL;
}

/* Adds the "pyroi" and "mmcv" domains and their ops to options (and ONNX's own for the
 * override). Each registration owns its
 * ops and domains for the life of the process (sessions made from options refer to them; a
 * few hundred bytes). */
PYROI_ORT_EXPORT OrtStatus *ORT_API_CALL RegisterCustomOps(OrtSessionOptions *options,
                                                         const OrtApiBase *api_base)
{
    const OrtApi *api = api_base != NULL ? api_base->GetApi(PYROI_ORT_API_VERSION) : NULL;
    pyroi_ort_op *ops;
    OrtStatus *status;
    int num_threads, override;
    size_t d, i;
    if (api == NULL) {
        /* no table of ours to make a status with: an older runtime gets NULL and a message */
        return api_base != NULL && api_base->GetApi(1) != NULL
                   ? api_base->GetApi(1)->CreateStatus(
                         ORT_FAIL, "pyroi's custom-op library needs ONNX Runtime 1.21 or later "
                                   "(C API version 21)")
                   : NULL;
    }
    pyroi_ort_api = api;
    status = registration_threads(options, &num_threads);
    if (status == NULL) {
        status = registration_override(options, &override);
    }
    if (status != NULL) {
        return status;
    }
    ops = (pyroi_ort_op *)calloc(OP_COUNT, sizeof(*ops));
    if (ops == NULL) {
        return pyroi_ort_status("library", PYROI_E_NO_MEMORY);
    }
    for (i = 0; i < OP_COUNT; ++i) {
        op_init(&ops[i], OPS[i], num_threads);
    }
    /* a domain once added belongs to the options; on a failure before that it is released
     * (the ops stay allocated: a domain already added may refer to them) */
    for (d = 0; status == NULL && d < (override ? DOMAIN_COUNT : DOMAIN_COUNT - 1); ++d) {
        OrtCustomOpDomain *domain = NULL;
        status = api->CreateCustomOpDomain(DOMAINS[d], &domain);
        for (i = 0; status == NULL && i < OP_COUNT; ++i) {
            if (strcmp(OPS[i]->domain, DOMAINS[d]) == 0) {
                status = api->CustomOpDomain_Add(domain, &ops[i].base);
            }
        }
        if (status == NULL) {
            status = api->AddCustomOpDomain(options, domain);
        } else if (domain != NULL) {
            api->ReleaseCustomOpDomain(domain);
        }
    }
    return status;
}
