/* llmc runtime C API.
 *
 * Loads a plan file written by the `llmc` compiler and runs it. The API uses opaque handles,
 * returns an llmc_status from every call that can fail, and writes results through `out_`
 * parameters. The runtime depends on neither MLIR nor LLVM.
 *
 * Errors: a NULL llmc_status means success. A non-NULL status is owned by the caller, who reads
 * it with llmc_status_code / llmc_status_message and frees it with llmc_status_free.
 *
 * Threads: a loaded llmc_plan is immutable and may be shared by any number of threads and
 * contexts. An llmc_context is not thread safe: use one context per thread (they may share a plan).
 */
#ifndef LLMC_H
#define LLMC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LLMC_API __attribute__((visibility("default")))

typedef enum llmc_status_code {
  LLMC_OK = 0,
  LLMC_INVALID_ARGUMENT = 1, /* a bad argument: wrong shape, dtype, name or index */
  LLMC_NOT_FOUND = 2,        /* a file or a named tensor does not exist */
  LLMC_INVALID_PLAN = 3,     /* the plan file is truncated, corrupt or inconsistent */
  LLMC_UNSUPPORTED = 4,      /* the plan needs a newer runtime or another target */
  LLMC_RUNTIME_ERROR = 5,    /* a kernel failed while running */
  LLMC_OUT_OF_MEMORY = 6,
} llmc_status_code;

typedef struct llmc_status_t *llmc_status;
typedef struct llmc_plan_t *llmc_plan;
typedef struct llmc_context_t *llmc_context;

/* Element types; the values match those stored in plan files. */
typedef enum llmc_dtype {
  LLMC_DTYPE_F32 = 1,
  LLMC_DTYPE_F16 = 2,
  LLMC_DTYPE_F64 = 3,
  LLMC_DTYPE_I64 = 4,
  LLMC_DTYPE_I32 = 5,
  LLMC_DTYPE_I8 = 6,
  LLMC_DTYPE_U8 = 7,
  LLMC_DTYPE_BOOL = 8, /* one byte per element */
  LLMC_DTYPE_BF16 = 9, /* bfloat16: the upper 16 bits of an IEEE f32 */
} llmc_dtype;

#define LLMC_MAX_RANK 8

/* Describes a tensor. `data` is borrowed: the structure never owns memory. */
typedef struct llmc_tensor {
  llmc_dtype dtype;
  int32_t rank;
  int64_t dims[LLMC_MAX_RANK];
  void *data;
} llmc_tensor;

/* --- status ---------------------------------------------------------------------------- */

/* Thread safe. Returns LLMC_OK for a NULL status. */
LLMC_API llmc_status_code llmc_status_code_of(llmc_status status);
/* Thread safe. The string is owned by the status and lives until llmc_status_free. */
LLMC_API const char *llmc_status_message(llmc_status status);
/* Frees a status; NULL is allowed. */
LLMC_API void llmc_status_free(llmc_status status);

/* Thread safe. A static string such as "0.1.0". */
LLMC_API const char *llmc_version(void);

/* --- plans ----------------------------------------------------------------------------- */

typedef struct llmc_plan_options {
  size_t struct_size;      /* sizeof(llmc_plan_options), for evolution */
  int32_t verify_weights;  /* non-zero: also check the weights checksum (reads every byte) */
} llmc_plan_options;

/* Fills `options` with defaults. */
LLMC_API void llmc_plan_options_init(llmc_plan_options *options);

/* Maps the plan at `path` and verifies its header, checksums and program before returning.
 * `options` may be NULL for defaults. On success *out_plan owns the mapping; release it with
 * llmc_plan_release. Thread safe. */
LLMC_API llmc_status llmc_plan_load(const char *path, const llmc_plan_options *options, llmc_plan *out_plan);

/* Drops the caller's reference. The plan lives on while contexts created from it exist. */
LLMC_API void llmc_plan_release(llmc_plan plan);

/* Thread safe (the plan is immutable). */
LLMC_API int32_t llmc_plan_input_count(llmc_plan plan);
LLMC_API int32_t llmc_plan_output_count(llmc_plan plan);
/* The name (owned by the plan), dtype and shape of input/output `index`; `out_info->data` is NULL.
 * A dynamic dimension reads -1: its size is given per run by the inputs (see the symbols below);
 * an output's actual shape is read with llmc_context_output after a run. */
LLMC_API llmc_status llmc_plan_input_info(llmc_plan plan, int32_t index, const char **out_name,
                                          llmc_tensor *out_info);
LLMC_API llmc_status llmc_plan_output_info(llmc_plan plan, int32_t index, const char **out_name,
                                           llmc_tensor *out_info);
