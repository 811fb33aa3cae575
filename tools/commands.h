/* commands.h - the subcommands of the outcore CLI. Each takes argv with argv[0] = its name
 * and returns the process exit status: 0 ok, 2 bad input or usage, 1 other failures. */
#ifndef OC_TOOLS_COMMANDS_H
#define OC_TOOLS_COMMANDS_H

int oc_cmd_gram(int argc, char **argv);
int oc_cmd_gen(int argc, char **argv);
int oc_cmd_demo(int argc, char **argv);
int oc_cmd_inspect(int argc, char **argv);
int oc_cmd_devices(int argc, char **argv);
int oc_cmd_map(int argc, char **argv);
int oc_cmd_matmul(int argc, char **argv);
int oc_cmd_clean(int argc, char **argv);

#endif
