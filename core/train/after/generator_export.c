/* SPDX-License-Identifier: MIT */
/* generator_export.c — a run's generator as the torch.nn.Sequential of the same layers:
 * the module list for the metadata and each parameter under the Sequential's key. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "io/safetensors/safetensors.h"
#include "train/after/generator_export.h"

/* One parameter of the net under its Sequential key. */
struct export_tensor {
    char key[48];
    size_t index;                 /* in the generator's net */
};

/* The module list being built, and the keys of the parameters it takes. */
struct layout {
    json_t *layers;
    size_t modules;
    struct export_tensor tensors[256];
    size_t tensors_used;
    const char *missing;          /* a parameter the model should have but has not */
};

/* The index of parameter `name` in `net`, or SIZE_MAX. */
static size_t find_param(gan_net *net, const char *name)
{
    for (size_t i = 0; i < gan_net_count(net); i++)
        if (strcmp(gan_net_name(net, i), name) == 0)
            return i;
    return SIZE_MAX;
}

static int64_t param_dim(gan_net *net, size_t i, int axis)
{
    return gan_tensor_dim(gan_net_tensor(net, i), axis);
}

/* Appends module torch.nn.`name`(*args) (args is taken), and maps the listed parameters
 * of the net ("fc0" → fc0.weight, fc0.bias) to its keys. */
static void add_module(struct layout *L, gan_net *net, const char *name, json_t *args,
                       const char *param_prefix)
{
    json_array_append_new(L->layers, json_pack("[s, o]", name, args ? args : json_array()));
    if (param_prefix) {
        static const char *const parts[] = { "weight", "bias" };
        for (int p = 0; p < 2; p++) {
            char pname[64];
            snprintf(pname, sizeof pname, "%s.%s", param_prefix, parts[p]);
            size_t i = find_param(net, pname);
            if (i == SIZE_MAX) {
                L->missing = L->missing ? L->missing : "a layer's weight or bias";
                continue;
            }
            if (L->tensors_used < sizeof L->tensors / sizeof L->tensors[0]) {
                struct export_tensor *t = &L->tensors[L->tensors_used++];
                snprintf(t->key, sizeof t->key, "%zu.%s", L->modules, parts[p]);
                t->index = i;
            }
        }
    }
    L->modules++;
}

/* A config value with a fallback (the model's default). */
static const char *setting_string(const gan_config *cfg, const char *key, const char *fallback)
{
    const char *v = NULL;
    return gan_config_get_string(cfg, key, &v) == GAN_OK && v ? v : fallback;
}

static double setting_float(const gan_config *cfg, const char *key, double fallback)
{
    double v;
    long long i;
    if (gan_config_get_float(cfg, key, &v) == GAN_OK)
        return v;
    return gan_config_get_int(cfg, key, &i) == GAN_OK ? (double)i : fallback;
}

/* A final reshape to the sample's shape, when the net's last layer gives [B, n]. */
static void add_unflatten(struct layout *L, gan_net *net, const struct gan_session_settings *set)
{
    json_t *shape = json_array();
    for (int d = 0; d < set->sample_ndim; d++)
        json_array_append_new(shape, json_integer(set->sample_dims[d]));
    add_module(L, net, "Unflatten", json_pack("[i, o]", 1, shape), NULL);
}

/* mlp.c: fc0 … fcD, the activation after each but the last. */
static gan_status layout_mlp(struct layout *L, gan_net *net, const gan_config *cfg,
                             const struct gan_session_settings *set, struct gan_error *err)
{
    const char *act = setting_string(cfg, "generator.model.activation", "relu");
    double slope = setting_float(cfg, "generator.model.leaky_slope", 0.2);
    size_t layers = 0;
    char name[32];
    for (;; layers++) {
        snprintf(name, sizeof name, "fc%zu.weight", layers);
        if (find_param(net, name) == SIZE_MAX)
            break;
    }
    if (layers == 0)
        return gan_error_set(err, GAN_ERR_FORMAT, "the mlp generator has no fc0.weight");
    for (size_t i = 0; i < layers; i++) {
        snprintf(name, sizeof name, "fc%zu.weight", i);
        size_t w = find_param(net, name);
        snprintf(name, sizeof name, "fc%zu", i);
        add_module(L, net, "Linear", json_pack("[I, I]", (json_int_t)param_dim(net, w, 1),
                                               (json_int_t)param_dim(net, w, 0)), name);
        if (i + 1 == layers)
            break;
        if (strcmp(act, "leaky_relu") == 0)
            add_module(L, net, "LeakyReLU", json_pack("[f]", slope), NULL);
        else if (strcmp(act, "tanh") == 0)
            add_module(L, net, "Tanh", NULL, NULL);
        else
            add_module(L, net, "ReLU", NULL, NULL);
    }
    if (!(set->sample_ndim == 1))
        add_unflatten(L, net, set);
    return GAN_OK;
}