/* Symbolic dimensions (batch, sequence length, ...): a plan compiled with `llmc --max-shape` serves
 * every size from each symbol's minimum (1, or 0 when compiled with `past=0..N`) to its maximum
 * without recompiling. `out_name` is owned by the plan. */
LLMC_API int32_t llmc_plan_symbol_count(llmc_plan plan);
LLMC_API llmc_status llmc_plan_symbol_info(llmc_plan plan, int32_t index, const char **out_name, int64_t *out_max);
/* The symbol that dimension `dim` of input `input` takes its size from, or -1 when it is static. */
LLMC_API llmc_status llmc_plan_input_dim_symbol(llmc_plan plan, int32_t input, int32_t dim, int32_t *out_symbol);
/* The device the plan was built for (llmc --target): LLMC_DEVICE_CPU or LLMC_DEVICE_CUDA. Any plan
 * also runs on the CPU executor, the reference. For a CUDA plan, its architectures ("sm_90a, sm_80"),
 * owned by the plan; "" for a CPU plan. */
LLMC_API int32_t llmc_plan_target(llmc_plan plan);
/* Whether the CUDA executor can run every op of the plan, checked without a device: NULL when it
 * can, else LLMC_UNSUPPORTED listing the ops it cannot run (one line per kind of op). */
LLMC_API llmc_status llmc_plan_check_cuda(llmc_plan plan);
/* The device memory a CUDA context of the plan holds, worked out without a device: the weights,
 * the activations (one arena, planned from the values' lifetimes) and the rest (workspaces);
 * returns their sum (a KV cache kept on the device with llmc_context_link_cache comes on top).
 * 0 when the CUDA executor cannot run the plan or is not there. Any pointer may be NULL. */
LLMC_API size_t llmc_plan_cuda_device_bytes(llmc_plan plan, size_t *weight_bytes, size_t *activation_bytes,
                                            size_t *other_bytes);
/* How the CUDA executor runs a generator's decode steps on the plan (its caches linked with
 * llmc_context_link_cache), worked out without a device: a line on whether one CUDA graph is
 * replayed for every cache length, or why each length is captured again, and a line on how many
 * of its linears run on llmc's GEMV kernel rather than cuBLASLt. Written to `out` (NUL-
 * terminated, cut to `capacity` bytes; `out` may be NULL when `capacity` is 0); returns the full
 * length, 0 when the CUDA executor is not there. */
LLMC_API size_t llmc_plan_cuda_graph_report(llmc_plan plan, char *out, size_t capacity);
LLMC_API const char *llmc_plan_cuda_archs(llmc_plan plan);
/* Number of kernel launches in the program. */
LLMC_API int32_t llmc_plan_kernel_count(llmc_plan plan);

/* --- execution contexts ------------------------------------------------------------------ */

typedef enum llmc_device { LLMC_DEVICE_CPU = 0, LLMC_DEVICE_CUDA = 1 } llmc_device;

typedef struct llmc_context_options {
  size_t struct_size;    /* sizeof(llmc_context_options) */
  int32_t num_threads;   /* threads for GEMMs; 0 = the library default */
  int32_t collect_times; /* non-zero: time every kernel launch (see llmc_context_kernel_time) */
  int32_t device;        /* llmc_device: where the context runs (CUDA: the current CUDA device, through
                            libllmc_cuda.so beside libllmc; work in progress, see docs/cuda.md) */
  int32_t cuda_graphs;   /* CUDA: non-zero (the default) captures the launches of each input shape
                            once as a CUDA graph and replays it; 0 launches every kernel every run */
  int32_t cuda_gemv;     /* CUDA: non-zero (the default) runs the linears of 1 to 8 rows (decode
                            steps) whose weights are [N, K] (llmc's CUDA plans) on llmc's own
                            kernel; 0 runs every linear on cuBLASLt (for comparison) */
  int32_t cuda_overlap;  /* CUDA, compute capability 9.0 and newer: non-zero (the default) launches
                            a decode step's GEMV, QKV split and attention kernels so that each
                            starts while the kernel before it finishes (programmatic dependent
                            launch; the GEMV loads its first weights meanwhile); 0 starts each
                            when the one before has ended (for comparison) */
  int32_t decode_ahead;  /* generators, greedy decoding (llmc_generator_generate): 1 starts each
                            decode step before the host has the previous step's token, which goes
                            from that step's argmax to the next step's input on the device, so that
                            the host's work between steps overlaps the device's (the step after the
                            last token is computed for nothing); 0 waits for each token; -1 (the
                            default): 1 on CUDA, 0 on the CPU (where a run is done when it returns) */
} llmc_context_options;

LLMC_API void llmc_context_options_init(llmc_context_options *options);

/* Creates a context holding its own activation and output buffers. The context keeps the plan
 * alive. Thread safe with respect to the plan; the new context belongs to the caller. */
