/* cli.c — ganctl's options and actions: --help, --version, --list-plugins, and the
 * default run (configuration, then the backend). Errors are one "ganctl: " line each. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ganctl/ganctl.h>

#include "cli.h"
#include "configuration.h"
#include "error.h"
#include "log.h"
#include "plugin_loader.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

/* One command-line change to the configuration, kept in argv order so that a later
 * --set or --backend wins over an earlier one. */
struct assignment {
    const char *set;              /* --set KEY=VALUE, or NULL */
    const char *backend;          /* --backend NAME, or NULL */
};

struct cli {
    int help, version, list_plugins;
    int backend_chosen;           /* --backend or --set backend.name=… was given */
    const char *config_file;
    const char **plugin_dirs;
    size_t plugin_dir_count;
    struct assignment *assignments;
    size_t assignment_count;
};

static void usage(FILE *out)
{
    fputs("Usage: ganctl [OPTION]...\n"
          "Train a Wasserstein GAN with gradient penalty (WGAN-GP) in full or mixed precision.\n"
          "This build reads the configuration and loads the backend; training is not part of it yet.\n"
          "\n"
          "Actions (without one, ganctl loads the configuration and the backend and reports them):\n"
          "  -h, --help             show this help and exit\n"
          "  -V, --version          show the version and the plugin ABI; with --backend, also\n"
          "                         load that backend and show what it runs on\n"
          "      --list-plugins     list every plugin in the search path, whether it loads,\n"
          "                         and its settings\n"
          "\n"
          "Settings (highest precedence first: these options, --config, $GANCTL_CONFIG,\n"
          "the installed ganctl.conf):\n"
          "      --backend NAME     the compute backend, backend-NAME.so (sets backend.name)\n"
          "  -s, --set KEY=VALUE    set one setting, e.g. --set backend.threads=4; repeatable\n"
          "  -c, --config FILE      read settings from FILE (libconfig syntax)\n"
          "      --plugin-dir DIR   look for plugins in DIR before $GANCTL_PLUGIN_PATH and\n"
          "                         " GAN_PKGLIBDIR "; repeatable\n"
          "\n"
          "Environment: GANCTL_PLUGIN_PATH (colon-separated plugin folders), GANCTL_CONFIG\n"
          "(a configuration file), OPENBLAS_CORETYPE (the cpu backend's OpenBLAS kernel).\n"
          "Exit status: 0 success, 1 a plugin or device failed, 2 usage or configuration error.\n"
          "See ganctl(1), ganctl.conf(5) and ganctl-plugin(7).\n",
          out);
}

static void print_version(void)
{
    printf("ganctl %s (plugin ABI %d.%d)\n", gan_version(), GAN_ABI_MAJOR, GAN_ABI_MINOR);
}

/* The program's log sink: stderr, one prefixed line per message. */
static void stderr_sink(void *ctx, enum gan_log_level level, const char *line)
{
    (void)ctx;
    const char *tag = level == GAN_LOG_ERROR ? "error: "
                    : level == GAN_LOG_WARN  ? "warning: "
                    : level == GAN_LOG_DEBUG ? "debug: " : "";
    fprintf(stderr, "ganctl: %s%s\n", tag, line);
}

static int fail_line(const struct gan_error *err)
{
    fprintf(stderr, "ganctl: %s\n", err->message[0] ? err->message : gan_status_string(err->status));
    return err->status == GAN_ERR_CONFIG ? EXIT_USAGE : EXIT_RUNTIME;
}

/* ------------------------------------------------------------------ options */

enum { OPT_LIST_PLUGINS = 256, OPT_BACKEND, OPT_PLUGIN_DIR };

static const struct option long_options[] = {
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { "list-plugins", no_argument, NULL, OPT_LIST_PLUGINS },
    { "backend", required_argument, NULL, OPT_BACKEND },
    { "plugin-dir", required_argument, NULL, OPT_PLUGIN_DIR },
    { "config", required_argument, NULL, 'c' },
    { "set", required_argument, NULL, 's' },
    { NULL, 0, NULL, 0 },
};

