/* cmd_models.c: `roofline models`: the embedded models (model/registry.h), their files, sizes,
 * architectures, licences and whether they are installed. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "model/registry.h"

int cli_models(int argc, char **argv) {
    const rf_opt_spec spec = {
        .prog = "roofline models",
        .about = "The embedded models: `-m NAME` (and the bench's local:NAME) names one of them.\n"
                 "scripts/setup.sh installs the default ones, scripts/setup.sh --models all the "
                 "rest.\n",
    };
    int rc = cli_opts("models", &spec, argc, argv);
    if (rc >= 0) return rc;
    rf_model_registry *r = NULL;
    rf_error err = {0};
    if (rf_model_registry_load(&r, &err)) {
        cli_errorf("models", "%s", err.msg);
        return cli_exit_for(err.code);
    }
    printf("models directory: %s\n\n", rf_models_dir());
    for (size_t i = 0; i < rf_model_registry_count(r); i++) {
        const rf_model_entry *e = rf_model_registry_at(r, i);
        bool inst = rf_model_entry_installed(e);
        printf("%-20s %-7s %-6s %-22s %7.1f MB  %s%s\n", e->name, e->arch, e->params, e->quant,
               (double)e->size / 1e6,
               inst ? "installed"
                    : (!strcmp(e->install, "all") ? "not installed (scripts/setup.sh --models all)"
                                                  : "not installed (scripts/setup.sh)"),
               !strcmp(e->name, RF_MODEL_DEFAULT_NAME) ? ", the default" : "");
        printf("%-20s file %s; %s\n%-20s licence: %s\n%-20s from %s\n", "", e->file, e->kind, "",
               e->licence, "", e->source);
    }
    rf_model_registry_free(r);
    return RF_EXIT_OK;
}