LLMC_API llmc_status llmc_context_create(llmc_plan plan, const llmc_context_options *options,
                                         llmc_context *out_context);
LLMC_API void llmc_context_release(llmc_context context);
/* Device memory the context holds (weights, activations, workspaces); 0 for a CPU context. */
LLMC_API size_t llmc_context_device_bytes(llmc_context context);
/* How many times the context captured a CUDA graph (graphs on): once per input shape it ran with,
 * and, with its caches linked, once for all the decode steps where the plan allows (llmc-run
 * --check-cuda says whether it does); a replayed graph is not captured again. 0 on the CPU. */
LLMC_API size_t llmc_context_cuda_graph_count(llmc_context context);
/* The nodes (kernel launches and memory operations) of the CUDA graph that every decode step
 * replays (one graph for every cache length), once the context has captured it; before that, of
 * the graph it captured last. 0 when none was captured. */
LLMC_API size_t llmc_context_cuda_graph_nodes(llmc_context context);
/* A KV cache kept on the GPU (CUDA contexts): `output` (a present cache [length, batch, width])
 * stays in device memory, and `input` (its past) reads the first rows the previous run left
 * there, so no cache crosses the bus between steps. After this call set_input/bind_input of
 * `input` give only its shape (data may be NULL), and the output's host buffer is no longer
 * written. Call before the first run. On a CPU context: LLMC_UNSUPPORTED (bind one host buffer to
 * both instead, as the generator does). */
LLMC_API llmc_status llmc_context_link_cache(llmc_context context, int32_t input, int32_t output);

/* Copies `tensor` into input `index`. Its dtype and shape must match the plan's input exactly. */
LLMC_API llmc_status llmc_context_set_input(llmc_context context, int32_t index, const llmc_tensor *tensor);
/* Looks up an input index by name. */
/* Like llmc_context_set_input, but the context reads the caller's memory instead of a copy: it
 * must stay valid and unchanged until the runs that use it are done (or the input is set again). */
LLMC_API llmc_status llmc_context_bind_input(llmc_context context, int32_t index, const llmc_tensor *tensor);
/* Makes output `index` be written into the caller's `data`, which must hold `capacity` bytes, at
 * least the output's largest size within the plan's bounds (llmc_context_output_capacity). With
 * an output bound to the memory of an input that a concatenation extends (a KV cache, batch 1),
 * the run appends in place. */
LLMC_API llmc_status llmc_context_bind_output(llmc_context context, int32_t index, void *data, size_t capacity);
LLMC_API size_t llmc_context_output_capacity(llmc_context context, int32_t index);
LLMC_API llmc_status llmc_context_input_index(llmc_context context, const char *name, int32_t *out_index);

/* Runs the program. Every input must have been set. */
LLMC_API llmc_status llmc_context_run(llmc_context context);

/* Describes output `index`; out_tensor->data points into the context and stays valid until the
 * next llmc_context_run or llmc_context_release. */
LLMC_API llmc_status llmc_context_output(llmc_context context, int32_t index, llmc_tensor *out_tensor);

/* With collect_times set: the kernel name and ONNX node (both owned by the plan) of launch
 * `index` (0 <= index < llmc_plan_kernel_count) and its total time in milliseconds over all runs
 * so far. Not thread safe with a concurrent run of the same context. */
LLMC_API llmc_status llmc_context_kernel_time(llmc_context context, int32_t index, const char **out_kernel,
                                             const char **out_node, double *out_total_ms);

/* --- tokenizer --------------------------------------------------------------------------
 * A plan compiled with `llmc --tokenizer tokenizer.json` carries its byte-level BPE tokenizer
 * (GPT-2, Llama 3, SmolLM2 families): the same ids as Hugging Face `tokenizers`. Thread safe. */
LLMC_API int32_t llmc_plan_has_tokenizer(llmc_plan plan);
LLMC_API int32_t llmc_plan_vocab_size(llmc_plan plan); /* 0 without a tokenizer */
/* Token ids of `length` bytes of UTF-8 `text`. `*out_count` is set to the number of ids the text
 * has; when `capacity` is smaller (or `ids` is NULL) nothing is written and, if `ids` is not NULL,
 * the status says so (LLMC_INVALID_ARGUMENT): call again with a larger buffer. */
LLMC_API llmc_status llmc_tokenize(llmc_plan plan, const char *text, size_t length, int32_t *ids, int32_t capacity,
                                   int32_t *out_count);
/* The UTF-8 text of `count` ids into `text` (not NUL-terminated), `*out_length` its length in
 * bytes; the same buffer protocol as llmc_tokenize. An id outside the vocabulary is an error. */