/* Returns 0, or EXIT_USAGE after printing why. */
static int parse_options(struct cli *c, int argc, char **argv)
{
    size_t n = argc > 0 ? (size_t)argc : 1;
    c->plugin_dirs = calloc(n, sizeof *c->plugin_dirs);
    c->assignments = calloc(n, sizeof *c->assignments);
    if (!c->plugin_dirs || !c->assignments) {
        fputs("ganctl: out of memory while reading the options\n", stderr);
        return EXIT_RUNTIME;
    }
    opterr = 0; /* getopt's own messages would name the libtool wrapper, not ganctl */
    int opt;
    while ((opt = getopt_long(argc, argv, ":hVc:s:", long_options, NULL)) != -1) {
        switch (opt) {
        case 'h': c->help = 1; break;
        case 'V': c->version = 1; break;
        case OPT_LIST_PLUGINS: c->list_plugins = 1; break;
        case 'c': c->config_file = optarg; break;
        case OPT_PLUGIN_DIR: c->plugin_dirs[c->plugin_dir_count++] = optarg; break;
        case OPT_BACKEND:
            c->assignments[c->assignment_count++].backend = optarg;
            c->backend_chosen = 1;
            break;
        case 's':
            c->assignments[c->assignment_count++].set = optarg;
            if (strncmp(optarg, "backend.name", 12) == 0 &&
                (optarg[12] == '=' || optarg[12] == ' '))
                c->backend_chosen = 1;
            break;
        case ':':
            fprintf(stderr, "ganctl: option %s needs a value: run ganctl --help for the options\n",
                    argv[optind - 1]);
            return EXIT_USAGE;
        default:
            if (optopt)
                fprintf(stderr, "ganctl: unknown option -%c: run ganctl --help for the options\n",
                        optopt);
            else
                fprintf(stderr, "ganctl: unknown option %s: run ganctl --help for the options\n",
                        argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr,
                "ganctl: unexpected argument \"%s\": ganctl takes only options; run ganctl --help\n",
                argv[optind]);
        return EXIT_USAGE;
    }
    if (c->list_plugins && c->version) {
        fputs("ganctl: --list-plugins and --version are separate actions: give one of them\n",
              stderr);
        return EXIT_USAGE;
    }
    return 0;
}

/* ------------------------------------------------------------------ loading */

static gan_status load_config(const struct cli *c, struct gan_log *log, gan_config **out,
                              struct gan_error *err)
{
    gan_config *cfg;
    gan_status st = gan_config_new(&cfg, err);
    if (st != GAN_OK)
        return st;
    const char *env = getenv("GANCTL_CONFIG");
    struct gan_config_files files = {
        .installed = GAN_SYSCONFDIR "/ganctl.conf",
        .env = env && *env ? env : NULL,
        .file = c->config_file,
    };
    st = gan_config_read_files(cfg, &files, err);
    for (size_t i = 0; st == GAN_OK && i < c->assignment_count; i++) {
        const struct assignment *a = &c->assignments[i];
        if (a->set) {
            st = gan_config_set(cfg, a->set, err);
        } else {
            char origin[512];
            snprintf(origin, sizeof origin, "--backend %s", a->backend);
            st = gan_config_set_string(cfg, "backend.name", a->backend, origin, err);
        }
    }
    const char *level = NULL;
    enum gan_log_level parsed;
    if (st == GAN_OK && gan_config_get_string(cfg, "log.level", &level) == GAN_OK &&
        gan_log_level_parse(level, &parsed) == GAN_OK)
        log->level = parsed;
    if (st != GAN_OK) {
        gan_config_free(cfg);
        return st;
    }
    for (size_t i = 0; i < gan_config_file_count(cfg); i++)
        gan_log_write(log, GAN_LOG_DEBUG, "read %s", gan_config_file_at(cfg, i));
    *out = cfg;
    return GAN_OK;
}

static void log_settings(const gan_config *cfg, const struct gan_log *log)
{
    if (!gan_log_enabled(log, GAN_LOG_DEBUG))
        return;
    for (size_t i = 0; i < gan_config_count(cfg); i++) {
        const struct gan_config_value *v = gan_config_at(cfg, i);
        char text[512];
        gan_config_format_value(v, text, sizeof text);
        gan_log_write(log, GAN_LOG_DEBUG, "%s = %s (%s)", v->key, text, v->origin);
    }
}

static gan_status make_loader(const struct cli *c, const struct gan_log *log, gan_loader **out,
                              struct gan_error *err)
{
    gan_status st = gan_loader_new(out, c->plugin_dirs, c->plugin_dir_count,
                                   getenv("GANCTL_PLUGIN_PATH"), GAN_PKGLIBDIR, err);
    if (st == GAN_OK && gan_log_enabled(log, GAN_LOG_DEBUG))
        for (size_t i = 0; i < gan_loader_dir_count(*out); i++)
            gan_log_write(log, GAN_LOG_DEBUG, "plugin folder %zu: %s", i + 1,
                          gan_loader_dir_at(*out, i));
    return st;
}

/* The selected backend, loaded, its settings checked, and created. */
static gan_status open_backend(const gan_loader *loader, gan_config *cfg, const struct gan_log *log,
                               struct gan_module **module, struct gan_backend_instance **inst,
                               struct gan_error *err)
{
    const char *name = NULL;
    gan_status st = gan_config_get_string(cfg, "backend.name", &name);
    if (st != GAN_OK)
        return gan_error_set(err, GAN_ERR_INTERNAL, "backend.name has no value");
    if ((st = gan_loader_open(loader, GAN_PLUGIN_BACKEND, name, module, err)) != GAN_OK)
        return st;
    char label[300];
    snprintf(label, sizeof label, "backend \"%s\"", name);
    if ((st = gan_config_apply_plugin(cfg, "backend", label, (*module)->plugin.settings, err)) != GAN_OK)
        return st;
    log_settings(cfg, log);
    return gan_backend_instance_new(*module, cfg, log, inst, err);
}

/* ------------------------------------------------------------------ --list-plugins */

static void list_plugins(const gan_loader *loader, const struct gan_plugin_list *list)
{
    printf("Plugin search path:\n");
    for (size_t i = 0; i < gan_loader_dir_count(loader); i++) {
        const char *dir = gan_loader_dir_at(loader, i);
        printf("  %s%s\n", dir, access(dir, F_OK) == 0 ? "" : " (does not exist)");
    }
    if (!list->count) {
        printf("\nNo plugins found: modules are files named KIND-NAME.so in these folders.\n");
        return;
    }
    for (size_t i = 0; i < list->count; i++) {
        const struct gan_plugin_info *p = &list->items[i];
        putchar('\n');
        if (p->shadowed_by) {
            printf("%s %s (shadowed)\n  file:     %s\n  shadowed by %s, found earlier in the search path\n",
                   p->kind, p->name, p->path, p->shadowed_by);
            continue;
        }
        if (p->error) {
            printf("%s %s (does not load)\n  file:     %s\n  error:    %s\n", p->kind, p->name,
                   p->path, p->error);
            continue;
        }
        printf("%s %s %s\n  file:     %s\n", p->kind, p->name, p->version, p->path);
        if (*p->summary)
            printf("  summary:  %s\n", p->summary);
        if (p->is_backend)
            printf("  status:   %s%s%s\n", p->available ? "available (" : "unavailable: ",
                   p->status, p->available ? ")" : "");
        for (size_t s = 0; s < p->setting_count; s++) {
            const struct gan_plugin_setting_info *si = &p->settings[s];
            printf("  setting:  %s, %s", si->name, gan_setting_type_phrase(si->type));
            if (si->default_value)
                printf(", default %s", si->default_value);
            if (*si->summary)
                printf(": %s", si->summary);
            putchar('\n');
        }
    }
}

/* ------------------------------------------------------------------ main */

int gan_cli_main(int argc, char **argv)
{
    struct cli c;
    memset(&c, 0, sizeof c);
    int rc = parse_options(&c, argc, argv);
    if (rc || c.help) {
        if (!rc)
            usage(stdout);
        free(c.plugin_dirs);
        free(c.assignments);
        return rc;
    }
    if (c.version && !c.backend_chosen) {
        print_version();
        free(c.plugin_dirs);
        free(c.assignments);
        return 0;
    }

    struct gan_log log;
    gan_log_init(&log, stderr_sink, NULL);
    struct gan_error err;
    gan_error_clear(&err);
    gan_config *cfg = NULL;
    gan_loader *loader = NULL;
    struct gan_module *module = NULL;
    struct gan_backend_instance *inst = NULL;
    struct gan_plugin_list list = { NULL, 0 };

    if (load_config(&c, &log, &cfg, &err) != GAN_OK ||
        make_loader(&c, &log, &loader, &err) != GAN_OK) {
        rc = fail_line(&err);
        goto done;
    }
    if (c.list_plugins) {
        if (gan_loader_scan(loader, &list, &err) != GAN_OK) {
            rc = fail_line(&err);
            goto done;
        }
        list_plugins(loader, &list);
        goto done;
    }
    if (c.version)
        print_version();
    if (open_backend(loader, cfg, &log, &module, &inst, &err) != GAN_OK) {
        rc = fail_line(&err);
        goto done;
    }
    if (c.version) {
        printf("backend %s %s: %s\n", module->plugin.name,
               module->plugin.version ? module->plugin.version : "",
               gan_backend_instance_describe(inst));
        goto done;
    }
    gan_log_write(&log, GAN_LOG_INFO, "backend %s %s (%s): %s", module->plugin.name,
                  module->plugin.version ? module->plugin.version : "", module->path,
                  gan_backend_instance_describe(inst));
    printf("ganctl: training is not part of this build yet: the configuration is valid and "
           "backend %s loaded; nothing was trained\n", module->plugin.name);

done:
    fflush(stdout);
    gan_plugin_list_clear(&list);
    gan_backend_instance_free(inst);
    gan_module_close(module);
    gan_loader_free(loader);
    gan_config_free(cfg);
    free(c.plugin_dirs);
    free(c.assignments);
    return rc;
}
