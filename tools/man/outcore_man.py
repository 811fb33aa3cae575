#!/usr/bin/env python3
"""Writes the man page outcore(1) from what the CLI prints for --help.

    outcore_man.py --cli build/outcore --version 0.1.0 -o build/outcore.1

The help texts in tools/cmd_*.c and tools/main.c are the one source: this script runs
`outcore --help`, reads the command list from its "commands:" block, runs
`outcore <command> --help` for each, and turns every text into one section of the page.
Nothing it writes is typed in here except the page's frame (NAME, the section names, SEE ALSO),
so the page says what --help says; tests/cli/test_man_page.py renders it with groff and checks
that every help line is there, in order.

How a help text is read (the form every command's text already has):
  "usage: ..." and the indented lines under it                 -> the synopsis, verbatim
  "  -o, --output OUT     description" and its deeper-indented
  continuation lines; "  name      description" in a list       -> a tagged paragraph (.TP)
  "heading:" alone on a line                                    -> a subsection
  any other line                                                -> running text, blank line = new paragraph
A description's lines are filled as running text is, but a list of the option's choices
("auto (default), cpu, cuda") ends its line, as in --help (.br).
"""
import argparse
import os
import re
import subprocess
import sys

ITEM = re.compile(r"^ {1,4}(\S.*?)(?: {2,}(\S.*))?$")
HEADING = re.compile(r"^([A-Za-z][\w ]*):$")
# A description line that lists an option's choices, as the CLI prints the library's names
# ("auto (default), cpu, cuda"; "bool, int8, ..., uint64," when the list goes on, the line after
# it ending it): its own line in --help, the description going on under it.
_CHOICE = r"[\w.+-]+(?: \(default\))?"
CHOICES = re.compile(rf"^{_CHOICE}(?:, {_CHOICE})*,?$")


def help_text(cli, *args):
    proc = subprocess.run([cli, *args, "--help"], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"outcore_man.py: `{cli} {' '.join(args)} --help` exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def roff_escape(text):
    """Text as roff prints it literally: backslashes, minus signs, and control characters at the
    start of a line."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def roff_term(term):
    """An option or command name in bold, its value placeholders (OUT, SIZE|PCT) in italics."""
    words = []
    for word in term.split(" "):
        bare = word.rstrip(",")
        if bare.startswith("-") or re.fullmatch(r"[a-z][a-z0-9-]*", bare):
            words.append("\\fB" + roff_escape(bare) + "\\fR" + word[len(bare):])
        elif re.fullmatch(r"[A-Z][A-Z0-9_|.\[\]]*", bare):
            words.append("\\fI" + roff_escape(bare) + "\\fR" + word[len(bare):])
        else:
            words.append(roff_escape(word))
    return " ".join(words)


def parse(text):
    """Splits a help text into blocks: ("synopsis", [lines]), ("para", [lines]),
    ("heading", title), ("item", term, [description lines])."""
    blocks = []
    lines = text.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("usage: "):
            # Further forms ("       outcore gram ...") and wrapped options ("   [--json]") follow,
            # indented, up to a blank line; "usage: " is dropped and the alignment kept.
            synopsis = [line[len("usage: "):]]
            i += 1
            while i < len(lines) and lines[i].startswith(" ") and lines[i].strip():
                synopsis.append(lines[i][len("usage: "):] if lines[i].startswith(" " * 7) else lines[i].strip())
                i += 1
            blocks.append(("synopsis", synopsis))
            continue
        if not line.strip():
            blocks.append(("break",))
            i += 1
            continue
        heading = HEADING.match(line)
        if heading:
            blocks.append(("heading", heading.group(1)))
            i += 1
            continue
        item = ITEM.match(line)
        if item:
            term, first = item.group(1), item.group(2)
            description = [first] if first else []
            indent = len(line) - len(line.lstrip(" "))
            i += 1
            # Continuation lines are indented deeper than the term and are not items themselves.
            while i < len(lines) and len(lines[i]) - len(lines[i].lstrip(" ")) > indent + 2:
                description.append(lines[i].strip())
                i += 1
            blocks.append(("item", term, description))
            continue
        if blocks and blocks[-1][0] == "para":
            blocks[-1][1].append(line)
        else:
            blocks.append(("para", [line]))
        i += 1
    return blocks


def ends_choices(line):
    """Whether a description line is (the end of) a list of choices: a list of two names or
    more, or of one marked "(default)", that does not go on to the next line."""
    return bool(CHOICES.match(line)) and not line.endswith(",") and ("," in line or "(default)" in line)


def render(blocks, out):
    """Appends the roff of one help text's blocks to the list out."""
    for block in blocks:
        kind = block[0]
        if kind == "synopsis":
            out += [".PP", ".nf"] + [roff_escape(line) for line in block[1]] + [".fi"]
        elif kind == "break":
            continue
        elif kind == "heading":
            out += [".SS " + roff_escape(block[1].capitalize())]
        elif kind == "item":
            out += [".TP", roff_term(block[1])]
            lines = block[2]
            for k, line in enumerate(lines):
                out.append(roff_escape(line))
                if k + 1 < len(lines) and ends_choices(line):
                    out.append(".br")
            if not lines:
                out.append("\\&")
        else:
            out += [".PP"] + [roff_escape(line) for line in block[1]]


def commands_of(blocks):
    """The command names listed under the top-level help's "commands:" heading."""
    names, listing = [], False
    for block in blocks:
        if block[0] == "heading":
            listing = block[1] == "commands"
        elif block[0] == "item" and listing:
            names.append(block[1])
        else:
            listing = False
    return names


def man_page(cli, version):
    main_blocks = parse(help_text(cli))
    commands = commands_of(main_blocks)
    if not commands:
        sys.exit("outcore_man.py: `outcore --help` lists no commands under 'commands:'")
    summary = next(" ".join(b[1]) for b in main_blocks if b[0] == "para")
    name_line = summary.split(":")[0].rstrip(".")
    out = ['.\\" -*- coding: UTF-8 -*-',
           '.\\" Generated by tools/man/outcore_man.py from the help texts of the outcore CLI: edit those.',
           f'.TH OUTCORE 1 "" "outcore {version}" "User Commands"',
           ".nh", ".ad l",
           ".SH NAME",
           "outcore \\- " + roff_escape(name_line[0].lower() + name_line[1:]),
           ".SH DESCRIPTION"]
    render(main_blocks, out)
    for command in commands:
        out.append(f'.SH "OUTCORE {command.upper()}"')
        render(parse(help_text(cli, command)), out)
    out += [".SH SEE ALSO",
            "The design notes and examples in the project's README.md and docs/; "
            "\\fBoutcore \\fIcommand\\fB \\-\\-help\\fR prints each section above."]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True, help="the built outcore executable")
    ap.add_argument("--version", required=True, help="the project version, for the page's footer")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    page = man_page(args.cli, args.version)
    tmp = args.output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp, args.output)


if __name__ == "__main__":
    main()
