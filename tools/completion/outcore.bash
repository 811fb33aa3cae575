# bash completion for outcore(1): commands, options, option values and file names.
#
# Commands and options are read from the CLI's own --help when completing, and the names of
# metrics, dtypes, backends, reductions and output formats from `outcore --list`, so they are
# always those of the outcore being completed. Installed as
# share/bash-completion/completions/outcore; to try it from a checkout:
#   source tools/completion/outcore.bash
# tests/cli/test_completion.py checks every value below against what the CLI accepts.

# The synopsis lines and option terms of a help text, one per line: "usage: X" and the indented
# lines under it up to a blank line, and "  -o, --output OUT" up to the description's column.
_outcore_syntax()
{
    printf '%s\n' "$1" | sed -n -e '/^usage: /,/^$/{s/^usage: //;s/^ *//;p;}' -e 's/^ \{1,4\}\(-[^ ].*\)/\1/p' |
        sed 's/  .*//'
}

_outcore_options()
{
    _outcore_syntax "$1" | grep -oE -- '(^|[ [])--?[A-Za-z][A-Za-z0-9-]*' | tr -d ' [' | sort -u
    echo --help
}

# Whether option $2 takes a value in help text $1: "--metric M", "[--plant K]", "-o, --output OUT".
_outcore_takes_value()
{
    _outcore_syntax "$1" | grep -qE -- "(^|[ [])$2(, --?[A-Za-z][A-Za-z0-9-]*)? [^] [|-]"
}

# The command names under "commands:" in `outcore --help`.
_outcore_commands()
{
    "$1" --help 2>/dev/null | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z0-9-]*\)  .*/\1/p'
}

# The words that may come first: the commands, `help` (its line "  help COMMAND" in the same
# help text), --help and --version.
_outcore_first_words()
{
    _outcore_commands "$1"
    "$1" --help 2>/dev/null | sed -n 's/^  \(help\) COMMAND .*/\1/p'
    printf '%s\n' --help --version
}

# Directories and the files whose names end in one of the extensions $2...
_outcore_files()
{
    local cur=$1 ext name
    shift
    COMPREPLY=()
    while IFS= read -r name; do COMPREPLY+=("$name"); done < <(compgen -d -- "$cur")
    for ext in "$@"; do
        while IFS= read -r name; do COMPREPLY+=("$name"); done < <(compgen -f -X "!*.$ext" -- "$cur")
    done
    compopt -o filenames 2>/dev/null
    return 0
}

_outcore_words()
{
    local name
    COMPREPLY=()
    while IFS= read -r name; do COMPREPLY+=("$name"); done < <(compgen -W "$1" -- "$2")
}

_outcore()
{
    local cli=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev=
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    # "--metric=ja" arrives as "--metric" "=" "ja" (= is a word break).
    if [[ $cur == = ]]; then
        cur=
    elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    fi
    [[ $cli == */* ]] || cli=$(type -P "$cli") || return 0

    local command= i
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ ${COMP_WORDS[i]} != -* ]]; then
            command=${COMP_WORDS[i]}
            break
        fi
    done
    if [[ -z $command ]]; then
        _outcore_words "$(_outcore_first_words "$cli")" "$cur"
        return 0
    fi
    # "outcore help COMMAND": one command name.
    if [[ $command == help ]]; then
        COMPREPLY=()
        ((COMP_CWORD == i + 1)) && _outcore_words "$(_outcore_commands "$cli")" "$cur"
        return 0
    fi

    # After "--" every word is an input (outcore map -o C.npy -- '-a * 2' a=A.npy).
    local ended=
    for ((i = i + 1; i < COMP_CWORD; i++)); do
        [[ ${COMP_WORDS[i]} == -- ]] && ended=1
    done
    local help
    help=$("$cli" "$command" --help 2>/dev/null) || return 0
    if [[ -z $ended && $prev == -* ]] && _outcore_takes_value "$help" "$prev"; then
        case $prev in
            --metric) _outcore_words "$("$cli" --list metrics 2>/dev/null)" "$cur" ;;
            --dtype)
                if [[ $command == map ]]; then
                    _outcore_words "$("$cli" --list map-dtypes 2>/dev/null)" "$cur"
                elif [[ $command == matmul ]]; then
                    _outcore_words "$("$cli" --list matmul-dtypes 2>/dev/null)" "$cur"
                else
                    _outcore_words "$("$cli" --list dtypes 2>/dev/null)" "$cur"
                fi
                ;;
            --reduce) _outcore_words "$("$cli" --list map-reductions 2>/dev/null)" "$cur" ;;
            --backend) _outcore_words "$("$cli" --list backends 2>/dev/null)" "$cur" ;;
            --algorithm) _outcore_words "$("$cli" --list algorithms 2>/dev/null)" "$cur" ;;
            --gpu-mem-mode) _outcore_words "$("$cli" --list gpu-mem-modes 2>/dev/null)" "$cur" ;;
            -o | --output)
                local words=" ${COMP_WORDS[*]} " result=dense
                if [[ $command == gram && $words == *" --topk"[\ =]* ]]; then
                    result=topk
                elif [[ $command == gram && $words == *" --threshold"[\ =]* ]]; then
                    result=threshold
                fi
                if [[ $command == gram ]]; then
                    # shellcheck disable=SC2046 # one word per format
                    _outcore_files "$cur" $("$cli" --list "$result-formats" 2>/dev/null)
                else
                    _outcore_files "$cur" npy
                fi
                ;;
            *) COMPREPLY=() ;;  # a number, a size or a name: nothing to offer
        esac
        return 0
    fi
    if [[ -z $ended && $cur == -* ]]; then
        _outcore_words "$(_outcore_options "$help")" "$cur"
        return 0
    fi
    case $command in
        # shellcheck disable=SC2046 # the inputs: one word per format
        gram) _outcore_files "$cur" $("$cli" --list input-formats 2>/dev/null) ;;
        inspect) _outcore_files "$cur" ptx cubin fatbin o so ;;
        map) _outcore_files "$cur" npy ;;  # NAME=FILE.npy: the file part completes after "="
        matmul) _outcore_files "$cur" npy ;;
        # shellcheck disable=SC2046 # the outputs: one word per format
        clean) _outcore_files "$cur" $("$cli" --list output-formats 2>/dev/null) ;;
        *) _outcore_words "$(_outcore_options "$help")" "$cur" ;;
    esac
    return 0
}

complete -F _outcore outcore