/* dcgan.c: fc0, ReLU, the reshape to the smallest feature map, then each deconvJ (with
 * normJ and a ReLU but after the last), the output activation. */
static gan_status layout_dcgan(struct layout *L, gan_net *net, const gan_config *cfg,
                               const struct gan_session_settings *set, struct gan_error *err)
{
    size_t fc = find_param(net, "fc0.weight");
    if (fc == SIZE_MAX || set->sample_ndim != 3)
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "the dcgan generator has no fc0.weight or its images are not C×H×W");
    int depth = 0;
    char name[32];
    for (;; depth++) {
        snprintf(name, sizeof name, "deconv%d.weight", depth);
        if (find_param(net, name) == SIZE_MAX)
            break;
    }
    /* The sizes down the critic's path (dcgan.c: s → floor((s − 1)/2) + 1), which the
     * generator retraces upwards with an output padding of (target − 1) mod 2. */
    int64_t hs[16], ws[16];
    hs[0] = set->sample_dims[1];
    ws[0] = set->sample_dims[2];
    for (int i = 1; i <= depth && i < 16; i++) {
        hs[i] = (hs[i - 1] - 1) / 2 + 1;
        ws[i] = (ws[i - 1] - 1) / 2 + 1;
    }
    if (depth < 1 || depth >= 16)
        return gan_error_set(err, GAN_ERR_FORMAT, "the dcgan generator has %d deconvolutions", depth);
    snprintf(name, sizeof name, "deconv0.weight");
    int64_t top_c = param_dim(net, find_param(net, name), 0);
    add_module(L, net, "Linear", json_pack("[I, I]", (json_int_t)param_dim(net, fc, 1),
                                           (json_int_t)param_dim(net, fc, 0)), "fc0");
    add_module(L, net, "ReLU", NULL, NULL);
    add_module(L, net, "Unflatten", json_pack("[i, [I, I, I]]", 1, (json_int_t)top_c,
                                              (json_int_t)hs[depth], (json_int_t)ws[depth]), NULL);
    for (int j = 0; j < depth; j++) {
        snprintf(name, sizeof name, "deconv%d.weight", j);
        size_t w = find_param(net, name);
        int to = depth - j - 1;
        int64_t c_out = param_dim(net, w, 1);
        snprintf(name, sizeof name, "deconv%d", j);
        add_module(L, net, "ConvTranspose2d",
                   json_pack("[I, I, i, i, i, [I, I]]", (json_int_t)param_dim(net, w, 0),
                             (json_int_t)c_out, 5, 2, 2, (json_int_t)((hs[to] - 1) % 2),
                             (json_int_t)((ws[to] - 1) % 2)), name);
        if (j == depth - 1)
            break;
        snprintf(name, sizeof name, "norm%d.weight", j);
        if (find_param(net, name) != SIZE_MAX) {
            snprintf(name, sizeof name, "norm%d", j);
            add_module(L, net, "GroupNorm", json_pack("[i, I, f]", 1, (json_int_t)c_out, 1e-5),
                       name);
        }
        add_module(L, net, "ReLU", NULL, NULL);
    }
    const char *output = setting_string(cfg, "generator.model.output", "tanh");
    if (strcmp(output, "tanh") == 0)
        add_module(L, net, "Tanh", NULL, NULL);
    else if (strcmp(output, "sigmoid") == 0)
        add_module(L, net, "Sigmoid", NULL, NULL);
    return GAN_OK;
}

static char *shape_json(const struct gan_session_settings *set)
{
    json_t *a = json_array();
    for (int d = 0; d < set->sample_ndim; d++)
        json_array_append_new(a, json_integer(set->sample_dims[d]));
    char *text = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return text;
}

