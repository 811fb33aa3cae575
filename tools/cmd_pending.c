#include "commands.h"
#include "cli.h"
/* Placeholders until the resource tools land; their real definitions override these. */
__attribute__((weak)) int oc_cmd_inspect(int argc, char **argv) { return cli_usage_error("inspect: not built"); }
__attribute__((weak)) int oc_cmd_devices(int argc, char **argv) { return cli_usage_error("devices: not built"); }
