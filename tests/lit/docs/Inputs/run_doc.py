"""Runs a walk-through in the docs as a reader would, and checks that what
it shows is what happens:

    python run_doc.py DOC.md WORKDIR REPO

In WORKDIR (with REPO's examples/ linked in), in the order the document
gives them:

- a ```python block whose first line is `# NAME.py...` is written to NAME.py
  and run; one without a name is run as it stands, and a line ending in
  `# VALUE` must print VALUE (the repr of its expression);
- a plain block whose first line is `# NAME.lru...` is written to NAME.lru;
- a ```sh block's lines are commands, run one by one; so are the `$ `
  lines of a plain block, each followed by what it prints;
- any other plain block is what the command or program before it prints.

What a command prints must hold the lines shown, in order, up to the
numbers in them (times, losses, accuracies, counts: the machine's and the
run's), " (best so far)" and "thread(s)"; a command that fails, a program
that raises, or a line not printed fails the check. Exit 0 when every
block did what the document says.
"""
import os
import re
import subprocess
import sys

NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def normalized(line):
    line = NUMBER.sub("N", line.replace(" (best so far)", ""))
    line = re.sub(r"\bthreads\b", "thread", line)
    return " ".join(line.split())


def blocks(text):
    """(language, lines) of every fenced block, in order."""
    found = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            language = lines[i][3:].strip()
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            found.append((language, lines[i + 1 : j]))
            i = j
        i += 1
    return found


class Walk:
    def __init__(self, workdir):
        self.workdir = workdir
        self.output = None  # what the last command or program printed
        self.shown = None  # the command, for messages
        self.failures = []

    def run(self, command, shell=True):
        # One pipe for both, so that their lines keep their order.
        result = subprocess.run(command, shell=shell, cwd=self.workdir,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True,
                                executable="/bin/bash" if shell else None)
        printed = result.stdout
        if result.returncode != 0:
            self.failures.append(f"`{command}` exited {result.returncode}:\n{printed}")
        self.output, self.shown = printed, command
        return printed

    def expect(self, lines, output=None, command=None):
        """The lines shown must be printed, in order, up to numbers."""
        output = self.output if output is None else output
        command = self.shown if command is None else command
        if output is None:
            self.failures.append(f"output shown with no command before it: {lines[0]}")
            return
        printed = [normalized(line) for line in output.splitlines()]
        at = 0
        for line in lines:
            want = normalized(line)
            if not want:
                continue
            while at < len(printed) and printed[at] != want:
                at += 1
            if at == len(printed):
                self.failures.append(
                    f"`{command}` did not print (numbers aside):\n  {line}\n"
                    f"it printed:\n{output}")
                return
            at += 1

    def python(self, lines):
        name = re.match(r"#\s*(\S+\.py)", lines[0]) if lines else None
        if name:
            with open(os.path.join(self.workdir, name.group(1)), "w") as f:
                f.write("\n".join(lines) + "\n")
            self.run([sys.executable, name.group(1)], shell=False)
            return
        # A snippet: each expression with a `# VALUE` comment prints its repr.
        program = []
        for line in lines:
            code, _, value = line.partition("#")
            if value.strip() and code.strip():
                program.append(f"print(repr({code.strip()}))")
                program.append(f"assert repr({code.strip()}) == {value.strip()!r}, "
                               f"repr({code.strip()})")
            else:
                program.append(line)
        self.run([sys.executable, "-c", "\n".join(program)], shell=False)

    def plain(self, lines):
        name = re.match(r"#\s*(\S+\.lru)", lines[0]) if lines else None
        if name:
            with open(os.path.join(self.workdir, name.group(1)), "w") as f:
                f.write("\n".join(lines) + "\n")
            return
        if lines and lines[0].startswith("$ "):
            command, shown = None, []
            for line in lines + ["$ "]:
                if line.startswith("$ "):
                    if command is not None:
                        self.expect(shown, self.run(command), command)
                    command, shown = line[2:].strip(), []
                else:
                    shown.append(line)
            return
        self.expect(lines)

    def sh(self, lines):
        for line in lines:
            if line.strip() and not line.lstrip().startswith("#"):
                self.run(line)


def main():
    doc, workdir, repo = sys.argv[1:4]
    os.makedirs(workdir, exist_ok=True)
    examples = os.path.join(workdir, "examples")
    if not os.path.exists(examples):
        os.symlink(os.path.join(repo, "examples"), examples)
    walk = Walk(workdir)
    with open(doc) as f:
        found = blocks(f.read())
    for language, lines in found:
        {"python": walk.python, "sh": walk.sh, "": walk.plain}[language](lines)
        if walk.failures:
            break
    if walk.failures:
        sys.exit(f"{doc}: " + "\n".join(walk.failures))
    print(f"{doc}: all {len(found)} blocks did what it shows")


main()