LLMC_API llmc_status llmc_detokenize(llmc_plan plan, const int32_t *ids, int32_t count, char *text, size_t capacity,
                                     size_t *out_length);

/* --- generation -------------------------------------------------------------------------
 * A generator runs a decoder plan exported in the Hugging Face past/present form (inputs
 * `input_ids`, optional `attention_mask` and `position_ids`, `past_key_values.{i}.key/.value`;
 * outputs `logits`, `present.{i}.key/.value`), compiled with a bound on the past length
 * (`llmc --max-shape past=0..N`): it owns the KV cache, feeds prompt tokens in chunks (prefill)
 * and single tokens (decode), and samples, for one sequence or a batch of them (which may have
 * different lengths: padding is masked). One generator per thread. */
typedef struct llmc_generator_t *llmc_generator;

typedef struct llmc_sampling {
  size_t struct_size;       /* sizeof(llmc_sampling) */
  float temperature;        /* 0: greedy (argmax) */
  int32_t top_k;            /* keep the k most likely tokens; 0: all */
  float top_p;              /* keep the smallest set with this much probability; 1: all */
  float repetition_penalty; /* > 1 makes tokens already in the context less likely; 1: off */
  uint64_t seed;            /* for the random draws (temperature > 0) */
} llmc_sampling;

LLMC_API void llmc_sampling_init(llmc_sampling *sampling); /* greedy, no penalty, seed 0 */
LLMC_API llmc_status llmc_generator_create(llmc_plan plan, const llmc_context_options *options,
                                           llmc_generator *out_generator); /* batch 1 */
LLMC_API llmc_status llmc_generator_create_batch(llmc_plan plan, const llmc_context_options *options, int32_t batch,
                                                 llmc_generator *out_generator);
LLMC_API int32_t llmc_generator_batch(llmc_generator generator);
LLMC_API void llmc_generator_release(llmc_generator generator);
/* Empties the context: the next feed starts a new sequence. */
LLMC_API void llmc_generator_reset(llmc_generator generator);
/* Runs the model over `count` more tokens (the prompt, or the token just sampled) and keeps the
 * logits of the last one. Fails without changing the context when a token is outside the
 * vocabulary or the context would exceed its capacity. */
LLMC_API llmc_status llmc_generator_feed(llmc_generator generator, const int32_t *tokens, int32_t count);
/* The same for a batch: sequence b gets counts[b] tokens tokens[b][0..counts[b]) (0 to skip it).
 * Shorter lists are padded in front; the padding is masked, so each sequence sees only its own. */
LLMC_API llmc_status llmc_generator_feed_batch(llmc_generator generator, const int32_t *const *tokens,
                                               const int32_t *counts);
/* The logits after the last feed, [batch, vocab] (owned by the generator, valid until the next
 * feed); a sequence that got no tokens in a feed keeps its earlier row. */
LLMC_API llmc_status llmc_generator_logits(llmc_generator generator, const float **out_logits, int32_t *out_vocab);
/* Draws the next token from the last logits (it is not fed: feed it to continue). */
LLMC_API llmc_status llmc_generator_sample(llmc_generator generator, const llmc_sampling *sampling,
                                           int32_t *out_token);
LLMC_API llmc_status llmc_generator_sample_batch(llmc_generator generator, const llmc_sampling *sampling,
                                                 int32_t *out_tokens); /* one per sequence */
/* The whole loop for one sequence (batch 1): after the prompt was fed, samples and feeds up to
 * `max_tokens` tokens, stopping after a token in `stop_ids` (which is not fed or counted), when
 * the context is full, or when `on_token` (optional; called with each token as it comes, for
 * streaming) returns non-zero. `out_tokens` (capacity `max_tokens`, may be NULL) receives them and
 * `*out_count` their number. */
typedef int (*llmc_token_callback)(int32_t token, void *user_data);
LLMC_API llmc_status llmc_generator_generate(llmc_generator generator, const llmc_sampling *sampling,
                                             int32_t max_tokens, const int32_t *stop_ids, int32_t stop_count,
                                             llmc_token_callback on_token, void *user_data, int32_t *out_tokens,
                                             int32_t *out_count);
LLMC_API int32_t llmc_generator_length(llmc_generator generator);   /* cache slots used (padding included) */
LLMC_API int32_t llmc_generator_capacity(llmc_generator generator); /* the most it can hold */
/* The context the generator runs its plan in (owned by the generator): for
 * llmc_context_device_bytes and llmc_context_cuda_graph_count. Its outputs are not the way to the
 * logits (greedy decoding may leave them on the device): llmc_generator_logits is. */
LLMC_API llmc_context llmc_generator_context(llmc_generator generator);

#ifdef __cplusplus
}
#endif

#endif /* LLMC_H */