gan_status gan_generator_export(gan_generator_run *g, const char *path,
                                struct gan_export_report *report, struct gan_error *err)
{
    memset(report, 0, sizeof *report);
    if (gan_generator_run_is_checkpoint(g, path))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "--out %s is the run's checkpoint; write the export to another file",
                             path);
    gan_session *s = gan_generator_run_session(g);
    const gan_config *cfg = gan_generator_run_config(g);
    gan_net *net = s->net[GAN_NET_GENERATOR];
    const char *model = setting_string(cfg, "generator.model.name", "mlp");
    struct layout L;
    memset(&L, 0, sizeof L);
    if (!(L.layers = json_array()))
        return gan_error_nomem(err, path);
    gan_status st;
    if (strcmp(model, "mlp") == 0)
        st = layout_mlp(&L, net, cfg, &s->set, err);
    else if (strcmp(model, "dcgan") == 0)
        st = layout_dcgan(&L, net, cfg, &s->set, err);
    else
        st = gan_error_set(err, GAN_ERR_CONFIG,
                           "%s: the generator's model is \"%s\"; ganctl export knows the layers of the shipped models mlp and dcgan only",
                           gan_generator_run_checkpoint(g), model);
    if (st == GAN_OK && (L.missing || L.tensors_used != gan_net_count(net)))
        st = gan_error_set(err, GAN_ERR_FORMAT,
                           "%s: the %s generator's %zu parameters do not match the layers ganctl export knows (%zu mapped)",
                           gan_generator_run_checkpoint(g), model, gan_net_count(net),
                           L.tensors_used);
    int64_t total = gan_net_total(net);
    float *host = st == GAN_OK ? malloc((size_t)total * sizeof *host) : NULL;
    if (st == GAN_OK && !host)
        st = gan_error_nomem(err, path);
    gan_st_writer *w = st == GAN_OK ? gan_st_writer_new() : NULL;
    if (st == GAN_OK && !w)
        st = gan_error_nomem(err, path);
    char msg[768];
    for (size_t k = 0; st == GAN_OK && k < L.tensors_used; k++) {
        size_t i = L.tensors[k].index;
        gan_tensor *t = gan_net_tensor(net, i);
        float *at = host + gan_net_offset(net, i);
        size_t n = (size_t)gan_net_numel(net, i);
        uint64_t shape[8];
        int nd = gan_tensor_ndim(t);
        for (int d = 0; d < nd && d < 8; d++)
            shape[d] = (uint64_t)gan_tensor_dim(t, d);
        if (gan_tensor_to_host(s->ctx, t, at, n) != GAN_OK)
            st = gan_session_ctx_fail(s, err, "reading the generator's parameters");
        else if (gan_st_writer_add(w, L.tensors[k].key, GAN_ST_F32, nd, shape, at,
                                   n * sizeof *at, msg, sizeof msg) != GAN_OK)
            st = gan_error_set(err, GAN_ERR_INVALID, "%s", msg);
    }
    char *layers = st == GAN_OK ? json_dumps(L.layers, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    char *shape = st == GAN_OK ? shape_json(&s->set) : NULL;
    char z_dim[32], iteration[32];
    snprintf(z_dim, sizeof z_dim, "%lld", (long long)s->set.z_dim);
    snprintf(iteration, sizeof iteration, "%lld", (long long)gan_generator_run_iteration(g));
    if (st == GAN_OK && (!layers || !shape))
        st = gan_error_nomem(err, path);
    const struct { const char *key, *value; } meta[] = {
        { "format", GAN_EXPORT_FORMAT }, { "format_version", GAN_EXPORT_VERSION },
        { "ganctl_version", PACKAGE_VERSION }, { "torch_layers", layers },
        { "z_dim", z_dim }, { "sample_shape", shape }, { "model", model },
        { "iteration", iteration }, { "precision", gan_session_precision_name(s) },
        { "config", gan_generator_run_config_text(g) },
    };
    for (size_t i = 0; st == GAN_OK && i < sizeof meta / sizeof meta[0]; i++)
        if (gan_st_writer_set_metadata(w, meta[i].key, meta[i].value, msg, sizeof msg) != GAN_OK)
            st = gan_error_set(err, GAN_ERR_INVALID, "%s", msg);
    if (st == GAN_OK && (st = gan_st_writer_write(w, path, msg, sizeof msg)) != GAN_OK)
        gan_error_set(err, st, "%s", msg);
    if (st == GAN_OK) {
        report->tensors = L.tensors_used;
        report->modules = L.modules;
        report->parameters = total;
    }
    free(layers);
    free(shape);
    gan_st_writer_free(w);
    free(host);
    json_decref(L.layers);
    return st;
}
