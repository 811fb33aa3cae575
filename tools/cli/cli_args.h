/*
 * cli_args.h - the walk over a command's arguments: options, their values and positional
 * arguments in order, and the usage error of an unknown option naming the nearest one.
 */
#ifndef OC_TOOLS_CLI_ARGS_H
#define OC_TOOLS_CLI_ARGS_H

/* A command's arguments, walked in order by cli_next. "--" ends the options: every argument
 * after it is positional, even one that starts with '-' (a map expression such as -a * 2).
 * An option that takes a value may be given once (cli_take refuses a second one naming it),
 * unless it is taken with CLI_REPEATS (map's --set); a flag given twice is the same as once. */
#define CLI_MAX_SEEN 32
#define CLI_MAX_TRIED 64
typedef struct cli_args {
    int argc;
    char **argv;                    /* argv[0] is the command's name */
    int i;                          /* the argument cli_next returned last */
    int options_done;               /* "--" was seen */
    const char *value;              /* the value of the option cli_take matched last */
    const char *seen[CLI_MAX_SEEN]; /* the specs of the value options given so far */
    int nseen;
    /* The specs the current argument was tried against (cli_flag, cli_take), so that an
     * unknown option can name the nearest: the command's options, without a list to keep. */
    const char *tried[CLI_MAX_TRIED];
    unsigned char tried_value[CLI_MAX_TRIED]; /* 1: tried by cli_take (the option takes a value) */
    int ntried;
} cli_args;

#define CLI_ARGS_INIT(argc, argv)      \
    {                                  \
        .argc = (argc), .argv = (argv) \
    }
#define CLI_REPEATS 1

/* The next argument (skipping the "--" that ends the options), or NULL after the last. */
const char *cli_next(cli_args *a);
/* Whether the argument cli_next returned is positional: after "--", "-" alone, or not
 * starting with '-'. */
int cli_positional(const cli_args *a);
/* Whether the argument is the flag spec names ("--quiet|-q": the forms, '|' apart). */
int cli_flag(cli_args *a, const char *spec);
/* Matches an option with a value, "NAME VALUE" or "--name=VALUE", in any form of spec:
 * 1 when matched (value in a->value), 0 when the argument is another option, -1 when the
 * value is missing or the option was given before without CLI_REPEATS (after printing the
 * usage error). flags: 0 or CLI_REPEATS. */
int cli_take(cli_args *a, const char *spec, int flags);
/* The usage error of an argument that starts with '-' and is no option of the command: it
 * names the nearest option the argument was tried against when one is near ("--bandwith":
 * --bandwidth; "-oe.npy": -o e.npy), else, for a command that takes positional arguments
 * (positionals != 0), says that such an argument goes after "--". Returns 2. */
int cli_unknown_option(const cli_args *a, int positionals);

/* In a command's argument loop: whether the current argument is option spec with a value,
 * which it puts in v (the match's result in r: -1 means the usage error was printed). */
#define CLI_OPTION(args, r, v, spec) (((r) = cli_take((args), (spec), 0)) != 0 && ((v) = (args)->value, 1))

#endif
